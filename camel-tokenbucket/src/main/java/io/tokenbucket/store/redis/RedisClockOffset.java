package io.tokenbucket.store.redis;

import java.util.concurrent.TimeUnit;

/**
 * Where one Redis server's clock ({@code TIME}) stands against this JVM's {@link System#nanoTime()}, learnt from
 * the script's replies, so that a wait Redis counted from its own {@code now} ends on the local clock at its slot
 * rather than that long after the reply was handled (a reply that sat in queues would otherwise add its delay to
 * every release).
 *
 * <p>Never early while the Redis clock runs steadily: each reply gives {@code received - redisNow}, which is the
 * true offset plus the reply's way back (never less than the true offset), and the estimate is the smallest of
 * those seen in the current and the previous {@link #WINDOW_NANOS}, plus {@link #MARGIN_NANOS} for the two clocks
 * drifting apart within two windows (500 ppm, the fastest an NTP daemon slews a clock). A slot mapped with it is at
 * or after the true slot.
 *
 * <p>A Redis clock that steps <em>back</em> (an NTP step, a failover to a replica with another clock) would make
 * the old samples too small by the step, and every slot early by it. Two signs give a step away, and either
 * restarts the estimate from the reply that shows it (whose slot is then mapped from its own arrival: reply time
 * plus wait, as late as without an estimate):
 * <ul>
 * <li>Redis's {@code now} is earlier than the previous reply's: replies on one connection come in the order
 *     Redis ran them, so its clock went back.</li>
 * <li>the reply's sample exceeds the estimate by more than its own round trip (plus the margin): its way back was
 *     at most that round trip, so the offset itself grew: the Redis clock lost time against ours.</li>
 * </ul>
 * A step back smaller than one round trip plus the margin cannot be told from a slow reply; it shifts slots by at
 * most that much. A step forward only makes the samples smaller, which the estimate takes at once (later slots,
 * never earlier ones).
 *
 * <p>Pure: the caller passes the times, so the tests pass theirs. Synchronized: replies of several connections
 * may share one estimate.
 */
final class RedisClockOffset {

    /** How long a window of samples lasts; the estimate uses the current and the previous window. */
    static final long WINDOW_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** Added to the smallest sample: drift between the clocks within two windows, at 500 ppm. */
    static final long MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private static final long NONE = Long.MAX_VALUE;
    private static final long NANOS_PER_MICRO = 1000;

    private long current = NONE;
    private long previous = NONE;
    private long windowStart;
    private boolean started;
    private long lastRedisMicros = Long.MIN_VALUE;
    private long steps;

    /**
     * Learns from one reply.
     *
     * @param sentNanos     the local {@code System.nanoTime()} when the call was sent
     * @param receivedNanos the local {@code System.nanoTime()} when the reply was handled
     * @param redisMicros   the Redis clock's {@code now} in the reply (microseconds)
     */
    synchronized void sample(long sentNanos, long receivedNanos, long redisMicros) {
        long offset = receivedNanos - redisMicros * NANOS_PER_MICRO;
        long estimate = Math.min(current, previous);
        boolean stepBack = redisMicros < lastRedisMicros
                || estimate != NONE && offset - estimate > receivedNanos - sentNanos + MARGIN_NANOS;
        lastRedisMicros = redisMicros;
        if (!started || stepBack) {
            started = true;
            steps += stepBack ? 1 : 0;
            previous = NONE;
            current = offset;
            windowStart = receivedNanos;
            return;
        }
        if (receivedNanos - windowStart > WINDOW_NANOS) {
            previous = current;
            current = NONE;
            windowStart = receivedNanos;
        }
        current = Math.min(current, offset);
    }

    /**
     * The local {@code System.nanoTime()} at which the Redis instant {@code redisMicros} has certainly passed, or
     * {@link Long#MAX_VALUE} before the first sample.
     */
    synchronized long localNanos(long redisMicros) {
        long offset = Math.min(current, previous);
        return offset == NONE ? NONE : redisMicros * NANOS_PER_MICRO + offset + MARGIN_NANOS;
    }

    /** How many times the Redis clock was seen stepping back (each restarted the estimate). */
    synchronized long steps() {
        return steps;
    }
}
