package io.tokenbucket.math;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.tokenbucket.testsupport.random.TestSeed;
import org.junit.jupiter.api.Test;

import static io.tokenbucket.math.BucketMath.NO_LIMIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The adaptive rate with plain numbers: ticks are milliseconds, the clock is the {@code now} each step is given,
 * a bucket is the states and the rate state each step returns.
 */
class AdaptiveMathTest {

    private static final long PPM = Adaptive.PPM;
    /** floor 0.1, cut by half, +0.1 a step, hold 1000 ms, memory 60 s. */
    private static final Adaptive AIMD = Adaptive.of(100_000, 500_000, 100_000, 1000, 60_000);
    /** 10 per second, burst 1: interval 100 ms. */
    private static final Limits TEN = Limits.of(Limit.of(1, 10, 1000)).withAdaptive(AIMD);

    /** floor 0.1, cut to 0.7, +0.1 a step, hold 1000 ms, memory 60 s, starting at 0.125. */
    private static final Adaptive SLOW = Adaptive.of(100_000, 700_000, 100_000, 1000, 60_000).withStart(125_000);
    /** 10 per second, burst 1, with a slow start: 800 ms a token at 0.125, a step per ceil(10 × f) tokens. */
    private static final Limits SLOW_TEN = Limits.of(Limit.of(1, 10, 1000)).withAdaptive(SLOW);

    /** A bucket moved through the steps by hand. */
    private static final class Bucket {
        final Limits limits;
        long[] tats = {Long.MIN_VALUE / 2};
        RateState rate;

        Bucket() {
            this(TEN);
        }

        Bucket(Limits limits) {
            this.limits = limits;
        }

        Steps.One apply(Steps.One a) {
            tats = a.decision().tatTicks();
            rate = a.rate();
            return a;
        }

        Steps.One reserve(long now, long maxWait) {
            return apply(Steps.reserve(tats, rate, now, 1, limits, maxWait)).decision();
        }

        Steps.One throttle(long now) {
            return apply(Steps.throttle(tats, rate, now, limits));
        }

        long factor(long now) {
            return state(now).factorPpm();
        }

        RateState state(long now) {
            return AdaptiveMath.current(rate, tats, now, limits.adaptive());
        }

        /** Tokens granted without waiting, trying every millisecond of [from, to). */
        int granted(long from, long to) {
            int n = 0;
            for (long t = from; t < to; t++) {
                if (reserve(t, 0).granted()) {
                    n++;
                }
            }
            return n;
        }
    }

    @Test
    void aCutHalvesTheRateAndEmptiesTheBucket() {
        Bucket b = new Bucket();
        assertThat(b.granted(0, 1000)).isEqualTo(10);
        Steps.One cut = b.throttle(1000);
        assertThat(cut.cut()).isTrue();
        assertThat(cut.rate().factorPpm()).isEqualTo(500_000);
        // emptied: the next token one new interval (200 ms) later, not at once
        assertThat(cut.decision().waitTicks()).isEqualTo(200);
        assertThat(b.reserve(1199, 0).granted()).isFalse();
        // 5 per second from then on (the hold's second earns nothing, the next second earns less than a step)
        assertThat(b.granted(1200, 2200)).isEqualTo(5);
    }

    @Test
    void cutsWithinTheHoldAreIgnoredSoManyRepliesInFlightCutOnce() {
        Bucket b = new Bucket();
        b.throttle(0);
        for (long t = 1; t < 1000; t += 50) {
            assertThat(b.throttle(t).cut()).isFalse();
        }
        assertThat(b.factor(999)).isEqualTo(500_000);
        assertThat(b.throttle(1000).cut()).isTrue();
        // still where the first cut put it, below 0.95 of where that came: that cut did not get below the limit,
        // so this one is taken from 0.5 × 0.5
        assertThat(b.factor(1000)).isEqualTo(125_000);
    }

    @Test
    void theFloorHolds() {
        Bucket b = new Bucket();
        for (long t = 0; t < 10_000; t += 1000) {
            b.throttle(t);
        }
        assertThat(b.factor(10_000)).isEqualTo(100_000);
        // signals that keep coming keep it there: 1 per second, the floor of 10 per second
        int granted = 0;
        for (long t = 10_000; t < 20_000; t++) {
            if (b.reserve(t, 0).granted()) {
                granted++;
            }
            if (t % 1000 == 500) {
                b.throttle(t);
            }
        }
        assertThat(granted).isBetween(9, 10);
        assertThat(b.factor(20_000)).isEqualTo(100_000);
    }

    @Test
    void aStoredRateBelowTheFloorIsDecidedAtTheFloor() {
        // written by an instance whose adaptiveFloor was lower (a rolling change of the option on one Redis)
        RateState lower = new RateState(10_000, 0, 0);
        long[] inDebt = {5000};
        assertThat(AdaptiveMath.current(lower, inDebt, 1, AIMD).factorPpm()).isEqualTo(100_000);
        // a cut from there is no rise: it stays at the floor
        Steps.One cut = Steps.throttle(inDebt, lower, 2000, TEN);
        assertThat(cut.rate().factorPpm()).isEqualTo(100_000);
        // and a reservation waits no longer than the floor's interval (1 s at 0.1 of 10/s), not 10 s at 0.01
        Steps.One d = Steps.reserve(new long[] {1000}, lower, 1000, 1, TEN, NO_LIMIT).decision();
        assertThat(d.waitTicks()).isLessThanOrEqualTo(1000);
    }

    @Test
    void successRaisesTheRateOneStepPerRefillAmountAtTheCurrentRateBackToTheCeiling() {
        Bucket b = new Bucket();
        b.throttle(0); // 0.5: 5 per second, a step per 5 tokens
        assertThat(b.granted(1000, 2000)).isEqualTo(5);
        // back to 0.9 of where the cut came (the ceiling) in one step
        assertThat(b.factor(2000)).isEqualTo(900_000);
        // then each step of ceil(10 × f) tokens: a quarter of +0.1 of the rate (0.9225, ...) up to where the cut
        // came, at least a quarter of the way past it beyond, until the ceiling, where no state is left
        List<Long> factors = new ArrayList<>(List.of(900_000L));
        for (long t = 2000; t < 30_000; t++) {
            if (b.reserve(t, 0).granted() && b.rate.factorPpm() != factors.get(factors.size() - 1)) {
                factors.add(b.rate.factorPpm());
            }
        }
        assertThat(factors).startsWith(900_000L, 922_500L).endsWith(PPM);
        assertThat(b.rate).isSameAs(RateState.CEILING);
        assertThat(b.granted(30_000, 31_000)).isEqualTo(10);
    }

    @Test
    void nothingIsEarnedWhileTheCutHoldsNorByRefusals() {
        Bucket b = new Bucket();
        b.throttle(0);
        b.granted(0, 1000);
        assertThat(b.factor(1000)).isEqualTo(500_000);
        assertThat(b.rate.credit()).isZero();
        b.reserve(1000, 0);
        long credit = b.rate.credit();
        assertThat(b.reserve(1001, 0).granted()).isFalse();
        assertThat(b.rate.credit()).isEqualTo(credit);
    }

    @Test
    void anIdleBucketForgetsItsCutOnceFullForTheMemoryNotBefore() {
        Bucket b = new Bucket();
        b.throttle(0); // emptied at 0.5: full again at 200
        assertThat(b.tats).containsExactly(200);
        assertThat(b.factor(60_199)).isEqualTo(500_000);
        assertThat(b.factor(60_200)).isEqualTo(PPM);
        assertThat(b.state(60_200)).isSameAs(RateState.CEILING);
        // while in debt it keeps the factor however long ago the cut was
        Bucket busy = new Bucket();
        busy.throttle(0);
        busy.reserve(0, NO_LIMIT);
        for (int i = 0; i < 400; i++) {
            busy.reserve(0, NO_LIMIT); // booked 80 s ahead at 200 ms a token
        }
        assertThat(busy.factor(70_000)).isEqualTo(500_000);
    }

    @Test
    void aBusyKeyBrieflyFullKeepsWhatItLearned() {
        // +1 ppm a step, so that the rate stays below the ceiling for the whole test (its climb back to 0.9 of
        // where the cut came is fast, from there on 1 ppm a step)
        Limits ten = Limits.of(Limit.of(1, 10, 1000)).withAdaptive(Adaptive.of(100_000, 500_000, 1, 1000, 60_000));
        Bucket b = new Bucket(ten);
        b.throttle(0);
        for (long t = 1000; t <= 70_000; t += 1000) {
            assertThat(b.reserve(t, 0).granted()).isTrue();
        }
        // 70 tokens after the hold; full since shortly after the last and the cut 70 s ago: remembered (the cut's
        // age does not matter, the idle time does)
        assertThat(b.tats).hasSize(1);
        long full = b.tats[0];
        assertThat(full).isBetween(70_001L, 70_200L);
        RateState learned = b.state(full + 100);
        assertThat(learned.factorPpm()).isBetween(900_000L, 900_010L);
        assertThat(learned.maxPpm()).isEqualTo(PPM);
        assertThat(b.factor(full + 59_999)).isEqualTo(learned.factorPpm());
        assertThat(b.factor(full + 60_000)).isEqualTo(PPM);
    }

    @Test
    void aFreshKeyStartsAtTheStartAndEveryTwoStepsDoubleItUpToTheCeiling() {
        Bucket b = new Bucket(SLOW_TEN);
        assertThat(b.state(0)).isEqualTo(new RateState(125_000, 0, 0, true)).isEqualTo(SLOW.fresh());
        // a step per ceil(10 × 0.125) = 2 tokens, a doubling per two steps' worth (AdaptiveMath.START_STEPS, rounded
        // up once): ceil(2 × 10 × 0.125) = 3 tokens, then 5 at 0.25, 10 at 0.5; none at the ceiling
        long[] factors = new long[20];
        for (int i = 0; i < factors.length; i++) {
            assertThat(b.reserve(0, NO_LIMIT).granted()).isTrue();
            factors[i] = b.rate.factorPpm();
        }
        assertThat(factors).containsExactly(125_000, 125_000, 250_000, 250_000, 250_000, 250_000, 250_000, 500_000,
                500_000, 500_000, 500_000, 500_000, 500_000, 500_000, 500_000, 500_000, 500_000, PPM, PPM, PPM);
        assertThat(AdaptiveMath.START_STEPS).isEqualTo(2);
        // at the ceiling still starting: stored (no state would start it again at 0.125)
        assertThat(b.rate).isEqualTo(new RateState(PPM, 0, 0, true));
        assertThat(SLOW.isFresh(b.rate)).isFalse();
        // the tokens were booked at the rate of their grant: 800 ms three times, 400 ms five times, 200 ms ten times,
        // then 100
        assertThat(b.tats).containsExactly(3 * 800 + 5 * 400 + 10 * 200 + 2 * 100);
    }

    @Test
    void anIncreaseIsAShareOfTheCurrentRateSoTwoCeilingsClimbAtOnePaceFromTheRateTheyFound() {
        // a rate of 4 per second found below a ceiling of 8 (factor 0.5) and below one of 20 (factor 0.2), +0.1 a
        // step: both climb to 4.4 per second, 0.4 a step, not 0.8 and 2
        Adaptive aimd = Adaptive.of(10_000, 900_000, 100_000, 0, 60_000);
        RateState underEight = AdaptiveMath.earn(new RateState(500_000, 0, 0), 4, 8, 1, aimd);
        RateState underTwenty = AdaptiveMath.earn(new RateState(200_000, 0, 0), 4, 20, 1, aimd);
        assertThat(underEight.factorPpm()).isEqualTo(550_000); // 4.4 of 8
        assertThat(underTwenty.factorPpm()).isEqualTo(220_000); // 4.4 of 20
        // two steps in one grant: both from the factor the grant found, not compounded
        assertThat(AdaptiveMath.earn(new RateState(500_000, 0, 0), 8, 8, 1, aimd).factorPpm()).isEqualTo(600_000);
        // the smallest step is 1 ppm, so a factor of a few ppm still rises
        assertThat(AdaptiveMath.increaseStep(5, aimd)).isEqualTo(1);
        assertThat(AdaptiveMath.increaseStep(500_000, aimd)).isEqualTo(50_000);
    }

    @Test
    void theFirstCutWhileStartingHalvesEndsTheStartAndHolds() {
        Bucket b = new Bucket(SLOW_TEN);
        for (int i = 0; i < 8; i++) {
            b.reserve(0, NO_LIMIT); // to 0.5, starting
        }
        assertThat(b.rate).isEqualTo(new RateState(500_000, 0, 0, true));
        Steps.One cut = b.throttle(5000);
        assertThat(cut.cut()).isTrue();
        // halved (back to the last rate that drew no signal), then times the decrease 0.7; remembered: 0.67 of
        // where the signal came, so that the climb aims at 0.9 of that, 1.21 times the halved factor
        assertThat(cut.rate()).isEqualTo(new RateState(175_000, 0, 5000, false, 335_000));
        // the hold is on: a signal within it is ignored, and nothing is earned (the token is counted)
        assertThat(b.throttle(5999).cut()).isFalse();
        b.reserve(5999, NO_LIMIT);
        assertThat(b.rate).isEqualTo(new RateState(175_000, 0, 5000, false, 335_000, 1));
        // the second cut, one token since the first (too few to measure) and below 0.95 of what the first
        // remembered: taken from 0.175 × 0.7, which it remembers, at least the floor
        assertThat(b.throttle(6000).rate()).isEqualTo(new RateState(100_000, 0, 6000, false, 122_500));
        // then no doubling: a step of ceil(10 × 0.1) = 1 token goes to 0.9 of that, 0.11025, at once
        b.reserve(7000, NO_LIMIT);
        assertThat(b.rate).isEqualTo(new RateState(110_250, 0, 6000, false, 122_500, 1));
    }

    @Test
    void aCutStillAtTheStartIsTheDecreaseAloneWithNoRateThatPassedToGoBackTo() {
        // a start at the target's limit, refused once by a bunching of requests: not halved to half the limit (as
        // SLOW_TEN, with a floor of 0.01 that neither cut meets)
        Limits slowTen = Limits.of(Limit.of(1, 10, 1000))
                .withAdaptive(Adaptive.of(10_000, 700_000, 100_000, 1000, 60_000).withStart(125_000));
        Bucket b = new Bucket(slowTen);
        b.reserve(0, NO_LIMIT);
        assertThat(b.rate).isEqualTo(new RateState(125_000, 1, 0, true));
        // 0.125 × 0.7, remembering 0.125 as any cut remembers where it came
        assertThat(b.throttle(100).rate()).isEqualTo(new RateState(87_500, 0, 100, false, 125_000));
        // one doubling later there is a rate that passed (0.125): halved back to it, then times 0.7
        Bucket doubled = new Bucket(slowTen);
        for (int i = 0; i < 3; i++) {
            doubled.reserve(0, NO_LIMIT);
        }
        assertThat(doubled.rate).isEqualTo(new RateState(250_000, 0, 0, true));
        assertThat(doubled.throttle(100).rate()).isEqualTo(new RateState(87_500, 0, 100, false, 167_500));
    }

    @Test
    void aCutAtTheCeilingWhileStartingHalvesAndTheHalvingRespectsTheFloor() {
        Bucket b = new Bucket(SLOW_TEN);
        for (int i = 0; i < 18; i++) {
            b.reserve(0, NO_LIMIT);
        }
        assertThat(b.rate).isEqualTo(new RateState(PPM, 0, 0, true));
        assertThat(b.throttle(10_000).rate()).isEqualTo(new RateState(350_000, 0, 10_000, false, 670_000));
        // starting at the floor: half of it is below, so the floor
        Adaptive atFloor = Adaptive.of(100_000, 700_000, 100_000, 1000, 60_000).withStart(100_000);
        Bucket low = new Bucket(Limits.of(Limit.of(1, 10, 1000)).withAdaptive(atFloor));
        assertThat(low.throttle(0).rate()).isEqualTo(new RateState(100_000, 0, 0, false, 100_000));
        Steps.One odd = Steps.throttle(new long[] {0}, new RateState(333_333, 0, 0, true), 0, SLOW_TEN);
        assertThat(odd.rate().factorPpm()).isEqualTo(116_666); // 166,666 × 0.7, each rounded down, as every cut
    }

    @Test
    void aFreshKeysFirstBurstGoesOutAtOnceAndEarnsDoublingsAsItGoes() {
        // capacity 10, 10 per second: a step per ceil(10 × f) tokens. A new key's bucket is full whatever the start,
        // and the tokens of its first burst earn steps like any others: 0.1 doubles after its first two tokens
        Bucket b = new Bucket(Limits.of(Limit.of(10, 10, 1000)).withAdaptive(AIMD.withStart(100_000)));
        long[] factors = new long[6];
        for (int i = 0; i < factors.length; i++) {
            assertThat(b.reserve(0, 0).granted()).as("token %d of the first burst", i + 1).isTrue();
            factors[i] = b.rate.factorPpm();
        }
        assertThat(factors).containsExactly(100_000, 200_000, 200_000, 200_000, 200_000, 400_000);
        // booked at 1 s twice and 500 ms four times: past the 2.5 s burst of capacity 10 at 0.4, so the seventh
        // waits
        assertThat(b.tats).containsExactly(4000);
        assertThat(b.reserve(0, 0).granted()).isFalse();
        // from the ceiling the same burst is 10 tokens
        Bucket ceiling = new Bucket(Limits.of(Limit.of(10, 10, 1000)).withAdaptive(AIMD));
        for (int i = 0; i < 10; i++) {
            assertThat(ceiling.reserve(0, 0).granted()).isTrue();
        }
        assertThat(ceiling.reserve(0, 0).granted()).isFalse();
    }

    @Test
    void noSignalWhileStartingIsIgnored() {
        // no hold while starting: the first signal always cuts, however soon after the key's first grant
        Bucket b = new Bucket(SLOW_TEN);
        b.reserve(0, NO_LIMIT);
        assertThat(AdaptiveMath.holding(b.rate, 0, SLOW)).isFalse();
        assertThat(b.throttle(0).cut()).isTrue();
        assertThat(b.throttle(1).cut()).isFalse();
    }

    @Test
    void anIdleKeyForgetsBackToTheStartAfterTheMemory() {
        Bucket b = new Bucket(SLOW_TEN);
        for (int i = 0; i < 8; i++) {
            b.reserve(0, NO_LIMIT);
        }
        b.throttle(10_000); // 0.175: emptied, full again one 572 ms interval later
        assertThat(b.tats).containsExactly(10_572);
        assertThat(b.state(70_571)).isEqualTo(new RateState(175_000, 0, 10_000, false, 335_000));
        assertThat(b.state(70_572)).isSameAs(SLOW.fresh());
        // a key back at the ceiling after its start is kept as long: it is not a key without state
        long[] fullSince = {1000};
        assertThat(AdaptiveMath.current(RateState.CEILING, fullSince, 60_999, SLOW)).isSameAs(RateState.CEILING);
        assertThat(AdaptiveMath.current(RateState.CEILING, fullSince, 61_000, SLOW)).isSameAs(SLOW.fresh());
        // with several limits, full since the latest of them
        assertThat(AdaptiveMath.current(RateState.CEILING, new long[] {1000, 5000}, 64_999, SLOW))
                .isSameAs(RateState.CEILING);
        assertThat(AdaptiveMath.current(RateState.CEILING, new long[] {5000, 1000}, 65_000, SLOW))
                .isSameAs(SLOW.fresh());
    }

    @Test
    void aStoredStartingStateIsReadUnderTheCurrentStartAndFloor() {
        long[] inDebt = {5000};
        // written with a lower adaptiveStart: raised to this one's start, still starting, its credit kept
        assertThat(AdaptiveMath.current(new RateState(50_000, 1, 0, true), inDebt, 1, SLOW))
                .isEqualTo(new RateState(125_000, 1, 0, true));
        // above the start: as it was
        RateState doubled = new RateState(500_000, 2, 0, true);
        assertThat(AdaptiveMath.current(doubled, inDebt, 1, SLOW)).isSameAs(doubled);
        // with the slow start turned off (start 1): a key that has seen no cut is at the ceiling, as configured
        assertThat(AdaptiveMath.current(doubled, inDebt, 1, AIMD)).isSameAs(RateState.CEILING);
        // a state past its start at the ceiling reads as the ceiling, with or without a slow start
        assertThat(AdaptiveMath.current(new RateState(PPM, 0, 7, false), inDebt, 1, AIMD)).isSameAs(RateState.CEILING);
        assertThat(AdaptiveMath.current(new RateState(PPM, 0, 7, false), inDebt, 1, SLOW)).isSameAs(RateState.CEILING);
        // a state past its start below a raised floor: at the floor, not starting again
        Adaptive higherFloor = Adaptive.of(200_000, 700_000, 100_000, 1000, 60_000).withStart(400_000);
        assertThat(AdaptiveMath.current(new RateState(150_000, 0, 3, false), inDebt, 1, higherFloor))
                .isEqualTo(new RateState(200_000, 0, 3, false));
    }

    @Test
    void withoutASlowStartAFreshKeyIsTheCeilingAsBefore() {
        assertThat(AIMD.startPpm()).isEqualTo(PPM);
        assertThat(AIMD.fresh()).isSameAs(RateState.CEILING);
        assertThat(AIMD.withStart(PPM)).isEqualTo(AIMD);
        assertThat(AdaptiveMath.current(null, new long[] {0}, 0, AIMD)).isSameAs(RateState.CEILING);
        assertThat(new Bucket().throttle(0).rate()).isEqualTo(new RateState(500_000, 0, 0, false, PPM));
    }

    /** What a run against a target with a hidden limit did: requests sent, refused (429), and when the first was. */
    private record Run(int sent, int refused, long firstRefusalAt) {
    }

    /**
     * {@code seconds} of saturating demand (a try every millisecond, no waiting) on a key of {@code limits} against a
     * target that accepts one request per {@code limitInterval} ms (burst 1) and refuses the others, each refusal
     * sent back as a signal.
     */
    private static Run againstAHiddenLimit(Limits limits, long limitInterval, int seconds) {
        Bucket b = new Bucket(limits);
        long targetTat = Long.MIN_VALUE / 2;
        int sent = 0;
        int refused = 0;
        long first = -1;
        for (long t = 0; t < seconds * 1000L; t++) {
            if (!b.reserve(t, 0).granted()) {
                continue;
            }
            sent++;
            if (targetTat - t > 0) {
                refused++;
                first = first < 0 ? t : first;
                b.throttle(t);
            } else {
                targetTat = t + limitInterval;
            }
        }
        return new Run(sent, refused, first);
    }

    @Test
    void aTargetsBurstOfAPeriodAtItsLimitDoesNotHideADoublingPastTwiceTheLimit() {
        // the example's earlier defaults: a ceiling of 15/s (burst 1) from 0.1, cut by 0.9, +0.012, hold 200 ms,
        // against a target that accepts 3/s with a burst of 3 (nginx's limit_req burst=3: one period at its
        // limit). At 3/s the burst stays full; at 6/s it covers 3 of the excess for a second, so a doubling per
        // refill period went on to 12/s before the first refusal, and its halving left the key at 5.4/s, each
        // further cut of 0.9 drawing a refusal of its own. Two periods per doubling: refused first at 6/s, cut
        // to 2.7/s, below the limit; the climb goes to 0.9 × 0.67 of 6/s (3.62/s), refused once more, measured
        // between the two signals, then cut below the limit and refused no more
        Adaptive defaults = Adaptive.of(50_000, 900_000, 12_000, 200, 60_000).withStart(100_000);
        Bucket b = new Bucket(Limits.of(Limit.of(1, 15, 1000)).withAdaptive(defaults));
        long limitInterval = 333;
        long targetTat = 0;
        List<Long> refusedAtFactor = new ArrayList<>();
        List<Long> refusedAt = new ArrayList<>();
        List<RateState> afterCut = new ArrayList<>();
        for (long t = 0; t < 20_000; t++) {
            long factor = b.factor(t);
            if (!b.reserve(t, 0).granted()) {
                continue;
            }
            if (targetTat - t > 2 * limitInterval) { // a burst of 3: two intervals of debt ahead of this one
                refusedAt.add(t);
                refusedAtFactor.add(factor);
                afterCut.add(b.throttle(t).rate());
            } else {
                targetTat = Math.max(targetTat, t) + limitInterval;
            }
        }
        assertThat(refusedAtFactor).containsExactly(400_000L, 241_923L); // at 6/s, twice the limit, then 3.63/s
        assertThat(refusedAt.get(0)).isBetween(4000L, 5000L); // 3 tokens at 1.5/s, 6 at 3/s, then 6/s
        assertThat(afterCut.get(0)).isEqualTo(new RateState(180_000, 0, refusedAt.get(0), false, 268_000));
        assertThat(refusedAt.get(1)).isBetween(8000L, 9000L);
        // measured: the tokens sent between the two signals, less one, over the time, 2.93/s (below the limit: the
        // cut emptied the bucket, the target's burst refilled meanwhile); cut to 0.9 of that, 1.1 of it remembered
        assertThat(afterCut.get(1)).isEqualTo(new RateState(175_545, 0, refusedAt.get(1), false, 214_555));
    }

    @Test
    void aLimitFarBelowTheRememberedCutIsFoundThoughFewTokensPassBetweenItsSignals() {
        // the example's tuning (cut by 0.9, +0.012, hold 200 ms) under a ceiling of 10/s against a target of 1/s,
        // burst 1 (a limit a tenth of the ceiling, or one that dropped there): a second or so between 429s, 1 to 3
        // tokens, never enough to measure. The memory of the cut from the ceiling must not bring every cut back to
        // 0.9 of the ceiling in one step: after the first 30 s the key settles below the limit
        Limits tenPerSecond = Limits.of(Limit.of(1, 10, 1000)).withAdaptive(Adaptive.of(50_000, 900_000, 12_000, 200,
                60_000));
        Run first = againstAHiddenLimit(tenPerSecond, 1000, 30);
        Run all = againstAHiddenLimit(tenPerSecond, 1000, 60);
        System.out.printf("hidden limit 1/s under 10/s, example tuning: 0-30 s %s, 0-60 s %s%n", first, all);
        assertThat(all.refused() - first.refused()).as("refused from 30 to 60 s").isLessThanOrEqualTo(3);
    }

    @Test
    void aSlowStartFindsALimitFarBelowTheCeilingWithFewerRefusals() {
        // the ceiling 10 per second (the defaults: floor 0.1, cut by half, +0.1 a step, hold 1 s); the target's
        // hidden limit 2 per second (five times below) or 5 (twice below); a slow start from the floor
        Adaptive aimd = Adaptive.of(100_000, 500_000, 100_000, 1000, 60_000);
        Limits atCeiling = Limits.of(Limit.of(1, 10, 1000)).withAdaptive(aimd);
        Limits slowStart = Limits.of(Limit.of(1, 10, 1000)).withAdaptive(aimd.withStart(100_000));
        for (long limitInterval : new long[] {500, 200}) {
            for (int seconds : new int[] {10, 30}) {
                Run fromCeiling = againstAHiddenLimit(atCeiling, limitInterval, seconds);
                Run fromStart = againstAHiddenLimit(slowStart, limitInterval, seconds);
                System.out.printf("hidden limit %d/s, ceiling 10/s, %d s: from the ceiling %s, slow start from 0.1"
                        + " %s%n", 1000 / limitInterval, seconds, fromCeiling, fromStart);
                // far below the ceiling fewer refusals; at twice the limit at most as many (from the ceiling the
                // second signal measures the limit between the two and the cut gets below it)
                if (limitInterval == 500) {
                    assertThat(fromStart.refused()).isLessThan(fromCeiling.refused());
                } else {
                    assertThat(fromStart.refused()).isLessThanOrEqualTo(fromCeiling.refused());
                }
                assertThat(fromStart.firstRefusalAt()).isGreaterThan(fromCeiling.firstRefusalAt());
                if (limitInterval == 500 && seconds == 30) {
                    // far above: fewer refusals and, over 30 s, at least 0.9 as many accepted (in 10 s one fewer:
                    // the first signal cuts to a quarter, half and then the decrease of 0.5, below the limit; the
                    // key from the ceiling, cut three times, remembers a cut near the limit and holds below it
                    // sooner). At twice the limit the doublings from 0.1 take three periods to get there: fewer
                    // refusals, but fewer accepted in the first seconds.
                    assertThat(fromStart.sent() - fromStart.refused()).as("accepted")
                            .isGreaterThanOrEqualTo((fromCeiling.sent() - fromCeiling.refused()) * 9 / 10);
                }
            }
        }
    }

    @Test
    void aRateNeverExceedsTheCeilingsBound() {
        Bucket b = new Bucket();
        int granted = 0;
        for (long t = 0; t < 20_000; t++) {
            if (t % 700 == 0) {
                b.throttle(t);
            }
            if (b.reserve(t, 0).granted()) {
                granted++;
            }
        }
        assertThat(granted).isLessThanOrEqualTo(1 + 20_000 / 100);
    }

    @Test
    void scaledIntervalRoundsUpAndSaturates() {
        assertThat(AdaptiveMath.scaledInterval(100, 1, PPM, Limit.MAX_BURST_TICKS)).isEqualTo(100);
        assertThat(AdaptiveMath.scaledInterval(100, 1, 500_000, Limit.MAX_BURST_TICKS)).isEqualTo(200);
        assertThat(AdaptiveMath.scaledInterval(100, 1, 300_000, Limit.MAX_BURST_TICKS)).isEqualTo(334);
        assertThat(AdaptiveMath.scaledInterval(1, 1, 1, Limit.MAX_BURST_TICKS)).isEqualTo(PPM);
        // a slow interval at a tiny factor saturates at the largest burst instead of overflowing
        long huge = Limit.MAX_BURST_TICKS / 3;
        assertThat(AdaptiveMath.scaledInterval(huge, 3, 1, Limit.MAX_BURST_TICKS)).isEqualTo(huge);
        assertThat(AdaptiveMath.scaledInterval(huge / 2, 2, 300_000, Limit.MAX_BURST_TICKS))
                .isEqualTo(Limit.MAX_BURST_TICKS / 2);
        assertThat(AdaptiveMath.scaledInterval(Long.MAX_VALUE / 4, 1, 999_999, Long.MAX_VALUE / 4))
                .isEqualTo(Long.MAX_VALUE / 4);
        Limits scaled = AdaptiveMath.scaled(Limits.of(Limit.of(3, 1, Limit.MAX_BURST_TICKS / 3)), 1);
        assertThat(scaled.get(0).burst()).isLessThanOrEqualTo(Limit.MAX_BURST_TICKS);
    }

    @Test
    void creditSaturatesAtTheCeilingForHugeGrants() {
        RateState low = new RateState(1, 0, 0);
        assertThat(AdaptiveMath.earn(low, Long.MAX_VALUE / 4, Adaptive.MAX_STEP_TOKENS, 10_000, AIMD))
                .isSameAs(RateState.CEILING);
        // one step at factor 1 ppm of 10^9 tokens is 1000 tokens
        RateState one = AdaptiveMath.earn(low, 999, Adaptive.MAX_STEP_TOKENS, 10_000, AIMD);
        assertThat(one.factorPpm()).isEqualTo(1);
        assertThat(one.credit()).isEqualTo(999);
        // a step adds 0.1 of the factor, at least 1 ppm
        assertThat(AdaptiveMath.earn(one, 1, Adaptive.MAX_STEP_TOKENS, 10_000, AIMD).factorPpm()).isEqualTo(2);
    }

    @Test
    void clocksNearTheEndsOfALongWrapSafely() {
        long now = Long.MAX_VALUE - 10;
        RateState cut = AdaptiveMath.cut(RateState.CEILING, now, AIMD, 100);
        assertThat(AdaptiveMath.holding(cut, now + 500, AIMD)).isTrue(); // now + 500 wraps
        assertThat(AdaptiveMath.holding(cut, now + 1000, AIMD)).isFalse();
    }

    @Test
    void optionsOutOfRangeAreRefusedNamingTheOptionAndValue() {
        assertThatThrownBy(() -> Adaptive.of(0, 500_000, 1, 0, 0)).hasMessageContaining("adaptiveFloor")
                .hasMessageContaining("was 0");
        assertThatThrownBy(() -> Adaptive.of(1, PPM, 1, 0, 0)).hasMessageContaining("adaptiveDecrease");
        assertThatThrownBy(() -> Adaptive.of(1, 1, PPM + 1, 0, 0)).hasMessageContaining("adaptiveIncrease");
        assertThatThrownBy(() -> Adaptive.of(1, 1, 1, -1, 0)).hasMessageContaining("adaptiveHold");
        assertThatThrownBy(() -> Adaptive.of(1, 1, 1, 0, Adaptive.MAX_MEMORY_TICKS + 1))
                .hasMessageContaining("adaptiveMemory");
        assertThatThrownBy(() -> AIMD.withStart(99_999)).hasMessageContaining("adaptiveStart")
                .hasMessageContaining("adaptiveFloor (100000 ppm)").hasMessageContaining("was 99999 ppm");
        assertThatThrownBy(() -> AIMD.withStart(PPM + 1)).hasMessageContaining("adaptiveStart")
                .hasMessageContaining("was 1000001 ppm");
        assertThat(AIMD.withStart(100_000).startPpm()).isEqualTo(100_000);
    }
    /** The example's tuning in nanoseconds: floor 0.05, cut by 0.9, +0.012 a step, hold 200 ms, memory 60 s. */
    private static final Adaptive EXAMPLE = Adaptive.of(50_000, 900_000, 12_000, 200_000_000L, 60_000_000_000L);
    /** A ceiling of 6 per second, burst 1, in nanoseconds: 166,666,667 ns a token. */
    private static final Limits SIX = Limits.of(Limit.of(1, 6, 1_000_000_000L)).withAdaptive(EXAMPLE);
    private static final long SECOND = 1_000_000_000L;

    @Test
    void aRateSentAtThreePerSecondBetweenTwoSignalsCutsToNineTenthsOfItAndRemembersOnePointOne() {
        // a key cut at 0 to 4.8/s (0.8 of 6/s, the last cut at the ceiling), then sending 3/s: 7 tokens in 2 s
        Bucket b = new Bucket(SIX);
        b.tats = new long[] {SECOND / 6};
        b.rate = new RateState(800_000, 0, 0, false, PPM);
        for (int k = 0; k < 7; k++) {
            assertThat(b.reserve(k * SECOND / 3, NO_LIMIT).granted()).isTrue();
        }
        assertThat(b.rate.granted()).isEqualTo(7);
        assertThat(b.rate.factorPpm()).isEqualTo(900_000); // the climb went to 0.9 of the ceiling at once
        // the next signal, 2 s after the cut: 6 tokens (one is the one refused) of 1/6 s each in 2 s, 0.5 of the
        // ceiling (3/s, as 6 × 166,666,667 ns is 1 s and 2 ns: floor 500,000 ppm): cut to 2.7/s, 3.3/s remembered
        Steps.One cut = b.throttle(2 * SECOND);
        assertThat(cut.cut()).isTrue();
        assertThat(cut.rate()).isEqualTo(new RateState(450_000, 0, 2 * SECOND, false, 550_000));
        // and the bucket emptied at the new rate, as any cut empties it
        assertThat(b.tats).containsExactly(2 * SECOND + AdaptiveMath.scaledInterval(SECOND / 6 + 1, 1, 450_000,
                Limit.MAX_BURST_TICKS));
    }

    @Test
    void fourTokensOrFewerSinceTheLastCutAreTheCutAsBeforeFiveAreMeasured() {
        long now = 2 * SECOND;
        long interval = AdaptiveMath.sustainedInterval(SIX);
        assertThat(interval).isEqualTo(166_666_667L);
        // 4: below 0.95 of the remembered ceiling, one decrease deeper (0.8 × 0.9 × 0.9), remembering 0.72
        assertThat(AdaptiveMath.cut(new RateState(800_000, 0, 0, false, PPM, 4), now, EXAMPLE, interval))
                .isEqualTo(new RateState(648_000, 0, now, false, 720_000));
        // 5: 4 tokens in 2 s, 333,333 ppm of 6/s: to 0.9 of it, 1.1 of it remembered
        assertThat(AdaptiveMath.cut(new RateState(800_000, 0, 0, false, PPM, 5), now, EXAMPLE, interval))
                .isEqualTo(new RateState(299_999, 0, now, false, 366_666));
        // a measure above the factor: the factor is the lower, 0.9 of it and 1.1 of it remembered
        assertThat(AdaptiveMath.cut(new RateState(400_000, 0, 0, false, PPM, 100), now, EXAMPLE, interval))
                .isEqualTo(new RateState(360_000, 0, now, false, 440_000));
        // at least the floor, and the memory at least 1 ppm (a measure of 0 is not "no memory")
        assertThat(AdaptiveMath.cut(new RateState(400_000, 0, 0, false, PPM, 5), Long.MAX_VALUE, EXAMPLE, 1))
                .isEqualTo(new RateState(50_000, 0, Long.MAX_VALUE, false, 1));
        // 1.1 of a factor near the ceiling is at most the ceiling
        assertThat(AdaptiveMath.cut(new RateState(990_000, 0, 0, false, 0, 100), now, EXAMPLE, interval))
                .isEqualTo(new RateState(891_000, 0, now, false, PPM));
        // while starting: the slow start's cut, whatever was counted
        assertThat(AdaptiveMath.cut(new RateState(800_000, 0, 0, true, 0, 100), now, EXAMPLE.withStart(200_000),
                interval))
                .isEqualTo(new RateState(360_000, 0, now, false, 536_000));
        // no time since the cut (a hold of 0), or no limit to measure with (in-flight only): as before
        assertThat(AdaptiveMath.cut(new RateState(800_000, 0, now, false, PPM, 100), now, Adaptive.of(50_000,
                900_000, 12_000, 0, SECOND), interval)).isEqualTo(new RateState(648_000, 0, now, false, 720_000));
        assertThat(AdaptiveMath.cut(new RateState(800_000, 0, 0, false, PPM, 100), now, EXAMPLE, 0))
                .isEqualTo(new RateState(648_000, 0, now, false, 720_000));
        // within the hold: ignored, the count kept
        RateState held = new RateState(800_000, 0, now - 1, false, PPM, 100);
        assertThat(AdaptiveMath.cut(held, now, EXAMPLE, interval)).isSameAs(held);
    }

    @Test
    void theTokensAreCountedDuringTheHoldTooAndOnlyPastTheStartBelowTheCeiling() {
        RateState cut = new RateState(500_000, 0, 0, false, PPM);
        // in the hold: no credit, no step, but counted
        assertThat(AdaptiveMath.earn(cut, 3, 6, 1, EXAMPLE)).isEqualTo(new RateState(500_000, 0, 0, false, PPM, 3));
        // after it: credit and count
        assertThat(AdaptiveMath.earn(cut, 2, 6, SECOND, EXAMPLE))
                .isEqualTo(new RateState(500_000, 2, 0, false, PPM, 2));
        // while starting and at the ceiling nothing is counted
        assertThat(AdaptiveMath.earn(new RateState(200_000, 0, 0, true), 1, 6, 1, EXAMPLE).granted()).isZero();
        assertThat(AdaptiveMath.earn(RateState.CEILING, 1, 6, 1, EXAMPLE)).isSameAs(RateState.CEILING);
        // a step keeps the count; a step to the ceiling drops it with the rest
        RateState stepped = AdaptiveMath.earn(new RateState(500_000, 2, 0, false, PPM, 9), 1, 6, SECOND, EXAMPLE);
        assertThat(stepped).isEqualTo(new RateState(900_000, 0, 0, false, PPM, 10));
        // the count stops at MAX_GRANTED, whatever the grant
        RateState near = new RateState(500_000, 0, 0, false, PPM, AdaptiveMath.MAX_GRANTED - 1);
        assertThat(AdaptiveMath.earn(near, Long.MAX_VALUE / 4, 6, 1, EXAMPLE).granted())
                .isEqualTo(AdaptiveMath.MAX_GRANTED);
        assertThat(AdaptiveMath.earn(near, 1, 6, 1, EXAMPLE).granted()).isEqualTo(AdaptiveMath.MAX_GRANTED);
        // and the measure from it, over a long time, a long interval: no overflow
        RateState most = new RateState(500_000, 0, 0, false, PPM, AdaptiveMath.MAX_GRANTED);
        assertThat(AdaptiveMath.cut(most, Long.MAX_VALUE, EXAMPLE, Limit.MAX_BURST_TICKS))
                .isEqualTo(new RateState(450_000, 0, Long.MAX_VALUE, false, 550_000));
    }

    @Test
    void theMeasureIsExactBelowTwoToThe32TicksAndWithinOnePpmBeyondWithoutOverflow() {
        Random random = TestSeed.random(getClass().getSimpleName() + ".measure", 20261205L);
        BigInteger million = BigInteger.valueOf(PPM);
        for (int i = 0; i < 100_000; i++) {
            long elapsed = logUniform(random, Long.MAX_VALUE);
            long interval = logUniform(random, Limit.MAX_BURST_TICKS);
            long tokens = random.nextInt(4) == 0 ? logUniform(random, AdaptiveMath.MAX_GRANTED)
                    : Math.max(0, elapsed / interval - random.nextInt(3)); // about the configured rate
            long exact = BigInteger.valueOf(tokens).multiply(BigInteger.valueOf(interval)).multiply(million)
                    .divide(BigInteger.valueOf(elapsed)).min(million).longValueExact();
            long measured = AdaptiveMath.measuredPpm(tokens, interval, elapsed);
            if (elapsed < 1L << 32) {
                assertThat(measured).as("%d tokens of %d in %d", tokens, interval, elapsed).isEqualTo(exact);
            } else {
                assertThat(measured).as("%d tokens of %d in %d", tokens, interval, elapsed)
                        .isBetween(exact - 1, Math.min(PPM, exact + 1));
            }
        }
        // the ends: at least the configured rate, and one token in the longest time
        assertThat(AdaptiveMath.measuredPpm(Long.MAX_VALUE, Long.MAX_VALUE, 1)).isEqualTo(PPM);
        assertThat(AdaptiveMath.measuredPpm(1, 1, Long.MAX_VALUE)).isZero();
        assertThat(AdaptiveMath.measuredPpm(3, Long.MAX_VALUE / 4, Long.MAX_VALUE)).isEqualTo(749_999);
    }

    /** 1 to {@code max}, uniform in the logarithm. */
    private static long logUniform(Random random, long max) {
        long v = (long) Math.exp(random.nextDouble() * Math.log((double) max));
        return Math.max(1, Math.min(max, v));
    }

    @Test
    void aCutRemembersTheFactorItCameAtLessWhenStartingOrBelowTheLastCut() {
        RateState cut = AdaptiveMath.cut(new RateState(800_000, 3, 0), 5000, AIMD, 100);
        assertThat(cut).isEqualTo(new RateState(400_000, 0, 5000, false, 800_000));
        // the next cut, once the hold is over, from at least 0.95 of it moves the memory to where that one came
        assertThat(AdaptiveMath.cut(new RateState(760_000, 0, 5000, false, 800_000), 6000, AIMD, 100))
                .isEqualTo(new RateState(380_000, 0, 6000, false, 760_000));
        // from below 0.95 of it: the last cut did not get below the limit; taken from the factor times the decrease
        assertThat(AdaptiveMath.cut(new RateState(759_999, 0, 5000, false, 800_000), 6000, AIMD, 100))
                .isEqualTo(new RateState(189_999, 0, 6000, false, 379_999));
        // while starting the factor passed the limit by up to twice: 0.67 of where it came remembered
        assertThat(AdaptiveMath.cut(new RateState(500_000, 0, 0, true), 5000, SLOW, 100).maxPpm()).isEqualTo(335_000);
        // credit towards a step keeps the memory, and an idle key forgets it with the rest
        RateState kept = AdaptiveMath.earn(cut, 1, 10, 6001, AIMD);
        assertThat(kept).isEqualTo(new RateState(400_000, 1, 5000, false, 800_000, 1));
        assertThat(AdaptiveMath.current(kept, new long[] {0}, 60_000, AIMD)).isSameAs(RateState.CEILING);
    }

    @Test
    void afterACutTheClimbIsFastToJustBelowWhereItCameSlowToItAndFasterAndFasterBeyond() {
        // AIMD: +0.1 of the factor a step; a cut at the ceiling to 0.5
        RateState cut = new RateState(500_000, 0, 0, false, PPM);
        // below 0.9 of it: one step all the way to 0.9, not past it
        assertThat(AdaptiveMath.climb(cut, 1, AIMD)).isEqualTo(900_000);
        assertThat(AdaptiveMath.climb(new RateState(890_000, 0, 0, false, PPM), 1, AIMD)).isEqualTo(900_000);
        assertThat(AdaptiveMath.climb(cut, 3, AIMD)).isEqualTo(900_000);
        assertThat(AdaptiveMath.climb(cut, 0, AIMD)).isEqualTo(500_000);
        // from 0.9 of it to it: a quarter of the increase (0.09 / 4), not past it
        assertThat(AdaptiveMath.climb(new RateState(900_000, 0, 0, false, PPM), 1, AIMD)).isEqualTo(922_500);
        assertThat(AdaptiveMath.climb(new RateState(900_000, 0, 0, false, 950_000), 3, AIMD)).isEqualTo(950_000);
        // beyond it: at least a quarter of the way past it, so the steps grow as it probes further
        Adaptive small = Adaptive.of(10_000, 900_000, 10_000, 0, 60_000); // +0.01 of the factor a step
        assertThat(AdaptiveMath.climb(new RateState(500_000, 0, 0, false, 500_000), 1, small)).isEqualTo(505_000);
        assertThat(AdaptiveMath.climb(new RateState(600_000, 0, 0, false, 500_000), 1, small)).isEqualTo(625_000);
        assertThat(AdaptiveMath.climb(new RateState(700_000, 0, 0, false, 500_000), 1, small)).isEqualTo(750_000);
        // without a memory: the increase
        assertThat(AdaptiveMath.climb(new RateState(500_000, 0, 0), 1, AIMD)).isEqualTo(550_000);
        // at most the ceiling, where nothing is kept
        assertThat(AdaptiveMath.earn(new RateState(990_000, 0, 0, false, 950_000), 10, 10, 5000, AIMD))
                .isSameAs(RateState.CEILING);
    }

    @Test
    void aRememberedCutHoldsJustBelowTheLimitWhereWithoutItTheClimbPassesItAgainAndAgain() {
        // the example's tuning below a ceiling of 40/s against a target of 20/s with a burst of 10 (nginx's
        // limit_req burst=10), a key cut at 0.55 (22/s, where the burst ran out) to 0.495, for 60 s
        Limits ceiling = Limits.of(Limit.of(2, 40, 1000))
                .withAdaptive(Adaptive.of(50_000, 900_000, 12_000, 200, 60_000));
        Run remembering = againstABurst(ceiling, new RateState(495_000, 0, 0, false, 550_000), 50, 10, 60);
        Run forgetting = againstABurst(ceiling, new RateState(495_000, 0, 0), 50, 10, 60);
        System.out.printf("20/s burst 10 below 40/s, 60 s after a cut at 22/s: remembering %s, without %s%n",
                remembering, forgetting);
        // accepted: at least 95 % of the limit's 1,200
        assertThat(remembering.sent() - remembering.refused()).isGreaterThanOrEqualTo(1140);
        // without: its first cut, at a rate the burst hid, remembers that rate, and the next signal soon after
        // cuts one decrease deeper (AdaptiveMath.DEEPER_BELOW_PPM): at least 90 %
        assertThat(forgetting.sent() - forgetting.refused()).isGreaterThanOrEqualTo(1080);
        // refused: none in the first 20 s, and fewer in all than a climb that forgets where it was refused
        assertThat(remembering.firstRefusalAt()).isGreaterThan(20_000);
        assertThat(remembering.refused()).isLessThan(forgetting.refused());
    }

    /**
     * {@code seconds} of saturating demand from {@code rate} (a try every millisecond, no waiting) against a
     * target that accepts one request per {@code limitInterval} ms with a burst of {@code burst} (nginx's
     * {@code limit_req}), each refusal sent back as a signal.
     */
    private static Run againstABurst(Limits limits, RateState rate, long limitInterval, int burst, int seconds) {
        Bucket b = new Bucket(limits);
        b.rate = rate;
        b.tats = new long[] {0};
        long targetTat = 0;
        int sent = 0;
        int refused = 0;
        long first = -1;
        for (long t = 0; t < seconds * 1000L; t++) {
            if (!b.reserve(t, 0).granted()) {
                continue;
            }
            sent++;
            if (targetTat - t > (burst - 1) * limitInterval) {
                refused++;
                first = first < 0 ? t : first;
                b.throttle(t);
            } else {
                targetTat = Math.max(targetTat, t) + limitInterval;
            }
        }
        return new Run(sent, refused, first);
    }
}
