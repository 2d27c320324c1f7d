package io.tokenbucket.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The Redis clock mapped onto ours: never early, as late as the fastest recent reply allows. Plain numbers. */
class RedisClockOffsetTest {

    private static final long MS = 1_000_000L;
    /** Our clock minus the Redis clock, in truth (unknown to the estimator). */
    private static final long TRUE_OFFSET = 7_000 * MS;

    /** A reply executed at local time {@code executedAt} and handled {@code delay} later. */
    private static void reply(RedisClockOffset clock, long executedAt, long delay) {
        clock.sample(executedAt + delay, (executedAt - TRUE_OFFSET) / 1000);
    }

    @Test
    void beforeAnyReplyNothingIsMapped() {
        assertThat(new RedisClockOffset().localNanos(123)).isEqualTo(Long.MAX_VALUE);
        assertThat(RedisBucketStore.localWait(5 * MS, Long.MAX_VALUE, 0)).isEqualTo(5 * MS);
    }

    @Test
    void theFastestReplyOfTheWindowsSetsTheOffsetAndASlotIsNeverMappedEarly() {
        RedisClockOffset clock = new RedisClockOffset();
        reply(clock, 100 * MS, 40 * MS); // a reply that sat in queues for 40 ms
        reply(clock, 200 * MS, MS / 10); // a fast one: 0.1 ms
        reply(clock, 300 * MS, 25 * MS);
        long slotRedisMicros = (400 * MS - TRUE_OFFSET) / 1000; // due at local 400 ms
        long mapped = clock.localNanos(slotRedisMicros);
        assertThat(mapped).as("never before the slot").isGreaterThanOrEqualTo(400 * MS)
                .as("late by the fastest reply's way back and the margin only")
                .isEqualTo(400 * MS + MS / 10 + RedisClockOffset.MARGIN_NANOS);
    }

    @Test
    void aSlowReplyWaitsFromTheSlotNotFromWhenItWasHandled() {
        RedisClockOffset clock = new RedisClockOffset();
        reply(clock, 0, MS / 10);
        // Redis said at local 1,000 ms: wait 50 ms; the reply was handled 30 ms later
        long redisNow = (1_000 * MS - TRUE_OFFSET) / 1000;
        long handled = 1_030 * MS;
        reply(clock, 1_000 * MS, 30 * MS);
        long wait = RedisBucketStore.localWait(50 * MS, clock.localNanos(redisNow + 50_000), handled);
        // the slot is local 1,050 ms: 20 ms from when it was handled (+ the 0.1 ms way back and the margin)
        assertThat(wait).isEqualTo(20 * MS + MS / 10 + RedisClockOffset.MARGIN_NANOS);
        // counted from the reply as before it would have ended at 1,080 ms: 30 ms late
        assertThat(handled + wait).isLessThan(handled + 50 * MS).isGreaterThanOrEqualTo(1_050 * MS);
    }

    @Test
    void neverLongerThanRedisSaidAndNeverNegative() {
        assertThat(RedisBucketStore.localWait(5 * MS, 100 * MS, 0)).isEqualTo(5 * MS);
        assertThat(RedisBucketStore.localWait(5 * MS, 100 * MS, 200 * MS)).isZero();
    }

    @Test
    void oldSamplesAgeOutAfterTwoWindows() {
        RedisClockOffset clock = new RedisClockOffset();
        reply(clock, 0, MS / 10); // fast, at the start
        long window = RedisClockOffset.WINDOW_NANOS;
        reply(clock, window + MS, 10 * MS); // next window: slower replies only
        reply(clock, 2 * window + 2 * MS, 10 * MS); // the window after: the fast sample of the first is gone
        long slot = (3 * window - TRUE_OFFSET) / 1000;
        assertThat(clock.localNanos(slot)).isEqualTo(3 * window + 10 * MS + RedisClockOffset.MARGIN_NANOS);
    }
}
