package io.tokenbucket.math;

import java.util.List;
import java.util.Random;

import io.tokenbucket.testsupport.random.TestSeed;
import org.junit.jupiter.api.Test;

import static io.tokenbucket.math.BucketMath.NO_LIMIT;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link AdaptiveMath#reserveAll} and {@link BucketMath#reserveAll}'s candidate groups with plain numbers: ticks are
 * milliseconds, a key's state is the array of {@code tat}s (and the rate state) each step returns.
 */
class AdaptiveMathAllOfTest {

    /** floor 0.1, cut by half, +0.25 a step, no hold, memory 60 s. */
    private static final Adaptive AIMD = Adaptive.of(100_000, 500_000, 250_000, 0, 60_000);
    /** 10 per second, burst 1 (100 ms a token), adaptive: the pair's. */
    private static final Limits PAIR = Limits.of(Limit.of(1, 10, 1000)).withAdaptive(AIMD);
    /** 1 per second, burst 1: the proxy's, fixed. */
    private static final Limits PROXY = Limits.of(Limit.of(1, 1, 1000));
    /** 10 per second, burst 5: the host's, fixed. */
    private static final Limits HOST = Limits.of(Limit.of(5, 10, 1000));

    private static final RateState HALF = new RateState(500_000, 0, -5000);

    @Test
    void anAdaptiveKeyIsDecidedAndChargedAtItsCurrentRateAndEarnsCredit() {
        // the pair at half its rate, emptied by the cut (one token of 200 ms owed); the proxy and the host fresh
        Steps.All a = Steps.reserveAll(new long[][][] {{{0}, {200}}}, new RateState[][] {{null, HALF}},
                List.of(List.of(PROXY, PAIR)), new long[][] {{0}}, new RateState[] {null}, List.of(HOST), 0, 1,
                NO_LIMIT);
        Steps.All d = a.decision();
        assertThat(d.granted()).isTrue();
        assertThat(d.waitTicks()).isEqualTo(200); // 200 owed + 200 a token - a burst of 200 (at the cut rate)
        assertThat(d.tatTicks(0)).containsExactly(1200); // the proxy, charged at the release 200
        assertThat(d.tatTicks(1)).containsExactly(400); // the pair: 200 ms a token, not 100
        assertThat(d.tatTicks(2)).containsExactly(300); // the host
        // a step per ceil(10 × 0.5) = 5 tokens: one token of credit, one counted since the cut; fixed keys keep what
        // they had (none)
        assertThat(a.rates()).containsExactly(null, new RateState(500_000, 1, -5000, false, 0, 1), null);
    }

    @Test
    void aRefusalChangesNoRateNorState() {
        long[] pair = {200};
        Steps.All a = Steps.reserveAll(new long[][][] {{{0}, pair}}, new RateState[][] {{null, HALF}},
                List.of(List.of(PROXY, PAIR)), new long[0][], new RateState[0], List.of(), 0, 1, 199);
        assertThat(a.decision().granted()).isFalse();
        assertThat(a.decision().waitTicks()).isEqualTo(200);
        assertThat(a.decision().tatTicks(1)).isSameAs(pair);
        assertThat(a.rates()[1]).isEqualTo(HALF);
    }

    @Test
    void aForgottenCutIsDecidedAtTheCeiling() {
        // full since 0 for the memory, 60 s: back at the configured rate, as AdaptiveMath.current says
        Steps.All a = Steps.reserveAll(new long[][][] {{{0}}}, new RateState[][] {{HALF}},
                List.of(List.of(PAIR)), new long[0][], new RateState[0], List.of(), 60_000, 1, NO_LIMIT);
        assertThat(a.decision().tatTicks(0)).containsExactly(60_100);
        assertThat(a.rates()[0]).isEqualTo(RateState.CEILING);
        // a millisecond before, it is still remembered: charged at half the rate
        Steps.All before = Steps.reserveAll(new long[][][] {{{0}}}, new RateState[][] {{HALF}},
                List.of(List.of(PAIR)), new long[0][], new RateState[0], List.of(), 59_999, 1, NO_LIMIT);
        assertThat(before.decision().tatTicks(0)).containsExactly(60_199);
        assertThat(before.rates()[0]).isEqualTo(new RateState(500_000, 1, -5000, false, 0, 1));
    }

    /**
     * One adaptive key of one limit, alone in an all-of reservation, through random cuts and reservations at random
     * instants: the same decision and the same rate state as {@link AdaptiveMath#reserve} on the same bucket, every
     * step. (With several limits an all-of reservation charges each limit at the common release, as
     * BucketMathAllOfTest's everyLimitOfEveryKeyCounts shows, so the states differ there by design.) Without and
     * with a slow start, whose short memory makes the key start again now and then.
     */
    @Test
    void withOneAdaptiveKeyItIsTheOrdinaryAdaptiveReservation() {
        oneAdaptiveKeyAsTheOrdinaryReservation(AIMD);
        oneAdaptiveKeyAsTheOrdinaryReservation(Adaptive.of(100_000, 500_000, 250_000, 0, 2000).withStart(125_000));
    }

    private static void oneAdaptiveKeyAsTheOrdinaryReservation(Adaptive adaptive) {
        Limits limits = Limits.of(Limit.of(3, 4, 1000)).withAdaptive(adaptive);
        Random random = TestSeed.random("AdaptiveMathAllOfTest.oneAdaptiveKeyAsTheOrdinaryReservation", 1402);
        long[] tats = {0};
        RateState rate = null;
        long now = 0;
        int earned = 0;
        int doubled = 0;
        for (int i = 0; i < 3000; i++) {
            now += random.nextInt(400);
            if (random.nextInt(10) == 0) {
                Steps.One t = Steps.throttle(tats, rate, now, limits);
                tats = t.decision().tatTicks();
                rate = t.rate();
                continue;
            }
            long maxWait = random.nextBoolean() ? NO_LIMIT : random.nextInt(3000);
            Steps.One one = Steps.reserve(tats, rate, now, 1, limits, maxWait);
            Steps.All all = Steps.reserveAll(new long[][][] {{tats}}, new RateState[][] {{rate}},
                    List.of(List.of(limits)), new long[0][], new RateState[0], List.of(), now, 1, maxWait);
            assertThat(all.decision().granted()).isEqualTo(one.decision().granted());
            assertThat(all.decision().waitTicks()).isEqualTo(one.decision().waitTicks());
            assertThat(all.decision().remaining()).isEqualTo(one.decision().remaining());
            assertThat(all.decision().tatTicks(0)).containsExactly(one.decision().tatTicks());
            assertThat(all.rates()[0]).isEqualTo(one.rate());
            RateState before = AdaptiveMath.current(rate, tats, now, adaptive);
            earned += one.rate().factorPpm() > before.factorPpm() ? 1 : 0;
            doubled += before.starting() && one.rate().factorPpm() == Math.min(Adaptive.PPM, 2 * before.factorPpm())
                    ? 1 : 0;
            tats = one.decision().tatTicks();
            rate = one.rate();
        }
        assertThat(earned).as("increases seen").isPositive();
        assertThat(doubled > 0).as("doublings seen").isEqualTo(adaptive.startPpm() < Adaptive.PPM);
    }

    @Test
    void theGroupChosenIsTheOneWhoseKeysAndTheSharedKeysAllowSoonest() {
        Limits fixedPair = Limits.of(Limit.of(5, 10, 1000));
        // p1 is free but its pair owes 1200 (its wait 800); p2 owes 500 (its wait 500) and its pair is free
        long[][][] groups = {{{0}, {1200}}, {{500}, {0}}};
        List<List<Limits>> limits = List.of(List.of(PROXY, fixedPair), List.of(PROXY, fixedPair));
        Steps.All d = Steps.reserveAll(groups, limits, new long[][] {{400}}, List.of(HOST), 0, 1, NO_LIMIT);
        assertThat(d.chosen()).isEqualTo(1);
        assertThat(d.waitTicks()).isEqualTo(500);
        assertThat(d.tatTicks(0)).containsExactly(1500); // p2, from its own debt
        assertThat(d.tatTicks(1)).containsExactly(600); // p2's pair, at the release
        assertThat(d.tatTicks(2)).containsExactly(600); // the host, at the release
        assertThat(d.remaining()).isZero();
        // refused: no key charged, the states given back as they were
        Steps.All refused = Steps.reserveAll(groups, limits, new long[][] {{400}}, List.of(HOST), 0, 1, 499);
        assertThat(refused.granted()).isFalse();
        assertThat(refused.chosen()).isEqualTo(1);
        assertThat(refused.tatTicks(0)).isSameAs(groups[1][0]);
        assertThat(refused.tatTicks(1)).isSameAs(groups[1][1]);
        // of equal waits, the group whose fewest tokens are most: with proxies of 5 tokens, p1's pair has 2, p2's 4
        List<List<Limits>> wide = List.of(List.of(HOST, fixedPair), List.of(HOST, fixedPair));
        Steps.All tie = Steps.reserveAll(new long[][][] {{{0}, {300}}, {{0}, {100}}}, wide,
                new long[0][], List.of(), 0, 1, NO_LIMIT);
        assertThat(tie.chosen()).isEqualTo(1);
        assertThat(tie.remaining()).as("the fewest of the group's keys after: the pair's 3").isEqualTo(3);
        // a group's tokens are its fewest: with proxies of one token, both groups have 1, and the first is chosen
        assertThat(Steps.reserveAll(new long[][][] {{{0}, {300}}, {{0}, {100}}}, limits, new long[0][],
                List.of(), 0, 1, NO_LIMIT).chosen()).isZero();
    }

    @Test
    void groupsOfOneKeyAreTheCandidatesForm() {
        long[][] proxies = {{3000}, {1500}, {2000}};
        List<Limits> limits = List.of(PROXY, PROXY, PROXY);
        Steps.All candidates = Steps.reserveAll(proxies, limits, new long[][] {{400}}, List.of(HOST), 0, 1,
                NO_LIMIT);
        Steps.All groups = Steps.reserveAll(new long[][][] {{proxies[0]}, {proxies[1]}, {proxies[2]}},
                List.of(List.of(PROXY), List.of(PROXY), List.of(PROXY)), new long[][] {{400}}, List.of(HOST), 0, 1,
                NO_LIMIT);
        assertThat(groups).isEqualTo(candidates);
    }
}
