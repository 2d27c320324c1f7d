package io.tokenbucket.store.redis;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Where one Redis server's clock ({@code TIME}) stands against this JVM's {@link System#nanoTime()}, learnt from
 * the script's replies, so that a wait Redis counted from its own {@code now} ends on the local clock at its slot
 * rather than that long after the reply was handled (a reply that sat in queues would otherwise add its delay to
 * every release).
 *
 * <p>Never early: each reply gives {@code received - redisNow}, which is the true offset plus the reply's way back
 * (never less than the true offset), and the estimate is the smallest of those seen in the last
 * {@link #WINDOW_NANOS} to {@code 2 ×} that, plus {@link #MARGIN_NANOS} for the two clocks drifting apart within the
 * window (100 ppm over 10 s). A slot mapped with it is at or after the true slot. Pure: the caller passes the
 * times, so the tests pass theirs.
 */
final class RedisClockOffset {

    /** How long a window of samples lasts; the estimate uses the current and the previous window. */
    static final long WINDOW_NANOS = TimeUnit.SECONDS.toNanos(5);
    /** Added to the smallest sample: drift between the clocks within two windows. */
    static final long MARGIN_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private static final long NONE = Long.MAX_VALUE;
    private static final long NANOS_PER_MICRO = 1000;

    private final AtomicLong current = new AtomicLong(NONE);
    private volatile long previous = NONE;
    private volatile long windowStart;
    private volatile boolean started;

    /**
     * Learns from one reply.
     *
     * @param receivedNanos the local {@code System.nanoTime()} when the reply was handled
     * @param redisMicros   the Redis clock's {@code now} in the reply (microseconds)
     */
    void sample(long receivedNanos, long redisMicros) {
        if (!started || receivedNanos - windowStart > WINDOW_NANOS) {
            rotate(receivedNanos);
        }
        long offset = receivedNanos - redisMicros * NANOS_PER_MICRO;
        current.accumulateAndGet(offset, Math::min);
    }

    private synchronized void rotate(long now) {
        if (!started) {
            started = true;
            windowStart = now;
        } else if (now - windowStart > WINDOW_NANOS) {
            // a sample racing with this may land in either window: the estimate only gets later (safe)
            previous = current.getAndSet(NONE);
            windowStart = now;
        }
    }

    /**
     * The local {@code System.nanoTime()} at which the Redis instant {@code redisMicros} has certainly passed, or
     * {@link Long#MAX_VALUE} before the first sample.
     */
    long localNanos(long redisMicros) {
        long offset = Math.min(current.get(), previous);
        return offset == NONE ? NONE : redisMicros * NANOS_PER_MICRO + offset + MARGIN_NANOS;
    }
}
