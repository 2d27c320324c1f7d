package io.tokenbucket.math;

import org.junit.jupiter.api.Test;

import static io.tokenbucket.math.BucketMath.NO_LIMIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The rate math with plain numbers. Ticks are milliseconds here unless a test says otherwise; a "bucket" is
 * just the {@code tat} each step returns.
 */
class BucketMathTest {

    /** Reserves {@code tokens} at each of {@code times} in turn; returns the waits. */
    private static long[] waits(Limit limit, long tokens, long maxWait, long... times) {
        long tat = Long.MIN_VALUE / 2;
        long[] waits = new long[times.length];
        for (int i = 0; i < times.length; i++) {
            Steps.One d = Steps.reserve(tat, times[i], tokens, limit, maxWait);
            waits[i] = d.granted() ? d.waitTicks() : -1;
            tat = d.tatTicks(0);
        }
        return waits;
    }

    @Test
    void aFullBucketGrantsItsCapacityAtOnceThenSpacesByTheInterval() {
        Limit fivePerSecond = Limit.of(5, 5, 1000);
        assertThat(waits(fivePerSecond, 1, NO_LIMIT, 0, 0, 0, 0, 0, 0, 0, 0))
                .containsExactly(0, 0, 0, 0, 0, 200, 400, 600);
    }

    @Test
    void tokensComeBackAtTheRefillRate() {
        Limit twoPerSecond = Limit.of(2, 2, 1000);
        // burst of 2 at t=0; one token back at 500, two by 1000
        assertThat(waits(twoPerSecond, 1, 0, 0, 0, 0, 499, 500, 500, 1500, 1500, 1500))
                .containsExactly(0, 0, -1, -1, 0, -1, 0, 0, -1);
    }

    @Test
    void fractionalRateOneTokenPerTenSeconds() {
        Limit slow = Limit.of(1, 1, 10_000);
        assertThat(waits(slow, 1, NO_LIMIT, 0, 0, 0)).containsExactly(0, 10_000, 20_000);
        assertThat(waits(slow, 1, 0, 0, 9_999, 10_000)).containsExactly(0, -1, 0);
    }

    @Test
    void fractionalRateThreePerSecondNeverRunsFast() {
        Limit three = Limit.of(1, 3, 1000); // interval 334 ms
        long[] w = waits(three, 1, NO_LIMIT, 0, 0, 0, 0);
        assertThat(w).containsExactly(0, 334, 668, 1002);
        // over 3 s of saturation no more than 1 + 3000/333.33 = 10 tokens
        long tat = 0;
        int granted = 0;
        for (long t = 0; t <= 3000; t++) {
            Steps.One d = Steps.reserve(tat, t, 1, three, 0);
            if (d.granted()) {
                granted++;
                tat = d.tatTicks(0);
            }
        }
        assertThat(granted).isBetween(9, 10);
    }

    @Test
    void costAboveOneTakesSeveralTokens() {
        Limit ten = Limit.of(10, 10, 1000); // 100 ms per token
        assertThat(waits(ten, 4, NO_LIMIT, 0, 0, 0, 0)).containsExactly(0, 0, 200, 600);
    }

    @Test
    void costAboveCapacityFailsAtOnceAndClearly() {
        Limit five = Limit.of(5, 5, 1000);
        assertThatThrownBy(() -> Steps.reserve(0, 0, 6, five, NO_LIMIT))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tokens 6 exceeds capacity 5");
    }

    @Test
    void maxWaitRefusesLongerWaitsAndARefusalConsumesNothing() {
        Limit one = Limit.of(1, 1, 1000);
        Steps.One first = Steps.reserve(0, 0, 1, one, 300);
        assertThat(first.granted()).isTrue();
        Steps.One refused = Steps.reserve(first.tatTicks(0), 100, 1, one, 300);
        assertThat(refused.granted()).isFalse();
        assertThat(refused.waitTicks()).isEqualTo(900);
        assertThat(refused.tatTicks(0)).isEqualTo(first.tatTicks(0));
        // the refusal left the state as it was: at 700 the wait is 300 and accepted
        Steps.One later = Steps.reserve(refused.tatTicks(0), 700, 1, one, 300);
        assertThat(later.granted()).isTrue();
        assertThat(later.waitTicks()).isEqualTo(300);
    }

    @Test
    void aWaitOfExactlyTheLongestWaitIsGrantedAndOneTickMoreIsRefusedWhateverTheCallerAccepts() {
        Limit one = Limit.of(1, 1, 1000); // a token's wait is the debt it finds: debt + 1000 - 1000
        long now = 5_000;
        Steps.One at = Steps.reserve(now + BucketMath.MAX_WAIT_TICKS, now, 1, one, NO_LIMIT);
        assertThat(at.granted()).isTrue();
        assertThat(at.waitTicks()).isEqualTo(BucketMath.MAX_WAIT_TICKS);
        Steps.One past = Steps.reserve(now + BucketMath.MAX_WAIT_TICKS + 1, now, 1, one, NO_LIMIT);
        assertThat(past.granted()).isFalse();
        assertThat(past.waitTicks()).isEqualTo(BucketMath.MAX_WAIT_TICKS + 1);
        long[] tats = {now + BucketMath.MAX_WAIT_TICKS + 1, now};
        assertThat(Steps.reserve(tats, now, 1, Limits.of(one, Limit.of(5, 5, 1000)), NO_LIMIT).granted())
                .as("several limits").isFalse();
        tats[0]--;
        assertThat(Steps.reserve(tats, now, 1, Limits.of(one, Limit.of(5, 5, 1000)), NO_LIMIT).granted())
                .as("several limits, at the longest wait").isTrue();
    }

    @Test
    void remainingCountsWholeTokensAfterTheReservation() {
        Limit five = Limit.of(5, 5, 1000);
        Steps.One d = Steps.reserve(0, 0, 2, five, NO_LIMIT);
        assertThat(d.remaining()).isEqualTo(3);
        assertThat(five.available(d.tatTicks(0), 0)).isEqualTo(3);
        assertThat(five.available(d.tatTicks(0), 199)).isEqualTo(3);
        assertThat(five.available(d.tatTicks(0), 200)).isEqualTo(4);
        assertThat(five.available(d.tatTicks(0), 10_000)).isEqualTo(5);
    }

    @Test
    void aWaitingReservationLeavesNothingRemaining() {
        Limit one = Limit.of(1, 1, 1000);
        Steps.One first = Steps.reserve(0, 0, 1, one, NO_LIMIT);
        Steps.One second = Steps.reserve(first.tatTicks(0), 0, 1, one, NO_LIMIT);
        assertThat(second.waitTicks()).isEqualTo(1000);
        assertThat(second.remaining()).isZero();
    }

    @Test
    void aLongIdlePeriodRefillsToCapacityAndNoMore() {
        Limit three = Limit.of(3, 1, 1000);
        long tat = Steps.reserve(0, 0, 3, three, NO_LIMIT).tatTicks(0);
        long muchLater = 1_000_000_000_000L;
        assertThat(BucketMath.isFull(tat, muchLater)).isTrue();
        assertThat(waits(three, 1, 0, muchLater, muchLater, muchLater, muchLater)).containsExactly(0, 0, 0, -1);
    }

    @Test
    void onePerHourInNanosecondsDoesNotOverflow() {
        long hour = 3_600_000_000_000L;
        Limit hourly = Limit.of(1000, 1, hour);
        long now = Long.MAX_VALUE / 2;
        Steps.One d = Steps.reserve(now, now, 1000, hourly, NO_LIMIT);
        assertThat(d.granted()).isTrue();
        Steps.One next = Steps.reserve(d.tatTicks(0), now, 1, hourly, NO_LIMIT);
        assertThat(next.waitTicks()).isEqualTo(hour);
        assertThat(hourly.available(next.tatTicks(0), now + 1000 * hour)).isEqualTo(999);
    }

    @Test
    void peekReportsWithoutCommitting() {
        Limit one = Limit.of(1, 1, 1000);
        long tat = Steps.reserve(0, 0, 1, one, NO_LIMIT).tatTicks(0);
        Steps.One peek = Steps.peek(tat, 250, 1, one);
        assertThat(peek.granted()).isFalse();
        assertThat(peek.waitTicks()).isEqualTo(750);
        assertThat(peek.tatTicks(0)).isEqualTo(tat);
        assertThat(Steps.peek(tat, 1000, 1, one).granted()).isTrue();
    }

    @Test
    void refundMovesTheStateBackButNeverPastFull() {
        Limit five = Limit.of(5, 5, 1000);
        long tat = Steps.reserve(0, 0, 5, five, NO_LIMIT).tatTicks(0); // empty: tat = 1000
        assertThat(five.refund(tat, 0, 2)).isEqualTo(600);
        assertThat(five.refund(tat, 0, 5)).isEqualTo(0);
        assertThat(five.refund(tat, 500, 5)).isEqualTo(500);
        assertThat(five.refund(tat, 2000, 1)).isEqualTo(tat);
    }

    @Test
    void aRefundOfMoreThanABucketfulGivesBackReservationsBookedAheadAndStopsAtFull() {
        Limit five = Limit.of(5, 5, 1000);
        long tat = 0;
        for (int i = 0; i < 3; i++) {
            tat = Steps.reserve(tat, 0, 5, five, NO_LIMIT).tatTicks(0); // three bucketfuls: booked until 3000
        }
        assertThat(five.refund(tat, 0, 12)).as("12 of the 15 back").isEqualTo(600);
        assertThat(five.refund(tat, 0, 15)).isEqualTo(0);
        assertThat(five.refund(tat, 0, Long.MAX_VALUE)).isEqualTo(0);
        assertThat(five.available(five.refund(tat, 0, Long.MAX_VALUE), 0)).isEqualTo(5);
    }

    @Test
    void overSaturationTheReleasesNeverExceedTheBound() {
        Limit limit = Limit.of(7, 3, 1000); // interval 334
        long tat = 0;
        long[] releases = new long[20_000];
        int n = 0;
        for (long t = 0; t < 20_000; t += 7) {
            for (int k = 0; k < 3; k++) {
                Steps.One d = Steps.reserve(tat, t, 1, limit, NO_LIMIT);
                tat = d.tatTicks(0);
                if (t + d.waitTicks() < 20_000) {
                    releases[n++] = t + d.waitTicks();
                }
            }
        }
        java.util.Arrays.sort(releases, 0, n);
        for (long window : new long[] {1, 100, 1000, 5000}) {
            long bound = 7 + window / 334 + 1;
            for (int i = 0, j = 0; i < n; i++) {
                while (releases[i] - releases[j] >= window) {
                    j++;
                }
                assertThat(i - j + 1).as("released in a %d ms window", window).isLessThanOrEqualTo((int) bound);
            }
        }
    }
}
