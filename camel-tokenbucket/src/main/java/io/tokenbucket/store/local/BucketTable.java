package io.tokenbucket.store.local;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Decision;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.store.Reservation;

/**
 * The states of a {@link LocalBucketStore}: a {@link ConcurrentHashMap} from key to a {@link Bucket} holding one
 * {@code tat} per limit in nanoseconds, and the two ways a state is updated atomically.
 *
 * <p>Every operation goes through {@link #update}: under the bucket's lock, a {@link BucketMath} step from the
 * states to a {@link Decision}, ending in a compare-and-set of the first limit's state. A reservation on a bucket
 * of one limit, the hot path, takes {@link #reserveOne} instead: the same decision, stored by that compare-and-set
 * alone, lock-free. Both end in the same compare-and-set, so the two ways never lose each other's updates.
 *
 * <p>The sweep cannot lose a reservation (the race behind CAMEL-24926): it retires a bucket by a
 * compare-and-set of the full state it read to {@link #RETIRED}, so either a concurrent reservation's
 * compare-and-set wins (and the bucket stays), or the sweep's does, and the reservation, seeing
 * {@code RETIRED}, starts again on a fresh bucket, which is full exactly as the retired one was.
 */
final class BucketTable {

    /** The state of a bucket that a sweep has taken out of the map; no reservation may use it. */
    private static final long RETIRED = Long.MIN_VALUE;

    /** The state of one key: the first limit's {@code tat} (ns) as the value, the other limits' beside it. */
    static final class Bucket extends AtomicLong {
        private static final long serialVersionUID = 1L;

        /** The {@code tat}s (ns) of limits 2..n, guarded by this bucket's lock; null while the key has one limit. */
        volatile long[] moreTatNanos;

        Bucket(long tatNanos) {
            super(tatNanos);
        }
    }

    /** A decision on a bucket's states (one per limit, ns) at an instant (ns); the decision's states are stored. */
    interface Step {
        Decision apply(long[] tatNanos, long nowNanos);
    }

    private final ConcurrentHashMap<String, Bucket> buckets = new ConcurrentHashMap<>();

    /**
     * {@link BucketMath#reserve(long, long, long, Limit, long)} on a bucket of one limit, committed by one
     * compare-and-set: lock-free, and exact under any number of threads. Answers the reservation itself, built
     * where the decision is made: returned out of the loop, the decision was allocated on every acquire (JMH's gc
     * profiler on LocalAcquire), whereas ending here the JIT removes it.
     */
    Reservation reserveOne(String key, Limit limit, long tokens, long maxWaitNanos, long nowNanos) {
        while (true) {
            Bucket bucket = bucketOf(key, nowNanos);
            long tatNanos = bucket.get();
            if (tatNanos == RETIRED) {
                buckets.remove(key, bucket);
                continue;
            }
            Decision d = BucketMath.reserve(tatNanos, nowNanos, tokens, limit, maxWaitNanos);
            if (!d.granted() || bucket.compareAndSet(tatNanos, storable(d.tatTicks(0)))) {
                return new Reservation(d.granted(), d.waitTicks(), d.remaining());
            }
        }
    }

    /**
     * Applies {@code step} to the states of {@code key} under its lock and stores the states of its decision,
     * unless they are the very array it was given (a refusal or a peek: nothing to store).
     */
    Decision update(String key, Limits limits, long nowNanos, Step step) {
        while (true) {
            Bucket bucket = bucketOf(key, nowNanos);
            synchronized (bucket) {
                long tatNanos = bucket.get();
                if (tatNanos == RETIRED) {
                    buckets.remove(key, bucket);
                    continue;
                }
                long[] states = states(tatNanos, bucket.moreTatNanos, nowNanos, limits);
                Decision d = step.apply(states, nowNanos);
                long[] next = d.tatTicks();
                if (next == states) {
                    return d;
                }
                if (bucket.compareAndSet(tatNanos, storable(next[0]))) {
                    bucket.moreTatNanos = next.length > 1 ? Arrays.copyOfRange(next, 1, next.length) : null;
                    return d;
                }
            }
        }
    }

    /** The states of {@code key} for {@code limits} (ns), without changing anything. */
    long[] read(String key, Limits limits, long nowNanos) {
        Bucket bucket = buckets.get(key);
        if (bucket == null) {
            return BucketMath.align(null, nowNanos, limits);
        }
        synchronized (bucket) {
            long tatNanos = bucket.get();
            return tatNanos == RETIRED ? BucketMath.align(null, nowNanos, limits)
                    : states(tatNanos, bucket.moreTatNanos, nowNanos, limits);
        }
    }

    /** Drops the state of {@code key}; a reservation racing with it fails its compare-and-set and starts afresh. */
    void remove(String key) {
        Bucket bucket = buckets.get(key);
        if (bucket != null) {
            bucket.set(RETIRED);
            buckets.remove(key, bucket);
        }
    }

    /** Drops every bucket full at {@code nowNanos}; safe concurrently with updates. Answers how many. */
    int sweep(long nowNanos) {
        int dropped = 0;
        for (var entry : buckets.entrySet()) {
            Bucket bucket = entry.getValue();
            if (retireIfFull(bucket, nowNanos)) {
                buckets.remove(entry.getKey(), bucket);
                dropped++;
            }
        }
        return dropped;
    }

    /** The {@code n} keys furthest from full at {@code nowNanos}, with the nanoseconds until their first limit is. */
    List<Map.Entry<String, Long>> busiest(int n, long nowNanos) {
        return buckets.entrySet().stream()
                .map(e -> Map.entry(e.getKey(), e.getValue().get()))
                .filter(e -> e.getValue() != RETIRED && !BucketMath.isFull(e.getValue(), nowNanos))
                .map(e -> Map.entry(e.getKey(), e.getValue() - nowNanos))
                .sorted(Map.Entry.<String, Long> comparingByValue().reversed())
                .limit(n)
                .toList();
    }

    /** The number of buckets held. */
    int size() {
        return buckets.size();
    }

    private static boolean retireIfFull(Bucket bucket, long nowNanos) {
        if (bucket.moreTatNanos == null) {
            long tatNanos = bucket.get();
            return tatNanos != RETIRED && BucketMath.isFull(tatNanos, nowNanos)
                    && bucket.compareAndSet(tatNanos, RETIRED);
        }
        synchronized (bucket) {
            long tatNanos = bucket.get();
            long[] more = bucket.moreTatNanos;
            return tatNanos != RETIRED && BucketMath.isFull(tatNanos, nowNanos)
                    && (more == null || BucketMath.isFull(more, nowNanos)) && bucket.compareAndSet(tatNanos, RETIRED);
        }
    }

    /**
     * A state as it can be kept: {@link #RETIRED} is taken, so a state that happens to equal it (a clock that has
     * wrapped to exactly there) is kept one nanosecond later, which is never early.
     */
    private static long storable(long tatNanos) {
        return tatNanos == RETIRED ? RETIRED + 1 : tatNanos;
    }

    private static long[] states(long tatNanos, long[] moreTatNanos, long nowNanos, Limits limits) {
        long[] tats = new long[limits.size()];
        tats[0] = tatNanos;
        for (int i = 1; i < tats.length; i++) {
            tats[i] = moreTatNanos != null && i - 1 < moreTatNanos.length ? moreTatNanos[i - 1] : nowNanos;
        }
        return tats;
    }

    private Bucket bucketOf(String key, long nowNanos) {
        Bucket bucket = buckets.get(key);
        if (bucket != null) {
            return bucket;
        }
        // a full bucket: any state at or before now; one nanosecond before when now is the retired marker itself
        Bucket fresh = new Bucket(nowNanos == RETIRED ? nowNanos - 1 : nowNanos);
        Bucket raced = buckets.putIfAbsent(key, fresh);
        return raced != null ? raced : fresh;
    }
}
