package io.tokenbucket.store.local;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Decision;
import io.tokenbucket.math.Limit;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.Reservation;

/**
 * Buckets in memory: a {@link ConcurrentHashMap} from key to one {@link AtomicLong} holding the key's
 * {@code tat} in nanoseconds of an injectable monotonic clock.
 *
 * <p>Every update is a compare-and-set of the next state computed by {@link BucketMath}: lock-free, and
 * exact under any number of threads. Memory is bounded by the <em>active</em> keys: {@link #sweep()} drops
 * buckets that have refilled to full, which changes no outcome because a full bucket equals no bucket.
 *
 * <p>The sweep cannot lose a reservation (the race behind CAMEL-24926): it retires a bucket by a
 * compare-and-set of the full state it read to {@link #RETIRED}, so either a concurrent reservation's
 * compare-and-set wins (and the bucket stays), or the sweep's does, and the reservation, seeing
 * {@code RETIRED}, starts again on a fresh bucket, which is full exactly as the retired one was.
 */
public final class LocalBucketStore implements BucketStore {

    /** The state of a bucket that a sweep has taken out of the map; no reservation may use it. */
    private static final long RETIRED = Long.MIN_VALUE;

    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

    private final ConcurrentHashMap<String, AtomicLong> buckets = new ConcurrentHashMap<>();
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
    public CompletionStage<Reservation> reserve(String key, Limit limit, long tokens, long maxWaitNanos) {
        return CompletableFuture.completedFuture(reserveNow(key, limit, tokens, maxWaitNanos));
    }

    /**
     * The synchronous form of {@link #reserve}: the answer, computed and committed atomically.
     *
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above the capacity
     */
    public Reservation reserveNow(String key, Limit limit, long tokens, long maxWaitNanos) {
        long now = clock.getAsLong();
        while (true) {
            AtomicLong bucket = bucketOf(key, now);
            long tat = bucket.get();
            if (tat == RETIRED) {
                buckets.remove(key, bucket);
                continue;
            }
            Decision d = BucketMath.reserve(tat, now, tokens, limit, maxWaitNanos);
            if (!d.granted() || bucket.compareAndSet(tat, d.tat())) {
                return new Reservation(d.granted(), d.waitTicks(), d.remaining());
            }
        }
    }

    @Override
    public CompletionStage<Reservation> peek(String key, Limit limit, long tokens) {
        return CompletableFuture.completedFuture(peekNow(key, limit, tokens));
    }

    /** The synchronous form of {@link #peek}. */
    public Reservation peekNow(String key, Limit limit, long tokens) {
        long now = clock.getAsLong();
        AtomicLong bucket = buckets.get(key);
        long tat = bucket == null ? now : bucket.get();
        Decision d = BucketMath.peek(tat == RETIRED ? now : tat, now, tokens, limit);
        return new Reservation(d.granted(), d.waitTicks(), d.remaining());
    }

    @Override
    public CompletionStage<Void> refund(String key, Limit limit, long tokens) {
        long now = clock.getAsLong();
        AtomicLong bucket = buckets.get(key);
        while (bucket != null) {
            long tat = bucket.get();
            if (tat == RETIRED || BucketMath.isFull(tat, now)) {
                break;
            }
            if (bucket.compareAndSet(tat, BucketMath.refund(tat, now, tokens, limit))) {
                break;
            }
        }
        return DONE;
    }

    @Override
    public CompletionStage<Void> remove(String key) {
        AtomicLong bucket = buckets.get(key);
        if (bucket != null) {
            bucket.set(RETIRED); // a reservation racing with this fails its compare-and-set and starts afresh
            buckets.remove(key, bucket);
        }
        return DONE;
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
            AtomicLong bucket = entry.getValue();
            long tat = bucket.get();
            if (tat != RETIRED && BucketMath.isFull(tat, now) && bucket.compareAndSet(tat, RETIRED)) {
                buckets.remove(entry.getKey(), bucket);
                dropped++;
            }
        }
        return dropped;
    }

    /** The number of buckets held now: active keys, plus full ones not yet swept. */
    public int size() {
        return buckets.size();
    }

    private AtomicLong bucketOf(String key, long now) {
        AtomicLong bucket = buckets.get(key);
        if (bucket != null) {
            return bucket;
        }
        AtomicLong fresh = new AtomicLong(now);
        AtomicLong raced = buckets.putIfAbsent(key, fresh);
        return raced != null ? raced : fresh;
    }
}
