package io.tokenbucket.store.local;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.AdaptiveMath;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.OneLimitReservation;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.RateState;
import io.tokenbucket.math.Step;
import io.tokenbucket.math.Waiter;
import io.tokenbucket.store.StoreCommand;

/**
 * The states of a {@link LocalBucketStore}: a {@link ConcurrentHashMap} from key to a {@link Bucket} holding one
 * {@code tat} per limit in nanoseconds, and the two ways a state is updated atomically.
 *
 * <p>Every command goes through {@link #update}: under the locks of its keys' buckets, {@link BucketMath#decide}
 * on their states, each stored by a compare-and-set of its first limit's state. A reservation on one key of one
 * fixed limit, the hot path, may take {@link #reserveOne} instead: the same decision in scalars
 * ({@link OneLimitReservation}), stored by that compare-and-set alone, lock-free. Both end in the same
 * compare-and-set, so the two ways never lose each other's updates.
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
     * The state of a bucket that {@link #update} holds (with its lock) while it decides: a
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

        /** The in-flight slots held ({@link BucketMath#decide}), guarded by this bucket's lock. */
        volatile long slots;

        /**
         * True once the bucket has held a slot, set under its lock and never reset: the sweep then retires it under
         * that lock only, where it reads {@link #slots} exactly.
         */
        volatile boolean slotted;

        /**
         * The waiters' tickets in arrival order ({@link BucketMath#decide}) and when each expires (ns), guarded by this
         * bucket's lock; null for none.
         */
        String[] tickets;
        long[] ticketExpiries;

        Bucket(long tatNanos) {
            super(tatNanos);
        }
    }

    private final ConcurrentHashMap<String, Bucket> buckets = new ConcurrentHashMap<>();

    /** {@link #reserveOne}'s answer for a key that holds the states of several limits: nothing decided. */
    static final long SEVERAL_LIMITS = RETIRED;

    /**
     * A reservation on one key of one fixed limit ({@link OneLimitReservation#reserve}, which decides as
     * {@link BucketMath#decide}), committed by one compare-and-set: lock-free, exact under any number of threads,
     * and allocating nothing for a key that has a bucket. Answers the {@code tat} it decided on, from which the
     * caller derives what it needs (the state committed is {@code reserve} of it, the same pure function): the
     * answer's {@link OneLimitReservation#answer Outcome}, or just the tokens left. Answers {@link #SEVERAL_LIMITS},
     * deciding nothing, for a key that holds the states of several limits (its limits were changed): {@link #update}
     * drops those, as it must.
     *
     * @param maxWaitNanos the longest wait accepted, capped as {@link io.tokenbucket.store.StoreCommand} caps it
     */
    long reserveOne(String key, Limit limit, long tokens, long maxWaitNanos, long nowNanos) {
        while (true) {
            Bucket bucket = bucketOf(key, nowNanos);
            long tatNanos = bucket.get();
            if (tatNanos <= HELD) { // one comparison for both markers on the fast path
                awaitMarker(key, bucket, tatNanos);
                continue;
            }
            if (bucket.moreTatNanos != null) {
                return SEVERAL_LIMITS;
            }
            long nextNanos = OneLimitReservation.reserve(tatNanos, nowNanos, tokens, limit, maxWaitNanos);
            if (nextNanos == tatNanos || bucket.compareAndSet(tatNanos, storable(nextNanos))) {
                return tatNanos;
            }
        }
    }

    /** Waits out a marker read on {@code bucket}: drops a retired bucket, waits for a held one's lock. */
    private void awaitMarker(String key, Bucket bucket, long tatNanos) {
        if (tatNanos == RETIRED) {
            buckets.remove(key, bucket);
        } else {
            synchronized (bucket) {
                // nothing to do: update holds this lock while the bucket is held, so entering it waits
                // until the bucket's new state is stored
            }
        }
    }

    /**
     * {@link BucketMath#decide} on the states of {@code keys} (distinct) and stores what it changed, atomically: no
     * other update, reservation or sweep of these keys sees a part of it. The buckets are locked in the order of
     * their keys (so two updates never deadlock), then each is marked {@link #HELD} by a compare-and-set, which
     * stops the lock-free reservations of {@link #reserveOne} until the new states are stored; a key removed
     * meanwhile stays removed.
     */
    Outcome update(List<String> keys, Step step, long nowNanos, StoreCommand.Lease lease) {
        Integer[] order = new Integer[keys.size()];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        if (order.length > 1) {
            Arrays.sort(order, (a, b) -> keys.get(a).compareTo(keys.get(b)));
        }
        // a peek or a question about the rate writes nothing, so it adds no bucket for a key that has none
        boolean reads = step.op() == Step.Op.PEEK || step.op() == Step.Op.RATE || step.op() == Step.Op.RENEW;
        while (true) {
            Bucket[] held = new Bucket[order.length];
            for (int i = 0; i < held.length; i++) {
                Bucket existing = reads ? buckets.get(keys.get(i)) : null;
                held[i] = existing != null ? existing : reads ? fresh(nowNanos) : bucketOf(keys.get(i), nowNanos);
            }
            Outcome[] decided = new Outcome[1];
            if (lockedUpdate(keys, step, nowNanos, lease, held, order, 0, decided)) {
                for (int i = 0; step.op() == Step.Op.REMOVE && i < held.length; i++) {
                    if (retireIfFull(held[i], nowNanos)) { // removed now, not at the next sweep
                        buckets.remove(keys.get(i), held[i]);
                    }
                }
                return decided[0];
            }
        }
    }

    /** Locks {@code buckets[order[depth..]]} in turn, then decides; false when a bucket was retired (start again). */
    private boolean lockedUpdate(List<String> keys, Step step, long nowNanos, StoreCommand.Lease lease,
                                 Bucket[] buckets, Integer[] order, int depth, Outcome[] decided) {
        if (depth < order.length) {
            synchronized (buckets[order[depth]]) {
                return lockedUpdate(keys, step, nowNanos, lease, buckets, order, depth + 1, decided);
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
            long[][] given = new long[n][];
            RateState[] givenRates = new RateState[n];
            long[] slots = new long[n];
            String[][] givenTickets = new String[n][];
            for (int i = 0; i < n; i++) {
                givenTickets[i] = liveTickets(buckets[i], nowNanos);
                given[i] = BucketMath.align(allTats(before[i], buckets[i].moreTatNanos), nowNanos,
                        step.limits().get(i));
                givenRates[i] = buckets[i].rate;
                slots[i] = buckets[i].slots;
            }
            long[][] tats = given.clone();
            RateState[] rates = givenRates.clone();
            String[][] tickets = givenTickets.clone();
            Waiter waiter = lease == null ? null : new Waiter(lease.id(), lease.ticket());
            decided[0] = BucketMath.decide(step, nowNanos, tats, rates, slots, tickets, waiter);
            for (int i = 0; i < n; i++) {
                if (tickets[i] != givenTickets[i]) {
                    keepTickets(buckets[i], tickets[i], lease, nowNanos);
                }
                if (slots[i] != buckets[i].slots) {
                    buckets[i].slotted = true;
                    buckets[i].slots = slots[i];
                }
                if (tats[i] != given[i] || rates[i] != givenRates[i]) {
                    long[] next = tats[i];
                    buckets[i].moreTatNanos = next.length > 1 ? Arrays.copyOfRange(next, 1, next.length) : null;
                    if (next.length > 0) { // a key without a rate limit (in flight only) keeps its full state
                        before[i] = storable(next[0]);
                    }
                    buckets[i].rate = rates[i];
                    Adaptive adaptive = step.limits().get(i).adaptive();
                    if (adaptive != null) {
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

    /** The tickets of {@code bucket} not expired at {@code nowNanos}, dropping the expired ones; null for none. */
    private static String[] liveTickets(Bucket bucket, long nowNanos) {
        String[] tickets = bucket.tickets;
        if (tickets == null) {
            return null;
        }
        long[] expiries = bucket.ticketExpiries;
        int live = 0;
        for (long expiry : expiries) {
            live += expiry - nowNanos > 0 ? 1 : 0;
        }
        if (live < tickets.length) {
            String[] kept = new String[live];
            long[] keptExpiries = new long[live];
            for (int j = 0, k = 0; j < tickets.length; j++) {
                if (expiries[j] - nowNanos > 0) {
                    kept[k] = tickets[j];
                    keptExpiries[k++] = expiries[j];
                }
            }
            bucket.tickets = live == 0 ? null : kept;
            bucket.ticketExpiries = live == 0 ? null : keptExpiries;
        }
        return bucket.tickets;
    }

    /**
     * Keeps the tickets {@link BucketMath#decide} left on {@code bucket}: the lease's own expiring the lease's ticket
     * time from now (placed or renewed), the others when they did.
     */
    private static void keepTickets(Bucket bucket, String[] tickets, StoreCommand.Lease lease, long nowNanos) {
        long[] expiries = tickets == null ? null : new long[tickets.length];
        for (int j = 0; expiries != null && j < tickets.length; j++) {
            if (lease != null && tickets[j].equals(lease.id())) {
                expiries[j] = nowNanos + lease.ticketNanos();
            } else {
                for (int k = 0; k < bucket.tickets.length; k++) {
                    if (bucket.tickets[k].equals(tickets[j])) {
                        expiries[j] = bucket.ticketExpiries[k];
                    }
                }
            }
        }
        bucket.slotted = true;
        bucket.tickets = tickets;
        bucket.ticketExpiries = expiries;
    }

    private static boolean retireIfFull(Bucket bucket, long nowNanos) {
        if (bucket.moreTatNanos == null && bucket.rate == null && !bucket.slotted) {
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
            return tatNanos > HELD && bucket.slots == 0 && liveTickets(bucket, nowNanos) == null
                    && BucketMath.isFull(tatNanos, nowNanos)
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

    private Bucket bucketOf(String key, long nowNanos) {
        Bucket bucket = buckets.get(key);
        if (bucket != null) {
            return bucket;
        }
        Bucket fresh = fresh(nowNanos);
        Bucket raced = buckets.putIfAbsent(key, fresh);
        return raced != null ? raced : fresh;
    }

    /** A full bucket: any state at or before now; Long.MAX_VALUE (just before) when now is a marker itself. */
    private static Bucket fresh(long nowNanos) {
        return new Bucket(nowNanos <= HELD ? Long.MAX_VALUE : nowNanos);
    }
}
