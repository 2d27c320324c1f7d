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
 * those seen in the current and the previous {@link #WINDOW_NANOS}, plus a margin: {@link #MARGIN_NANOS} for the
 * two clocks drifting apart within two windows (500 ppm, the fastest an NTP daemon slews a clock), or half the
 * fastest round trip of the windows when that is more (a remote Redis). A slot mapped with it is at or after the
 * true slot.
 *
 * <p>A Redis clock that steps <em>back</em> (an NTP step, a failover to a replica with another clock) would make
 * the old samples too small by the step, and every slot early by it. Two signs give a step away, and either
 * restarts the estimate from the reply that shows it (whose slot is then mapped from its own arrival: reply time
 * plus wait, as late as without an estimate):
 * <ul>
 * <li>Redis's {@code now} is earlier than the previous reply's: replies on one connection come in the order
 *     Redis ran them, so its clock went back.</li>
 * <li>the reply's sample exceeds the estimate by more than its own round trip: its way back was at most that round
 *     trip, so the offset itself grew: the Redis clock lost time against ours.</li>
 * </ul>
 * A step back smaller than the round trip of the reply that follows it goes unseen; the margin of half the fastest
 * single call's round trip covers it unless that reply also sat in a queue on its way to Redis or was a batch (whose
 * round trip includes its members' work), and then the slot is early by at most that queueing or work (an NTP
 * daemon steps a clock by 128 ms or more; a failover breaks the connection, and a failed call
 * {@link #reset() resets} the estimate). A step forward only makes the samples smaller, which the estimate
 * takes at once (later slots, never earlier ones). Samples older than two windows are not used.
 *
 * <p>Pure: the caller passes the times, so the tests pass theirs. Synchronized: replies of several connections
 * may share one estimate.
 */
final class RedisClockOffset {

    /**
     * How long a window of samples lasts: 250 ms; the estimate uses the current and the previous window. Shorter
     * windows need a smaller drift margin (it is added to every release) but forget sooner: under four calls a
     * second the estimate restarts from each reply, which is later, never earlier.
     */
    static final long WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
    /**
     * The least margin added to the smallest sample: 250 µs, the drift between the clocks within two windows at
     * 500 ppm.
     */
    static final long MARGIN_NANOS = TimeUnit.MICROSECONDS.toNanos(250);

    private static final long NONE = Long.MAX_VALUE;
    private static final long NANOS_PER_MICRO = 1000;

    /** The smallest offset sample (local minus Redis) of the current and the previous window. */
    private long currentOffsetNanos = NONE;
    private long previousOffsetNanos = NONE;
    /** The fastest round trip of the current and the previous window. */
    private long currentRttNanos = NONE;
    private long previousRttNanos = NONE;
    private long windowStartNanos;
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
    void sample(long sentNanos, long receivedNanos, long redisMicros) {
        sample(sentNanos, receivedNanos, redisMicros, true);
    }

    /**
     * Learns from one reply, whose round trip counts towards the margin only if {@code alone}: a batch's round
     * trip includes the script's work for every member (milliseconds for a few hundred), which says nothing of the
     * way to Redis and back, and half of it added to every release would make the releases of a busy spell late
     * by that much. A batch still gives an offset sample (its now is read before the members' work, so the sample
     * is larger, never smaller, than a single call's) and is checked for a step back against its own round trip.
     *
     * @param alone whether the call was a single operation, not a batch of several
     */
    synchronized void sample(long sentNanos, long receivedNanos, long redisMicros, boolean alone) {
        long offsetNanos = receivedNanos - redisMicros * NANOS_PER_MICRO;
        long rttNanos = Math.max(0, receivedNanos - sentNanos);
        long estimateNanos = Math.min(currentOffsetNanos, previousOffsetNanos);
        boolean stepBack = redisMicros < lastRedisMicros
                || estimateNanos != NONE && offsetNanos - estimateNanos > rttNanos;
        lastRedisMicros = redisMicros;
        if (!started || stepBack) {
            started = true;
            steps += stepBack ? 1 : 0;
            previousOffsetNanos = NONE;
            previousRttNanos = NONE;
            currentOffsetNanos = offsetNanos;
            currentRttNanos = alone ? rttNanos : NONE;
            windowStartNanos = receivedNanos;
            return;
        }
        if (receivedNanos - windowStartNanos > WINDOW_NANOS) {
            // after a quiet spell of two windows or more the old samples say nothing about the clock now
            boolean stale = receivedNanos - windowStartNanos > 2 * WINDOW_NANOS;
            previousOffsetNanos = stale ? NONE : currentOffsetNanos;
            previousRttNanos = stale ? NONE : currentRttNanos;
            currentOffsetNanos = NONE;
            currentRttNanos = NONE;
            windowStartNanos = receivedNanos;
        }
        currentOffsetNanos = Math.min(currentOffsetNanos, offsetNanos);
        if (alone) {
            currentRttNanos = Math.min(currentRttNanos, rttNanos);
        }
    }

    /**
     * The local {@code System.nanoTime()} at which the Redis instant {@code redisMicros} has certainly passed, or
     * {@link Long#MAX_VALUE} before the first sample.
     */
    synchronized long localNanos(long redisMicros) {
        long offsetNanos = Math.min(currentOffsetNanos, previousOffsetNanos);
        if (offsetNanos == NONE) {
            return NONE;
        }
        return redisMicros * NANOS_PER_MICRO + offsetNanos + marginNanos();
    }

    /**
     * The margin over the smallest sample: drift, or half the fastest round trip of a single call when that is
     * longer (drift only while the windows saw batches alone).
     */
    synchronized long marginNanos() {
        long fastestRttNanos = Math.min(currentRttNanos, previousRttNanos);
        return fastestRttNanos == NONE ? MARGIN_NANOS : Math.max(MARGIN_NANOS, fastestRttNanos / 2);
    }

    /**
     * Forgets every sample: the next reply starts the estimate again. Called when a call failed, since Redis may
     * come back as another server (a failover) with a clock of its own.
     */
    synchronized void reset() {
        started = false;
        currentOffsetNanos = NONE;
        previousOffsetNanos = NONE;
        currentRttNanos = NONE;
        previousRttNanos = NONE;
        lastRedisMicros = Long.MIN_VALUE;
    }

    /** How many times the Redis clock was seen stepping back (each restarted the estimate). */
    synchronized long steps() {
        return steps;
    }
}
