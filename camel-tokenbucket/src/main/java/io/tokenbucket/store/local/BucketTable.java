package io.tokenbucket.store.local;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.math.Adapted;
import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.AdaptiveMath;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Decision;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.RateState;
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

    /**
     * The state of a bucket that {@link #updateAll} holds (with its lock) while it decides on several buckets: a
     * lock-free reservation that reads it waits for that lock, then reads again.
     */
    private static final long HELD = Long.MIN_VALUE + 1;

    /** The state of one key: the first limit's {@code tat} (ns) as the value, the other limits' beside it. */
    static final class Bucket extends AtomicLong {
        private static final long serialVersionUID = 1L;

        /** The {@code tat}s (ns) of limits 2..n, guarded by this bucket's lock; null while the key has one limit. */
        volatile long[] moreTatNanos;

        /** The adaptive rate state, guarded by this bucket's lock; null for none ({@link Adaptive#fresh()}). */
        volatile RateState rate;

        /** The adaptation {@link #rate} was last decided with (for the sweep), guarded by this bucket's lock. */
        volatile Adaptive adaptive;

        Bucket(long tatNanos) {
            super(tatNanos);
        }
    }

    /** A decision on a bucket's states (one per limit, ns) at an instant (ns); the decision's states are stored. */
    interface Step {
        Decision apply(long[] tatNanos, long nowNanos);
    }

    /**
     * A decision on several buckets' states and rate states (null: none) at one instant: answers the states to store
     * for each bucket, in the order given, null for a bucket to leave as it was; for a bucket it stores whose limits
     * adapt, it leaves the rate state to store in {@code rates} ({@link Adaptive#fresh()}: none).
     */
    interface MultiStep {
        long[][] apply(long[][] tatNanos, RateState[] rates, long nowNanos);
    }

    /** An adaptive decision on a bucket's states and rate state (null: none) at an instant (ns). */
    interface AdaptiveStep {
        Adapted apply(long[] tatNanos, RateState rate, long nowNanos);
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
            if (tatNanos <= HELD) { // one comparison for both markers on the fast path
                if (tatNanos == RETIRED) {
                    buckets.remove(key, bucket);
                } else {
                    synchronized (bucket) {
                        // nothing to do: updateAll holds this lock while the bucket is held, so entering it waits
                        // until the bucket's new state is stored
                    }
                }
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
     * unless they are the very array it was given (a refusal or a peek: nothing to store). A rate state the bucket
     * holds is left as it is.
     */
    Decision update(String key, Limits limits, long nowNanos, Step step) {
        return apply(key, limits, nowNanos, (tatNanos, rate, atNanos) ->
                new Adapted(step.apply(tatNanos, atNanos), rate, false), false).decision();
    }

    /**
     * Applies {@code step} to the states of several distinct keys at once and stores what it answers, atomically:
     * no other update, reservation or sweep of these keys sees a part of it. The buckets are locked in the order of
     * their keys (so two such updates never deadlock), then each is marked {@link #HELD} by a compare-and-set, which
     * stops the lock-free reservations of {@link #reserveOne} until the new states are stored; a key removed
     * meanwhile stays removed. The single-key paths take no further lock.
     */
    void updateAll(List<String> keys, List<Limits> limits, long nowNanos, MultiStep step) {
        Integer[] order = new Integer[keys.size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> keys.get(a).compareTo(keys.get(b)));
        while (true) {
            Bucket[] held = new Bucket[order.length];
            for (int i = 0; i < held.length; i++) {
                held[i] = bucketOf(keys.get(i), nowNanos);
            }
            if (lockedUpdate(keys, limits, nowNanos, step, held, order, 0)) {
                return;
            }
        }
    }

    /** Locks {@code buckets[order[depth..]]} in turn, then decides; false when a bucket was retired (start again). */
    private boolean lockedUpdate(List<String> keys, List<Limits> limits, long nowNanos, MultiStep step,
                                 Bucket[] buckets, Integer[] order, int depth) {
        if (depth < order.length) {
            synchronized (buckets[order[depth]]) {
                return lockedUpdate(keys, limits, nowNanos, step, buckets, order, depth + 1);
            }
        }
        int n = buckets.length;
        long[] before = new long[n];
        int marked = 0;
        try {
            for (; marked < n; marked++) {
                Bucket bucket = buckets[marked];
                long tatNanos;
                do {
                    tatNanos = bucket.get();
                    if (tatNanos == RETIRED) {
                        this.buckets.remove(keys.get(marked), bucket);
                        return false;
                    }
                } while (!bucket.compareAndSet(tatNanos, HELD));
                before[marked] = tatNanos;
            }
            long[][] states = new long[n][];
            RateState[] rates = new RateState[n];
            for (int i = 0; i < n; i++) {
                states[i] = states(before[i], buckets[i].moreTatNanos, nowNanos, limits.get(i));
                rates[i] = buckets[i].rate;
            }
            long[][] next = step.apply(states, rates, nowNanos);
            for (int i = 0; i < n; i++) {
                if (next[i] != null) {
                    buckets[i].moreTatNanos = next[i].length > 1 ? Arrays.copyOfRange(next[i], 1, next[i].length)
                            : null;
                    before[i] = storable(next[i][0]);
                    Adaptive adaptive = limits.get(i).adaptive();
                    if (adaptive != null) { // a fixed key's rate state is left as it is, as update() leaves it
                        buckets[i].rate = rates[i] == null || adaptive.isFresh(rates[i]) ? null : rates[i];
                        buckets[i].adaptive = adaptive;
                    }
                }
            }
            return true;
        } finally {
            for (int i = 0; i < marked; i++) {
                buckets[i].compareAndSet(HELD, before[i]); // fails only for a key removed meanwhile: it stays so
            }
        }
    }

    /**
     * {@link #update} for limits with an adaptation: {@code step} decides on the states and the rate state
     * together, under the bucket's lock, and both are stored (a rate equal to {@link Adaptive#fresh()} as none).
     * Nothing is stored when the decision's states are the very array it was given and the rate state is unchanged.
     */
    Adapted updateAdaptive(String key, Limits limits, long nowNanos, AdaptiveStep step) {
        return apply(key, limits, nowNanos, step, true);
    }

    /** {@link #update} and {@link #updateAdaptive}: the latter also stores the rate state ({@code adaptive}). */
    private Adapted apply(String key, Limits limits, long nowNanos, AdaptiveStep step, boolean adaptive) {
        while (true) {
            Bucket bucket = bucketOf(key, nowNanos);
            synchronized (bucket) {
                long tatNanos = bucket.get();
                if (tatNanos == RETIRED) {
                    buckets.remove(key, bucket);
                    continue;
                }
                long[] states = states(tatNanos, bucket.moreTatNanos, nowNanos, limits);
                RateState before = bucket.rate;
                Adapted a = step.apply(states, before, nowNanos);
                long[] next = a.decision().tatTicks();
                RateState after = !adaptive ? before : limits.adaptive().isFresh(a.rate()) ? null : a.rate();
                if (next == states && after == before) {
                    return a;
                }
                if (bucket.compareAndSet(tatNanos, storable(next[0]))) {
                    bucket.moreTatNanos = next.length > 1 ? Arrays.copyOfRange(next, 1, next.length) : null;
                    if (adaptive) {
                        bucket.rate = after;
                        bucket.adaptive = limits.adaptive();
                    }
                    return a;
                }
            }
        }
    }

    /** The states of {@code key} for {@code limits} (ns) and its rate state (null: none), changing nothing. */
    Adapted readAdaptive(String key, Limits limits, long nowNanos, AdaptiveStep step) {
        Bucket bucket = buckets.get(key);
        if (bucket == null) {
            return step.apply(BucketMath.align(null, nowNanos, limits), null, nowNanos);
        }
        synchronized (bucket) {
            long tatNanos = bucket.get();
            return tatNanos == RETIRED ? step.apply(BucketMath.align(null, nowNanos, limits), null, nowNanos)
                    : step.apply(states(tatNanos, bucket.moreTatNanos, nowNanos, limits), bucket.rate, nowNanos);
        }
    }

    /**
     * The {@code n} keys with the lowest adaptive rate now, with their factor in parts per million: for monitoring,
     * reads every bucket.
     */
    List<Map.Entry<String, Long>> slowest(int n, long nowNanos) {
        return buckets.entrySet().stream()
                .map(e -> Map.entry(e.getKey(), factorOf(e.getValue(), nowNanos)))
                .filter(e -> e.getValue() < Adaptive.PPM)
                .sorted(Map.Entry.comparingByValue())
                .limit(n)
                .toList();
    }

    private static long factorOf(Bucket bucket, long nowNanos) {
        synchronized (bucket) {
            long tatNanos = bucket.get();
            if (tatNanos == RETIRED || bucket.adaptive == null) {
                return Adaptive.PPM;
            }
            return AdaptiveMath.current(bucket.rate, allTats(tatNanos, bucket.moreTatNanos), nowNanos,
                    bucket.adaptive).factorPpm();
        }
    }

    /** The first limit's state and the others', in one array. */
    private static long[] allTats(long tatNanos, long[] more) {
        long[] tats = new long[1 + (more == null ? 0 : more.length)];
        tats[0] = tatNanos;
        if (more != null) {
            System.arraycopy(more, 0, tats, 1, more.length);
        }
        return tats;
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
                .filter(e -> e.getValue() > HELD && !BucketMath.isFull(e.getValue(), nowNanos))
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
        if (bucket.moreTatNanos == null && bucket.rate == null) {
            long tatNanos = bucket.get();
            return tatNanos > HELD && BucketMath.isFull(tatNanos, nowNanos)
                    && bucket.compareAndSet(tatNanos, RETIRED);
        }
        synchronized (bucket) {
            long tatNanos = bucket.get();
            long[] more = bucket.moreTatNanos;
            RateState rate = bucket.rate;
            // an adaptive rate is kept while it is remembered (AdaptiveMath.current: until the bucket has been full
            // for the memory), as a Redis key lives as long
            return tatNanos > HELD && BucketMath.isFull(tatNanos, nowNanos)
                    && (more == null || BucketMath.isFull(more, nowNanos))
                    && (rate == null || bucket.adaptive.isFresh(AdaptiveMath.current(rate, allTats(tatNanos, more),
                    nowNanos, bucket.adaptive)))
                    && bucket.compareAndSet(tatNanos, RETIRED);
        }
    }

    /**
     * A state as it can be kept: {@link #RETIRED} and {@link #HELD} are taken, so a state that happens to equal one
     * (a clock that has wrapped to exactly there) is kept a nanosecond or two later, which is never early.
     */
    private static long storable(long tatNanos) {
        return tatNanos <= HELD ? HELD + 1 : tatNanos;
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
        // a full bucket: any state at or before now; Long.MAX_VALUE (just before) when now is a marker itself
        Bucket fresh = new Bucket(nowNanos <= HELD ? Long.MAX_VALUE : nowNanos);
        Bucket raced = buckets.putIfAbsent(key, fresh);
        return raced != null ? raced : fresh;
    }
}
