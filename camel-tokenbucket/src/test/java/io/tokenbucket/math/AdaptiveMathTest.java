package io.tokenbucket.math;

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

    /** A bucket moved through the steps by hand. */
    private static final class Bucket {
        long[] tats = {Long.MIN_VALUE / 2};
        RateState rate;

        Adapted apply(Adapted a) {
            tats = a.decision().tatTicks();
            rate = a.rate();
            return a;
        }

        Decision reserve(long now, long maxWait) {
            return apply(AdaptiveMath.reserve(tats, rate, now, 1, TEN, maxWait)).decision();
        }

        Adapted throttle(long now) {
            return apply(AdaptiveMath.throttle(tats, rate, now, TEN));
        }

        long factor(long now) {
            return AdaptiveMath.current(rate, tats, now, AIMD).factorPpm();
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
        Adapted cut = b.throttle(1000);
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
        assertThat(b.factor(1000)).isEqualTo(250_000);
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
        Adapted cut = AdaptiveMath.throttle(inDebt, lower, 2000, TEN);
        assertThat(cut.rate().factorPpm()).isEqualTo(100_000);
        // and a reservation waits no longer than the floor's interval (1 s at 0.1 of 10/s), not 10 s at 0.01
        Decision d = AdaptiveMath.reserve(new long[] {1000}, lower, 1000, 1, TEN, NO_LIMIT).decision();
        assertThat(d.waitTicks()).isLessThanOrEqualTo(1000);
    }

    @Test
    void successRaisesTheRateOneStepPerRefillAmountAtTheCurrentRateBackToTheCeiling() {
        Bucket b = new Bucket();
        b.throttle(0); // 0.5: 5 per second, a step per 5 tokens
        assertThat(b.granted(1000, 2000)).isEqualTo(5);
        assertThat(b.factor(2000)).isEqualTo(600_000);
        // +0.1 per step until the ceiling, where no state is left
        b.granted(2000, 10_000);
        assertThat(b.factor(10_000)).isEqualTo(PPM);
        assertThat(b.rate).isSameAs(RateState.CEILING);
        assertThat(b.granted(10_000, 11_000)).isEqualTo(10);
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
    void anIdleBucketForgetsItsCutAfterTheMemoryNotBefore() {
        Bucket b = new Bucket();
        b.throttle(0);
        assertThat(b.factor(59_999)).isEqualTo(500_000);
        assertThat(b.factor(60_000)).isEqualTo(PPM);
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
        assertThat(AdaptiveMath.earn(one, 1, Adaptive.MAX_STEP_TOKENS, 10_000, AIMD).factorPpm()).isEqualTo(100_001);
    }

    @Test
    void clocksNearTheEndsOfALongWrapSafely() {
        long now = Long.MAX_VALUE - 10;
        RateState cut = AdaptiveMath.cut(RateState.CEILING, now, AIMD);
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
    }
}
