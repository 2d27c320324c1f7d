package io.tokenbucket.store;

import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The adaptive rate, as every store must keep it: mixed into {@link BucketStoreContract}, so it runs against each
 * store there (local, Redis, Redis batched, the cluster, batched on the cluster). Real time, like the rest of the
 * contract: the rate is measured by the waits a store hands out, which count on the store's own clock (Redis TIME
 * for Redis), within {@link #slackNanos()}.
 */
public interface AdaptiveStoreContract {

    long MS = BucketStoreContract.MS;

    /** How much shorter than computed a wait may be now ({@link BucketStoreContract#slackMs()}), in nanoseconds. */
    long slackNanos();

    /** The store under test. */
    BucketStore contractStore();

    /** Another store instance on the same state as {@link #contractStore()}, or null when a store has no such. */
    BucketStore anotherInstance();

    /** The stage's result within 10 s; any failure or timeout fails the test. */
    static <T> T get(CompletionStage<T> stage) {
        try {
            return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** One token per 100 ms, burst 1, cut by half to a floor of 0.2, +0.25 a step, hold and memory as given. */
    private static Limits tenPerSecond(long holdNanos, long memoryNanos) {
        return Limits.of(Limit.of(1, 10, 1000 * MS))
                .withAdaptive(Adaptive.of(200_000, 500_000, 250_000, holdNanos, memoryNanos));
    }

    private Outcome reserve(String key, Limits limits, long maxWaitNanos) {
        return get(contractStore().reserve(key, limits, 1, maxWaitNanos));
    }

    @Test
    default void aThrottledSignalHalvesTheAdmittedRateAndEmptiesTheBucket() {
        Limits ten = tenPerSecond(TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1));
        assertThat(reserve("cut", ten, 0).granted()).isTrue();
        Outcome cut = get(contractStore().throttle("cut", ten));
        assertThat(cut.cut()).isTrue();
        assertThat(cut.factorPpm()).isEqualTo(500_000);
        // no token at once after a signal; then one per 200 ms instead of 100
        assertThat(reserve("cut", ten, 0).granted()).isFalse();
        long first = reserve("cut", ten, BucketMath.NO_LIMIT).waitTicks();
        long second = reserve("cut", ten, BucketMath.NO_LIMIT).waitTicks();
        assertThat(first).isBetween(200 * MS - slackNanos(), 200 * MS);
        assertThat(second).isBetween(400 * MS - slackNanos(), 400 * MS);
        assertThat(get(contractStore().rate("cut", ten)).factorPpm()).isEqualTo(500_000);
    }

    @Test
    default void concurrentReservationsAfterACutAreBookedAtTheCutRate() throws Exception {
        Limits ten = tenPerSecond(TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1));
        get(contractStore().throttle("many", ten));
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
        try {
            java.util.List<java.util.concurrent.Future<Outcome>> all = new java.util.ArrayList<>();
            for (int i = 0; i < 20; i++) {
                all.add(pool.submit(() -> reserve("many", ten, BucketMath.NO_LIMIT)));
            }
            for (var f : all) {
                assertThat(f.get(10, TimeUnit.SECONDS).granted()).isTrue();
            }
        } finally {
            pool.shutdownNow();
        }
        // the emptied bucket (200 ms) and 20 tokens of 200 ms booked: the next token 4.2 s after the cut
        long next = get(contractStore().peek("many", ten, 1)).waitTicks();
        assertThat(next).isBetween(4200 * MS - 2 * slackNanos(), 4200 * MS);
    }

    @Test
    default void signalsWithinTheHoldCutOnce() {
        Limits ten = tenPerSecond(TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1));
        assertThat(get(contractStore().throttle("hold", ten)).cut()).isTrue();
        for (int i = 0; i < 5; i++) {
            Outcome ignored = get(contractStore().throttle("hold", ten));
            assertThat(ignored.cut()).isFalse();
            assertThat(ignored.factorPpm()).isEqualTo(500_000);
        }
    }

    @Test
    default void aStormOfSignalsInFlightAtOnceCutsOnce() {
        Limits ten = tenPerSecond(TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1));
        // 1,000 replies of one overload, all sent before any answer is awaited (on Redis: batched together)
        List<CompletionStage<Outcome>> storm = new java.util.ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            storm.add(contractStore().throttle("storm", ten));
        }
        int cuts = 0;
        for (CompletionStage<Outcome> signal : storm) {
            Outcome a = get(signal);
            cuts += a.cut() ? 1 : 0;
            assertThat(a.factorPpm()).isEqualTo(500_000);
        }
        assertThat(cuts).isEqualTo(1);
        assertThat(get(contractStore().rate("storm", ten)).factorPpm()).isEqualTo(500_000);
    }

    @Test
    default void theFloorHoldsAndItsRateIsTheFloorsShare() {
        Limits ten = tenPerSecond(0, TimeUnit.HOURS.toNanos(1));
        for (int i = 0; i < 6; i++) {
            assertThat(get(contractStore().throttle("floor", ten)).cut()).isTrue();
        }
        assertThat(get(contractStore().rate("floor", ten)).factorPpm()).isEqualTo(200_000);
        // 2 per second at the floor: the bucket emptied, a token per 500 ms
        long first = reserve("floor", ten, BucketMath.NO_LIMIT).waitTicks();
        long second = reserve("floor", ten, BucketMath.NO_LIMIT).waitTicks();
        assertThat(first).isBetween(500 * MS - slackNanos(), 500 * MS);
        assertThat(second).isBetween(1000 * MS - slackNanos(), 1000 * MS);
    }

    @Test
    default void grantedTokensRaiseTheRateBackToTheCeilingAndNoHigher() {
        // a step per refill amount (4) at the current rate (2 tokens at 0.5, 4 from 0.9); the cut came at the
        // ceiling: one step all the way back to 0.9 of it; from there a quarter of 0.25 of the current rate
        Limits slow = Limits.of(Limit.of(100, 4, TimeUnit.HOURS.toNanos(1)))
                .withAdaptive(Adaptive.of(100_000, 500_000, 250_000, 0, TimeUnit.HOURS.toNanos(1)));
        get(contractStore().throttle("up", slow));
        assertThat(get(contractStore().reserve("up", slow, 1, BucketMath.NO_LIMIT)).granted()).isTrue();
        assertThat(get(contractStore().rate("up", slow)).factorPpm()).isEqualTo(500_000);
        get(contractStore().reserve("up", slow, 1, BucketMath.NO_LIMIT));
        assertThat(get(contractStore().rate("up", slow)).factorPpm()).isEqualTo(900_000);
        // 3 tokens: credit, no step yet
        get(contractStore().reserve("up", slow, 3, BucketMath.NO_LIMIT));
        assertThat(get(contractStore().rate("up", slow)).factorPpm()).isEqualTo(900_000);
        get(contractStore().reserve("up", slow, 1, BucketMath.NO_LIMIT));
        assertThat(get(contractStore().rate("up", slow)).factorPpm()).isEqualTo(956_250);
        // the next step would pass the ceiling: the ceiling
        get(contractStore().reserve("up", slow, 5, BucketMath.NO_LIMIT));
        assertThat(get(contractStore().rate("up", slow)).factorPpm()).isEqualTo(Adaptive.PPM);
        get(contractStore().reserve("up", slow, 5, BucketMath.NO_LIMIT));
        assertThat(get(contractStore().rate("up", slow)).factorPpm()).isEqualTo(Adaptive.PPM);
    }

    @Test
    default void aCutAfterMoreThanFourTokensIsMeasuredOnTheTokensTheStoreCountedSinceTheLastCut() {
        // 100 an hour (36 s a token, a step per 50 tokens at 0.5), no hold: the tokens granted since a cut, kept in
        // the store's rate state, are far more than the configured rate over the milliseconds the test takes, so
        // the measured cut takes the factor (0.5) as the lower: 0.9 of it. Four tokens are the cut as before: from
        // below 0.95 of the remembered ceiling one decrease deeper, 0.5 × 0.5 × 0.5
        Limits hourly = Limits.of(Limit.of(100, 100, TimeUnit.HOURS.toNanos(1)))
                .withAdaptive(Adaptive.of(100_000, 500_000, 250_000, 0, TimeUnit.HOURS.toNanos(1)));
        for (int tokens : new int[] {5, 4}) {
            String key = "measured" + tokens;
            assertThat(get(contractStore().throttle(key, hourly)).factorPpm()).isEqualTo(500_000);
            for (int i = 0; i < tokens; i++) {
                assertThat(get(contractStore().reserve(key, hourly, 1, BucketMath.NO_LIMIT)).granted()).isTrue();
            }
            assertThat(get(contractStore().rate(key, hourly)).factorPpm()).isEqualTo(500_000);
            Outcome cut = get(contractStore().throttle(key, hourly));
            assertThat(cut.cut()).isTrue();
            assertThat(cut.factorPpm()).as("%d tokens since the cut", tokens).isEqualTo(tokens > 4 ? 450_000 : 125_000);
        }
    }

    @Test
    default void aRefusalEarnsNothing() {
        Limits slow = Limits.of(Limit.of(2, 2, TimeUnit.HOURS.toNanos(1)))
                .withAdaptive(Adaptive.of(100_000, 500_000, 250_000, 0, TimeUnit.HOURS.toNanos(1)));
        get(contractStore().throttle("refused", slow));
        for (int i = 0; i < 5; i++) {
            assertThat(get(contractStore().reserve("refused", slow, 1, 0)).granted()).isFalse();
        }
        assertThat(get(contractStore().rate("refused", slow)).factorPpm()).isEqualTo(500_000);
    }

    @Test
    default void anIdleKeyForgetsItsCutOnceFullAndPastTheMemory() throws InterruptedException {
        Limits ten = tenPerSecond(0, 0);
        get(contractStore().throttle("idle", ten));
        assertThat(get(contractStore().rate("idle", ten)).factorPpm()).isEqualTo(500_000);
        // full again 200 ms after the cut: then back at the ceiling, as no state at all
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (get(contractStore().rate("idle", ten)).factorPpm() != Adaptive.PPM) {
            assertThat(System.nanoTime() - deadline).as("back at the ceiling within 5 s").isNegative();
            Thread.onSpinWait();
        }
        long mark = System.nanoTime(); // the wait above is no slack for the two reservations below
        assertThat(reserve("idle", ten, 0).granted()).isTrue();
        assertThat(reserve("idle", ten, BucketMath.NO_LIMIT).waitTicks())
                .isBetween(100 * MS - BucketStoreContract.slackMsSince(mark) * MS, 100 * MS);
    }

    /**
     * A slow start from 0.125 of 4 an hour (burst 100: no waits), cut to 0.7 after it, +0.25 a step, hold and memory
     * an hour: a step per ceil(4 × f) tokens, 1 at 0.125 and 0.25, 2 at 0.5; while starting, a doubling per two
     * steps' worth (AdaptiveMath.START_STEPS), ceil(2 × 4 × f): 1 token at 0.125, 2 at 0.25, 4 at 0.5.
     */
    private static Limits slowStart() {
        return Limits.of(Limit.of(100, 4, TimeUnit.HOURS.toNanos(1))).withAdaptive(Adaptive.of(100_000, 700_000,
                250_000, TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1)).withStart(125_000));
    }

    @Test
    default void aFreshKeyStartsAtTheStartDoublesPerTwoStepsAndItsFirstSignalHalves() {
        Limits slow = slowStart();
        assertThat(Rate.of(get(contractStore().rate("start", slow)))).isEqualTo(new Rate(false, 125_000, true));
        long[] factors = new long[9];
        for (int i = 0; i < factors.length; i++) {
            assertThat(reserve("start", slow, 0).granted()).isTrue();
            factors[i] = get(contractStore().rate("start", slow)).factorPpm();
        }
        assertThat(factors).containsExactly(250_000, 250_000, 500_000, 500_000, 500_000, 500_000, Adaptive.PPM,
                Adaptive.PPM, Adaptive.PPM);
        assertThat(get(contractStore().rate("start", slow)).starting()).as("at the ceiling, still starting").isTrue();
        // the first signal halves, then cuts by 0.7, and ends the start; the next, within the hold, is ignored
        assertThat(Rate.of(get(contractStore().throttle("start", slow)))).isEqualTo(new Rate(true, 350_000, false));
        assertThat(Rate.of(get(contractStore().throttle("start", slow)))).isEqualTo(new Rate(false, 350_000, false));
        // the hold has begun: tokens granted in it earn nothing, neither a doubling nor a step
        reserve("start", slow, 0);
        reserve("start", slow, 0);
        assertThat(get(contractStore().rate("start", slow)).factorPpm()).as("nothing earned in the hold")
                .isEqualTo(350_000);
    }

    @Test
    default void aSignalStillAtTheStartCutsByTheDecreaseAlone() {
        // from 0.25 (a doubling per 2 tokens), floor 0.01: no rate has passed yet, nothing to halve back to
        Limits slow = Limits.of(Limit.of(100, 4, TimeUnit.HOURS.toNanos(1))).withAdaptive(Adaptive.of(10_000, 700_000,
                250_000, TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1)).withStart(250_000));
        assertThat(reserve("at-start", slow, 0).granted()).isTrue();
        assertThat(Rate.of(get(contractStore().throttle("at-start", slow)))).isEqualTo(new Rate(true, 175_000, false));
        // a key that has doubled (two tokens at 0.25) is halved first: 0.5 / 2 × 0.7
        assertThat(reserve("doubled", slow, 0).granted()).isTrue();
        assertThat(reserve("doubled", slow, 0).granted()).isTrue();
        assertThat(Rate.of(get(contractStore().rate("doubled", slow)))).isEqualTo(new Rate(false, 500_000, true));
        assertThat(Rate.of(get(contractStore().throttle("doubled", slow)))).isEqualTo(new Rate(true, 175_000, false));
    }

    @Test
    default void aSlowStartIsSharedByEveryInstanceOnTheSameState() {
        BucketStore other = anotherInstance();
        assumeTrue(other != null, "this store keeps its state in one instance");
        try {
            Limits slow = slowStart();
            assertThat(reserve("shared-start", slow, 0).granted()).isTrue();
            assertThat(Rate.of(get(other.rate("shared-start", slow)))).isEqualTo(new Rate(false, 250_000, true));
            // the credit is shared: one token there and one here make the next doubling's two tokens
            assertThat(get(other.reserve("shared-start", slow, 1, 0)).granted()).isTrue();
            assertThat(Rate.of(get(contractStore().rate("shared-start", slow)))).isEqualTo(new Rate(false, 250_000,
                    true));
            assertThat(reserve("shared-start", slow, 0).granted()).isTrue();
            assertThat(Rate.of(get(other.rate("shared-start", slow)))).isEqualTo(new Rate(false, 500_000, true));
            assertThat(Rate.of(get(other.throttle("shared-start", slow)))).isEqualTo(new Rate(true, 175_000, false));
            assertThat(get(contractStore().throttle("shared-start", slow)).cut()).as("the hold is shared too")
                    .isFalse();
        } finally {
            other.close();
        }
    }

    @Test
    default void aThrottledSignalOnFixedLimitsIsRefusedNamingTheOption() {
        Limits fixed = Limits.of(Limit.of(1, 10, 1000 * MS));
        assertThatThrownBy(() -> contractStore().throttle("fixed", fixed))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("adaptive=true");
        assertThat(get(contractStore().rate("fixed", fixed)).factorPpm()).isEqualTo(Adaptive.PPM);
    }

    @Test
    default void anAllOfReservationChargesAnAdaptiveKeyAtItsCutRate() {
        Limits ten = tenPerSecond(TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1));
        // one hash tag, so that a cluster's one script call can charge both keys
        get(contractStore().throttle("{aimd}proxy", ten));
        Outcome c = get(Reservations.reserveAll(contractStore(), List.of("{aimd}proxy"), List.of(ten),
                List.of("{aimd}host"),
                List.of(ten), 1, BucketMath.NO_LIMIT));
        assertThat(c.granted()).isTrue();
        // the cut emptied "{aimd}proxy" at 5 per second: its token 200 ms on, and charged there at 200 ms a token
        assertThat(c.waitTicks()).isBetween(200 * MS - slackNanos(), 200 * MS);
        // so the proxy owes 400 ms: its next token waits 400 ms (at the configured rate it would owe 300)
        long next = reserve("{aimd}proxy", ten, BucketMath.NO_LIMIT).waitTicks();
        assertThat(next).isBetween(400 * MS - slackNanos(), 400 * MS);
        assertThat(get(contractStore().rate("{aimd}proxy", ten)).factorPpm()).isEqualTo(500_000);
        assertThat(get(contractStore().rate("{aimd}host", ten)).factorPpm()).isEqualTo(Adaptive.PPM);
        // the host, at its configured rate, was charged one token of 100 ms at the release: 300 ms owed
        assertThat(get(contractStore().peek("{aimd}host", ten, 1)).waitTicks())
                .isBetween(300 * MS - 2 * slackNanos(), 300 * MS);
    }

    @Test
    default void anAllOfReservationEarnsIncreaseCreditAsASingleOneWould() {
        // as grantedTokensRaiseTheRateBackToTheCeilingAndNoHigher: a step per 2 tokens at 0.5, per 4 at 0.9
        Limits slow = Limits.of(Limit.of(100, 4, TimeUnit.HOURS.toNanos(1)))
                .withAdaptive(Adaptive.of(100_000, 500_000, 250_000, 0, TimeUnit.HOURS.toNanos(1)));
        Limits fixed = Limits.of(Limit.of(100, 4, TimeUnit.HOURS.toNanos(1)));
        get(contractStore().throttle("{aimd}up", slow));
        get(Reservations.reserveAll(contractStore(), List.of("{aimd}fixed"), List.of(fixed), List.of("{aimd}up"),
                List.of(slow), 1,
                BucketMath.NO_LIMIT));
        assertThat(get(contractStore().rate("{aimd}up", slow)).factorPpm()).isEqualTo(500_000);
        get(Reservations.reserveAll(contractStore(), List.of("{aimd}up"), List.of(slow), List.of("{aimd}fixed"),
                List.of(fixed), 1,
                BucketMath.NO_LIMIT));
        assertThat(get(contractStore().rate("{aimd}up", slow)).factorPpm()).isEqualTo(900_000);
        get(Reservations.reserveAll(contractStore(), List.of("{aimd}up"), List.of(slow), List.of(), List.of(), 4,
                BucketMath.NO_LIMIT));
        assertThat(get(contractStore().rate("{aimd}up", slow)).factorPpm()).isEqualTo(956_250);
        assertThat(get(contractStore().rate("{aimd}fixed", fixed)).factorPpm()).isEqualTo(Adaptive.PPM);
    }

    @Test
    default void aCandidateGroupsAdaptivePairKeyIsChargedAtItsCutRate() {
        Limits ten = tenPerSecond(TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1));
        Limits proxy = Limits.of(Limit.of(5, 10, 1000 * MS)); // 100 ms a token, burst 5
        List<List<Limits>> pairLimits = List.of(List.of(ten), List.of(ten));
        // p1's pair was cut (its next token 200 ms away), p2's is fresh: p2's group is chosen, p1's left alone
        get(contractStore().throttle("{aimd}p1|h", ten));
        Outcome c = get(Reservations.reserveAll(contractStore(), List.of("{aimd}p1", "{aimd}p2"), List.of(proxy, proxy),
                List.of(List.of("{aimd}p1|h"), List.of("{aimd}p2|h")), pairLimits, List.of("{aimd}h"),
                List.of(proxy), 1, BucketMath.NO_LIMIT));
        assertThat(c.chosen()).isEqualTo(1);
        assertThat(c.waitTicks()).isZero();
        assertThat(get(contractStore().peek("{aimd}p2|h", ten, 1)).remaining()).as("p2's pair charged").isZero();
        assertThat(get(contractStore().peek("{aimd}p1", proxy, 1)).remaining()).as("p1 untouched").isEqualTo(5);
        assertThat(get(contractStore().peek("{aimd}p1|h", ten, 1)).waitTicks()).as("p1's pair untouched")
                .isBetween(200 * MS - slackNanos(), 200 * MS);
        // p1 alone with its cut pair: it waits for the pair's token, and the pair is charged at 200 ms a token
        Outcome p1 = get(Reservations.reserveAll(contractStore(), List.of("{aimd}p1"), List.of(proxy),
                List.of(List.of("{aimd}p1|h")), List.of(List.of(ten)), List.of("{aimd}h"), List.of(proxy), 1,
                BucketMath.NO_LIMIT));
        assertThat(p1.waitTicks()).isBetween(200 * MS - slackNanos(), 200 * MS);
        assertThat(get(contractStore().peek("{aimd}p1|h", ten, 1)).waitTicks()).as("400 ms owed, not 300")
                .isBetween(400 * MS - 2 * slackNanos(), 400 * MS);
        assertThat(get(contractStore().peek("{aimd}h", proxy, 1)).remaining()).as("the host charged twice, once at"
                + " the release 200 ms ahead").isBetween(2L, 3L);
    }

    @Test
    default void theRateIsSharedByEveryInstanceOnTheSameState() {
        BucketStore other = anotherInstance();
        assumeTrue(other != null, "this store keeps its state in one instance");
        try {
            Limits ten = tenPerSecond(TimeUnit.HOURS.toNanos(1), TimeUnit.HOURS.toNanos(1));
            get(contractStore().throttle("shared", ten));
            assertThat(get(other.rate("shared", ten)).factorPpm()).isEqualTo(500_000);
            assertThat(get(other.throttle("shared", ten)).cut()).as("the hold is shared too").isFalse();
            long wait = get(other.reserve("shared", ten, 1, BucketMath.NO_LIMIT)).waitTicks();
            assertThat(wait).isBetween(200 * MS - slackNanos(), 200 * MS);
        } finally {
            other.close();
        }
    }
}
