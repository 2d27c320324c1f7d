package io.tokenbucket.example.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The demo target's limiters on made-up {@code System.nanoTime()} readings, so no test here depends on how fast
 * anything runs: nginx's {@code limit_req} ({@link DemoTarget.LimitReq}) and the sliding window. The clock starts
 * at an arbitrary whole millisecond, not at 0, as {@code nanoTime} may.
 */
class DemoTargetLimitsTest {

    private static final long START = 7_123_000_000L;

    /** {@code millis} after {@link #START}, in nanoseconds. */
    private static long at(long millis) {
        return START + TimeUnit.MILLISECONDS.toNanos(millis);
    }

    // nginx limit_req rate=3r/s burst=3 nodelay

    @Test
    void burstPlusOnePassAtOnceThenNoneUntilTheExcessDrains() {
        DemoTarget.LimitReq limit = new DemoTarget.LimitReq(3, 3);
        for (int i = 1; i <= 4; i++) {
            assertThat(limit.admit("p1", at(0))).as("request %d at once (excess %d)", i, (i - 1) * 1000).isTrue();
        }
        assertThat(limit.admit("p1", at(0))).as("a fifth at once: excess 4000 > 3000").isFalse();
        assertThat(limit.peakExcess("p1")).isEqualTo(3000);
    }

    @Test
    void thenOnePerIntervalCountedInWholeMilliseconds() {
        DemoTarget.LimitReq limit = fourAtOnce(3, 3);
        // 3 r/s drains 3 thousandths per whole millisecond: 333 ms drain 999, so 3000 - 999 + 1000 > 3000
        assertThat(limit.admit("p1", at(333))).isFalse();
        assertThat(limit.admit("p1", at(333) + 999_999)).as("still 333 whole ms").isFalse();
        assertThat(limit.admit("p1", at(334))).as("334 ms drain 1002: excess 2998").isTrue();
        assertThat(limit.admit("p1", at(334))).as("and none more at once").isFalse();
        assertThat(limit.admit("p1", at(668))).as("334 ms later again: excess 2996").isTrue();
    }

    @Test
    void theMillisecondsAreTheClocksWholeOnes() {
        // like nginx's ngx_current_msec: each reading is cut to its millisecond, so readings at 0.999999 ms and at
        // 334 ms, 333.000001 ms apart, count as 334 ms (which drain 1002)
        DemoTarget.LimitReq limit = new DemoTarget.LimitReq(3, 3);
        for (int i = 0; i < 4; i++) {
            limit.admit("p1", at(0) + 999_999);
        }
        assertThat(limit.admit("p1", at(334))).isTrue();
    }

    @Test
    void aRefusedRequestChangesNothing() {
        DemoTarget.LimitReq limit = fourAtOnce(3, 3);
        assertThat(limit.admit("p1", at(0))).isFalse();
        assertThat(limit.admit("p1", at(200))).isFalse();
        // measured from the fourth: had the refusal at 200 ms stored its excess (3400) and time, this would be
        // 3400 - 402 + 1000 and refused
        assertThat(limit.admit("p1", at(334))).isTrue();
        assertThat(limit.peakExcess("p1")).as("refused requests store no excess").isEqualTo(3000);
    }

    @Test
    void theExcessDrainsToZeroAndNoFurther() {
        DemoTarget.LimitReq limit = fourAtOnce(3, 3);
        for (int i = 1; i <= 4; i++) {
            assertThat(limit.admit("p1", at(10_000))).as("request %d after 10 s idle", i).isTrue();
        }
        assertThat(limit.admit("p1", at(10_000))).as("a long pause saves up no more than the burst").isFalse();
    }

    @Test
    void eachClientHasAnExcessOfItsOwn() {
        DemoTarget.LimitReq limit = fourAtOnce(3, 3);
        assertThat(limit.admit("p1", at(0))).isFalse();
        for (int i = 1; i <= 4; i++) {
            assertThat(limit.admit("p2", at(0))).as("p2's request %d", i).isTrue();
        }
        assertThat(limit.peakExcess("p3")).as("a client not seen").isZero();
    }

    @Test
    void anEarlierReadingCountsAsNoTimePassed() {
        // arrivals are stamped before the target's lock, so one may reach the limiter after a later one
        DemoTarget.LimitReq limit = new DemoTarget.LimitReq(3, 3);
        assertThat(limit.admit("p1", at(500))).isTrue();
        assertThat(limit.admit("p1", at(100))).isTrue();
        assertThat(limit.peakExcess("p1")).as("as if at once, not 400 ms back").isEqualTo(1000);
    }

    @Test
    void thePeakExcessIsTheHighestStored() {
        // a bucket of 3 at once then one per 333 ms in front: nginx's excess reaches 2 and creeps up by the
        // thousandth that 333 whole ms leave undrained
        DemoTarget.LimitReq limit = new DemoTarget.LimitReq(3, 3);
        for (int i = 0; i < 3; i++) {
            assertThat(limit.admit("p1", at(0))).isTrue();
        }
        assertThat(limit.peakExcess("p1")).isEqualTo(2000);
        assertThat(limit.admit("p1", at(333))).isTrue();
        assertThat(limit.admit("p1", at(666))).isTrue();
        assertThat(limit.peakExcess("p1")).isEqualTo(2002);
        // a request in its slot after a quiet second: the excess falls, the peak stays
        assertThat(limit.admit("p1", at(2000))).isTrue();
        assertThat(limit.peakExcess("p1")).isEqualTo(2002);
    }

    // at most 2 requests in any 1000 ms

    @Test
    void aSlidingWindowAdmitsItsLimitInAnyWindow() {
        DemoTarget.SlidingWindow limit = new DemoTarget.SlidingWindow(2, TimeUnit.MILLISECONDS.toNanos(1000));
        assertThat(limit.admit("p1", at(0))).isTrue();
        assertThat(limit.admit("p1", at(0))).isTrue();
        assertThat(limit.admit("p1", at(999) + 999_999)).isFalse();
        assertThat(limit.admit("p2", at(999) + 999_999)).as("another client").isTrue();
        assertThat(limit.admit("p1", at(1000))).as("the first two are a whole window old").isTrue();
        assertThat(limit.admit("p1", at(1000))).isTrue();
        assertThat(limit.admit("p1", at(1000))).isFalse();
    }

    @Test
    void aSlidingWindowCountsNoRefusedRequest() {
        DemoTarget.SlidingWindow limit = new DemoTarget.SlidingWindow(2, TimeUnit.MILLISECONDS.toNanos(1000));
        limit.admit("p1", at(0));
        limit.admit("p1", at(0));
        assertThat(limit.admit("p1", at(500))).isFalse();
        // had the refusal at 500 ms been counted, only one would pass at 1000 ms
        assertThat(limit.admit("p1", at(1000))).isTrue();
        assertThat(limit.admit("p1", at(1000))).isTrue();
    }

    private static DemoTarget.LimitReq fourAtOnce(int rate, int burst) {
        DemoTarget.LimitReq limit = new DemoTarget.LimitReq(rate, burst);
        for (int i = 0; i < 4; i++) {
            limit.admit("p1", at(0));
        }
        return limit;
    }
}
