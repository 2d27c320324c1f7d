package io.tokenbucket.store.local;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Decision;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.MultiDecision;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.Choice;
import io.tokenbucket.store.Reservation;

/**
 * Buckets in memory: a {@link ConcurrentHashMap} from key to a {@link Bucket} holding the key's {@code tat} in
 * nanoseconds of an injectable monotonic clock.
 *
 * <p>A bucket with one limit is updated by a compare-and-set of the next state computed by
 * {@link BucketMath}: lock-free, and exact under any number of threads. A bucket with several limits keeps the
 * other limits' states beside it and is updated under the bucket's lock, still ending in a compare-and-set of
 * the first state, so the two ways never lose each other's updates. Memory is bounded by the <em>active</em>
 * keys: {@link #sweep()} drops buckets that have refilled to full, which changes no outcome because a full
 * bucket equals no bucket.
 *
 * <p>The sweep cannot lose a reservation (the race behind CAMEL-24926): it retires a bucket by a
 * compare-and-set of the full state it read to {@link #RETIRED}, so either a concurrent reservation's
 * compare-and-set wins (and the bucket stays), or the sweep's does, and the reservation, seeing
 * {@code RETIRED}, starts again on a fresh bucket, which is full exactly as the retired one was.
 */
public final class LocalBucketStore implements BucketStore {

    /** The state of a bucket that a sweep has taken out of the map; no reservation may use it. */
    private static final long RETIRED = Long.MIN_VALUE;

    /** How often {@link #reserveFreest} re-chooses when the chosen key was taken meanwhile. */
    private static final int CHOICES = 8;

    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

    /** The state of one key: the first limit's {@code tat} as the value, the other limits' beside it. */
    static final class Bucket extends AtomicLong {
        private static final long serialVersionUID = 1L;

        /** The {@code tat}s of limits 2..n, guarded by this bucket's lock; null while the key has one limit. */
        volatile long[] more;

        Bucket(long tat) {
            super(tat);
        }
    }

    /** An update of a multi-limit state: the states in, the states to store, or null to store nothing. */
    private interface MultiStep<T> {
        T apply(long[] tats, long now, Holder holder);
    }

    /** Where a {@link MultiStep} leaves the states to store. */
    private static final class Holder {
        long[] next;
    }

    private final ConcurrentHashMap<String, Bucket> buckets = new ConcurrentHashMap<>();
    private final LongSupplier clock;

    /** A store on {@link System#nanoTime()}. */
    public LocalBucketStore() {
        this(System::nanoTime);
    }

    /**
     * A store on the given clock.
     *
     * @param nanoClock a monotonic clock in nanoseconds (tests inject one they move by hand)
     */
    public LocalBucketStore(LongSupplier nanoClock) {
        this.clock = nanoClock;
    }

    @Override
    public CompletionStage<Reservation> reserve(String key, Limits limits, long tokens, long maxWaitNanos) {
        return CompletableFuture.completedFuture(reserveNow(key, limits, tokens, maxWaitNanos));
    }

    /**
     * The synchronous form of {@link #reserve}: the answer, computed and committed atomically.
     *
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above a capacity
     */
    public Reservation reserveNow(String key, Limits limits, long tokens, long maxWaitNanos) {
        if (limits.size() == 1) {
            return reserveNow(key, limits.get(0), tokens, maxWaitNanos);
        }
        return update(key, limits, (tats, now, holder) -> {
            MultiDecision d = BucketMath.reserve(tats, now, tokens, limits,
                    Math.min(maxWaitNanos, MAX_WAIT_NANOS));
            holder.next = d.granted() ? d.tats() : null;
            return new Reservation(d.granted(), d.waitTicks(), d.remaining());
        });
    }

    /** {@link #reserveNow(String, Limits, long, long)} for a bucket with one limit: one compare-and-set. */
    public Reservation reserveNow(String key, Limit limit, long tokens, long maxWaitNanos) {
        long now = clock.getAsLong();
        while (true) {
            Bucket bucket = bucketOf(key, now);
            long tat = bucket.get();
            if (tat == RETIRED) {
                buckets.remove(key, bucket);
                continue;
            }
            Decision d = BucketMath.reserve(tat, now, tokens, limit, Math.min(maxWaitNanos, MAX_WAIT_NANOS));
            if (!d.granted() || bucket.compareAndSet(tat, storable(d.tat()))) {
                return new Reservation(d.granted(), d.waitTicks(), d.remaining());
            }
        }
    }

    @Override
    public CompletionStage<Reservation> peek(String key, Limits limits, long tokens) {
        return CompletableFuture.completedFuture(peekNow(key, limits, tokens));
    }

    /** The synchronous form of {@link #peek}. */
    public Reservation peekNow(String key, Limits limits, long tokens) {
        return peekAt(key, limits, tokens, clock.getAsLong());
    }

    private Reservation peekAt(String key, Limits limits, long tokens, long now) {
        MultiDecision d = BucketMath.peek(read(key, limits, now), now, tokens, limits);
        return new Reservation(d.granted(), d.waitTicks(), d.remaining());
    }

    @Override
    public CompletionStage<Reservation> refund(String key, Limits limits, long tokens) {
        return CompletableFuture.completedFuture(update(key, limits, (tats, now, holder) -> {
            holder.next = BucketMath.refund(tats, now, tokens, limits);
            return new Reservation(true, 0, BucketMath.available(holder.next, now, limits));
        }));
    }

    @Override
    public CompletionStage<Reservation> penalize(String key, Limits limits, long penaltyNanos) {
        return CompletableFuture.completedFuture(update(key, limits, (tats, now, holder) -> {
            holder.next = BucketMath.penalize(tats, now, Math.min(penaltyNanos, MAX_PENALTY_NANOS), limits);
            MultiDecision d = BucketMath.peek(holder.next, now, 1, limits);
            return new Reservation(d.granted(), d.waitTicks(), d.remaining());
        }));
    }

    @Override
    public CompletionStage<Void> remove(String key) {
        Bucket bucket = buckets.get(key);
        if (bucket != null) {
            bucket.set(RETIRED); // a reservation racing with this fails its compare-and-set and starts afresh
            buckets.remove(key, bucket);
        }
        return DONE;
    }

    /**
     * Chooses the candidate whose tokens come soonest (of equals, the one with most tokens, then the first),
     * then reserves there accepting no longer a wait than the
     * one it chose by: if another thread took that key's tokens meanwhile, the reservation is refused (nothing
     * consumed) and the choice is made again. Each step is atomic; the choice and the reservation together are
     * as good as atomic unless the candidates are taken faster than {@value #CHOICES} choices can be made, when
     * the last choice is reserved whatever its wait.
     */
    @Override
    public CompletionStage<Choice> reserveFreest(List<String> keys, List<Limits> limits, long tokens,
                                                 long maxWaitNanos) {
        long maxWait = Math.min(maxWaitNanos, MAX_WAIT_NANOS);
        for (int attempt = 1; ; attempt++) {
            int best = 0;
            long bestWait = Long.MAX_VALUE;
            long bestRemaining = -1;
            // one instant for every candidate: with a reading each, time passing between them could make a later
            // key look sooner
            long now = clock.getAsLong();
            for (int i = 0; i < keys.size(); i++) {
                Reservation peek = peekAt(keys.get(i), limits.get(i), tokens, now);
                if (peek.waitNanos() < bestWait || peek.waitNanos() == bestWait && peek.remaining() > bestRemaining) {
                    best = i;
                    bestWait = peek.waitNanos();
                    bestRemaining = peek.remaining();
                }
            }
            if (bestWait > maxWait) {
                Reservation refused = peekAt(keys.get(best), limits.get(best), tokens, now);
                return CompletableFuture.completedFuture(new Choice(best,
                        new Reservation(false, refused.waitNanos(), refused.remaining())));
            }
            long accept = attempt < CHOICES ? bestWait : maxWait;
            Reservation r = reserveNow(keys.get(best), limits.get(best), tokens, accept);
            if (r.granted() || attempt >= CHOICES) {
                return CompletableFuture.completedFuture(new Choice(best, r));
            }
        }
    }

    /**
     * Drops every bucket that has refilled to full; safe to run concurrently with reservations.
     *
     * @return how many buckets were dropped
     */
    public int sweep() {
        long now = clock.getAsLong();
        int dropped = 0;
        for (var entry : buckets.entrySet()) {
            Bucket bucket = entry.getValue();
            if (retireIfFull(bucket, now)) {
                buckets.remove(entry.getKey(), bucket);
                dropped++;
            }
        }
        return dropped;
    }

    /**
     * The {@code n} keys furthest from full now, with the nanoseconds until their first limit is full again:
     * the busiest keys, for monitoring. Reads every bucket: call it from a console, not per exchange.
     */
    public List<Map.Entry<String, Long>> busiest(int n) {
        long now = clock.getAsLong();
        return buckets.entrySet().stream()
                .map(e -> Map.entry(e.getKey(), e.getValue().get()))
                .filter(e -> e.getValue() != RETIRED && !BucketMath.isFull(e.getValue(), now))
                .map(e -> Map.entry(e.getKey(), e.getValue() - now))
                .sorted(Map.Entry.<String, Long> comparingByValue().reversed())
                .limit(n)
                .toList();
    }

    /** The number of buckets held now: active keys, plus full ones not yet swept. */
    public int size() {
        return buckets.size();
    }

    private static boolean retireIfFull(Bucket bucket, long now) {
        if (bucket.more == null) {
            long tat = bucket.get();
            return tat != RETIRED && BucketMath.isFull(tat, now) && bucket.compareAndSet(tat, RETIRED);
        }
        synchronized (bucket) {
            long tat = bucket.get();
            long[] more = bucket.more;
            return tat != RETIRED && BucketMath.isFull(tat, now) && (more == null || BucketMath.isFull(more, now))
                    && bucket.compareAndSet(tat, RETIRED);
        }
    }

    /** The states of {@code key} for {@code limits}, without changing anything. */
    private long[] read(String key, Limits limits, long now) {
        Bucket bucket = buckets.get(key);
        if (bucket == null) {
            return BucketMath.align(null, now, limits);
        }
        synchronized (bucket) {
            long tat = bucket.get();
            return tat == RETIRED ? BucketMath.align(null, now, limits) : states(tat, bucket.more, now, limits);
        }
    }

    /** Applies {@code step} to the states of {@code key} under its lock and stores what it leaves. */
    private <T> T update(String key, Limits limits, MultiStep<T> step) {
        long now = clock.getAsLong();
        while (true) {
            Bucket bucket = bucketOf(key, now);
            synchronized (bucket) {
                long tat = bucket.get();
                if (tat == RETIRED) {
                    buckets.remove(key, bucket);
                    continue;
                }
                Holder holder = new Holder();
                T answer = step.apply(states(tat, bucket.more, now, limits), now, holder);
                if (holder.next == null) {
                    return answer;
                }
                if (bucket.compareAndSet(tat, storable(holder.next[0]))) {
                    bucket.more = holder.next.length > 1
                            ? java.util.Arrays.copyOfRange(holder.next, 1, holder.next.length) : null;
                    return answer;
                }
            }
        }
    }

    /**
     * A state as it can be kept: {@link #RETIRED} is taken, so a state that happens to equal it (a clock that has
     * wrapped to exactly there) is kept one nanosecond later, which is never early.
     */
    private static long storable(long tat) {
        return tat == RETIRED ? RETIRED + 1 : tat;
    }

    private static long[] states(long tat, long[] more, long now, Limits limits) {
        long[] tats = new long[limits.size()];
        tats[0] = tat;
        for (int i = 1; i < tats.length; i++) {
            tats[i] = more != null && i - 1 < more.length ? more[i - 1] : now;
        }
        return tats;
    }

    private Bucket bucketOf(String key, long now) {
        Bucket bucket = buckets.get(key);
        if (bucket != null) {
            return bucket;
        }
        // a full bucket: any state at or before now; one nanosecond before when now is the retired marker itself
        Bucket fresh = new Bucket(now == RETIRED ? now - 1 : now);
        Bucket raced = buckets.putIfAbsent(key, fresh);
        return raced != null ? raced : fresh;
    }
}
