package io.tokenbucket.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The Redis clock mapped onto ours: never early, as late as the fastest recent reply allows, also when the Redis
 * clock steps back. Plain numbers.
 */
class RedisClockOffsetTest {

    private static final long MS = 1_000_000L;
    /** Our clock minus the Redis clock, in truth (unknown to the estimator). */
    private static final long TRUE_OFFSET = 7_000 * MS;

    /** A reply executed at local time {@code executedAt} and handled {@code delay} later (sent just before). */
    private static void reply(RedisClockOffset clock, long executedAt, long delay) {
        clock.sample(executedAt - MS / 100, executedAt + delay, (executedAt - TRUE_OFFSET) / 1000);
    }

    @Test
    void beforeAnyReplyNothingIsMapped() {
        assertThat(new RedisClockOffset().localNanos(123)).isEqualTo(Long.MAX_VALUE);
        assertThat(ScriptReply.localWait(5 * MS, Long.MAX_VALUE, 0)).isEqualTo(5 * MS);
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
        // Redis said at local 200 ms: wait 50 ms; the reply was handled 30 ms later
        long redisNow = (200 * MS - TRUE_OFFSET) / 1000;
        long handled = 230 * MS;
        reply(clock, 200 * MS, 30 * MS);
        long wait = ScriptReply.localWait(50 * MS, clock.localNanos(redisNow + 50_000), handled);
        // the slot is local 250 ms: 20 ms from when it was handled (+ the 0.1 ms way back and the margin)
        assertThat(wait).isEqualTo(20 * MS + MS / 10 + RedisClockOffset.MARGIN_NANOS);
        // counted from the reply as before it would have ended at 280 ms: 30 ms late
        assertThat(handled + wait).isLessThan(handled + 50 * MS).isGreaterThanOrEqualTo(250 * MS);
    }

    @Test
    void aBatchsRoundTripDoesNotWidenTheMarginButItsOffsetCounts() {
        RedisClockOffset clock = new RedisClockOffset();
        // a busy spell of batches only: 20 ms round trips, most of it the script's work on its members
        for (int i = 0; i < 5; i++) {
            long executedAt = 10 * MS * i;
            clock.sample(executedAt - 19 * MS, executedAt + MS, (executedAt - TRUE_OFFSET) / 1000, false);
        }
        assertThat(clock.marginNanos()).as("drift only, not half of 20 ms").isEqualTo(RedisClockOffset.MARGIN_NANOS);
        long slot = (100 * MS - TRUE_OFFSET) / 1000;
        assertThat(clock.localNanos(slot)).as("never before the slot").isGreaterThanOrEqualTo(100 * MS)
                .isEqualTo(100 * MS + MS + RedisClockOffset.MARGIN_NANOS);
        // a single call's round trip counts again
        clock.sample(60 * MS - 4 * MS, 60 * MS + MS / 10, (60 * MS - TRUE_OFFSET) / 1000, true);
        assertThat(clock.marginNanos()).isEqualTo(Math.max(RedisClockOffset.MARGIN_NANOS, (4 * MS + MS / 10) / 2));
    }

    @Test
    void neverLongerThanRedisSaidAndNeverNegative() {
        assertThat(ScriptReply.localWait(5 * MS, 100 * MS, 0)).isEqualTo(5 * MS);
        assertThat(ScriptReply.localWait(5 * MS, 100 * MS, 200 * MS)).isZero();
    }

    @Test
    void oldSamplesAgeOutAfterTwoWindows() {
        RedisClockOffset clock = new RedisClockOffset();
        reply(clock, 0, MS / 10); // fast, at the start
        long window = RedisClockOffset.WINDOW_NANOS;
        reply(clock, window + MS, 10 * MS); // next window: slower replies only
        reply(clock, 2 * window + 2 * MS, 10 * MS); // the window after: the fast sample of the first is gone
        long slot = (3 * window - TRUE_OFFSET) / 1000;
        // the margin is half the fastest round trip of the windows (10 ms here), more than the drift margin
        assertThat(clock.marginNanos()).isEqualTo((10 * MS + MS / 100) / 2);
        assertThat(clock.localNanos(slot)).isEqualTo(3 * window + 10 * MS + clock.marginNanos());
    }

    @Test
    void aRedisClockThatStepsBackRestartsTheEstimateAndNoSlotIsEarly() {
        RedisClockOffset clock = new RedisClockOffset();
        reply(clock, 0, MS / 10);
        reply(clock, 100 * MS, MS / 10);
        // at local 200 ms Redis's clock steps back by 150 ms (an NTP step, a failover to a replica): its now in
        // the next reply is behind the previous one's
        long step = 150 * MS;
        long redisNow = (200 * MS - TRUE_OFFSET - step) / 1000;
        clock.sample(200 * MS - MS / 100, 200 * MS + MS / 10, redisNow);
        assertThat(clock.steps()).isEqualTo(1);
        // Redis, on its stepped clock, asks for a 50 ms wait: due at local 250 ms; mapped from the old offset it
        // would be 150 ms early (100 ms), and the wait would be cut to 0
        long slot = clock.localNanos(redisNow + 50_000);
        assertThat(slot).as("never before the slot").isGreaterThanOrEqualTo(250 * MS);
        assertThat(ScriptReply.localWait(50 * MS, slot, 200 * MS + MS / 10)).isEqualTo(50 * MS);
    }

    @Test
    void aStepBackHiddenInAReplyOrderIsSeenByItsRoundTrip() {
        RedisClockOffset clock = new RedisClockOffset();
        reply(clock, 0, MS / 10);
        // 2 s later (no reply in between, so Redis's now still moved forward) the clock is 20 ms behind: the
        // reply's sample is 20 ms over the estimate although its round trip was 0.2 ms
        long step = 20 * MS;
        long at = 2_000 * MS;
        long redisNow = (at - TRUE_OFFSET - step) / 1000;
        clock.sample(at - MS / 10, at + MS / 10, redisNow);
        assertThat(clock.steps()).isEqualTo(1);
        assertThat(clock.localNanos(redisNow + 10_000)).isGreaterThanOrEqualTo(at + 10 * MS);
    }

    @Test
    void aSlowReplyIsNotTakenForAStep() {
        RedisClockOffset clock = new RedisClockOffset();
        reply(clock, 0, MS / 10);
        // 300 ms in queues on the way back, its round trip 300 ms: slow, not a step
        clock.sample(100 * MS - MS / 10, 400 * MS, (100 * MS - TRUE_OFFSET) / 1000);
        assertThat(clock.steps()).isZero();
        assertThat(clock.localNanos((500 * MS - TRUE_OFFSET) / 1000))
                .isEqualTo(500 * MS + MS / 10 + RedisClockOffset.MARGIN_NANOS);
    }

    @Test
    void aStepBackSmallerThanARoundTripOnARemoteRedisIsCoveredByTheMargin() {
        // Redis in another region (40 ms each way), a reply every 500 ms; NTP steps its clock back by 70 ms: more
        // than half a round trip, less than one, and Redis's now still moves forward, so neither sign shows it
        RedisClockOffset clock = new RedisClockOffset();
        long rtt = 80 * MS;
        long t = 0;
        for (int i = 0; i < 4; i++, t += 500 * MS) {
            clock.sample(t - rtt / 2, t + rtt / 2, (t - TRUE_OFFSET) / 1000);
        }
        long redisNow = (t - TRUE_OFFSET - 70 * MS) / 1000;
        clock.sample(t - rtt / 2, t + rtt / 2, redisNow);
        assertThat(clock.steps()).isZero();
        // the margin of half the fastest round trip keeps the slot (local t + 100 ms) from being mapped early
        long received = t + rtt / 2;
        long released = received + ScriptReply.localWait(100 * MS, clock.localNanos(redisNow + 100_000), received);
        assertThat(released).isGreaterThanOrEqualTo(t + 100 * MS);
    }

    @Test
    void aFailedCallOrAQuietSpellStartsTheEstimateAfresh() {
        RedisClockOffset clock = new RedisClockOffset();
        reply(clock, 0, MS / 10);
        clock.reset(); // a call failed: Redis may come back as another server with another clock
        assertThat(clock.localNanos(123)).isEqualTo(Long.MAX_VALUE);
        reply(clock, 10 * MS, MS / 10);
        // three windows without a reply: the next one does not lean on the old samples
        long later = 10 * MS + 3 * RedisClockOffset.WINDOW_NANOS;
        reply(clock, later, 30 * MS);
        assertThat(clock.localNanos((later - TRUE_OFFSET) / 1000)).isEqualTo(later + 30 * MS + clock.marginNanos());
    }

    @Test
    void overRandomRepliesAndStepsNoSlotIsEverMappedEarly() {
        java.util.Random random = new java.util.Random(7);
        RedisClockOffset clock = new RedisClockOffset();
        long offset = TRUE_OFFSET;
        long t = 0;
        for (int i = 0; i < 200_000; i++) {
            t += random.nextInt(2 * (int) MS);
            if (random.nextInt(5_000) == 0) {
                // a step back of 2 ms to 10 s, or forward, now and then; all larger than a round trip here
                long step = (2 + random.nextInt(10_000)) * MS;
                offset += random.nextBoolean() ? step : -step;
            }
            long forward = random.nextInt((int) MS / 2);
            long back = random.nextInt(random.nextInt(20) == 0 ? 50 * (int) MS : (int) MS / 2);
            long redisNow = Math.floorDiv(t - offset, 1000); // TIME truncates to microseconds
            clock.sample(t - forward, t + back, redisNow);
            long wait = random.nextInt(100) * MS / 10;
            long trueSlot = (redisNow * 1000 + offset) + wait;
            long mapped = ScriptReply.localWait(wait, clock.localNanos(redisNow + wait / 1000), t + back)
                    + t + back;
            assertThat(mapped).as("reply %d", i).isGreaterThanOrEqualTo(trueSlot);
        }
    }
}
