package io.tokenbucket.store.local;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

import io.tokenbucket.math.Adapted;
import io.tokenbucket.math.AdaptiveMath;
import io.tokenbucket.math.AllOfAdapted;
import io.tokenbucket.math.AllOfDecision;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Decision;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.RateState;
import io.tokenbucket.store.Adaptation;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.Choice;
import io.tokenbucket.store.Reservation;
import io.tokenbucket.store.StoreCommand;

/**
 * Buckets in memory, on nanoseconds of an injectable monotonic clock: each command is one {@link BucketMath}
 * step on the key's states, applied atomically by a {@link BucketTable}.
 *
 * <p>A reservation on a bucket of one limit is a lock-free compare-and-set; everything else runs under the
 * bucket's lock ({@link BucketTable}), and a reservation on several keys at once ({@link #reserveAll}) under the
 * locks of all of them, taken in key order. Memory is bounded by the <em>active</em> keys: {@link #sweep()} drops
 * buckets that have refilled to full, which changes no outcome because a full bucket equals no bucket, and it
 * cannot lose a reservation racing with it. Answers are completed stages.
 *
 * <p>Limits with an adaptation ({@link Limits#adaptive()}) always take the lock: the bucket's rate state is decided
 * and stored with its {@code tat}s ({@link AdaptiveMath}), so a reservation and a {@code throttled} signal on one
 * key are atomic with each other. The sweep keeps a bucket with a rate state until the bucket has been full for the
 * adaptation's memory ({@link AdaptiveMath#current}), as long as the Redis store keeps its key.
 */
public final class LocalBucketStore implements BucketStore {

    /** How often {@link StoreCommand.ReserveFreest} re-chooses when the chosen key was taken meanwhile. */
    private static final int CHOICES = 8;

    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

    private final BucketTable table = new BucketTable();
    private final Cases cases = new Cases();
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
    public <R> CompletionStage<R> execute(StoreCommand<R> command) {
        return command.sendTo(cases);
    }

    /**
     * The synchronous form of {@link #reserve}: the answer, computed and committed atomically.
     *
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above a capacity
     */
    public Reservation reserveNow(String key, Limits limits, long tokens, long maxWaitNanos) {
        long cappedWaitNanos = Math.min(maxWaitNanos, MAX_WAIT_NANOS);
        long nowNanos = clock.getAsLong();
        if (limits.adaptive() != null) {
            return answer(table.updateAdaptive(key, limits, nowNanos, (tatsNanos, rate, atNanos) ->
                    AdaptiveMath.reserve(tatsNanos, rate, atNanos, tokens, limits, cappedWaitNanos)).decision());
        }
        if (limits.size() == 1) { // the fast path: one compare-and-set, no lock, no array of states
            return table.reserveOne(key, limits.get(0), tokens, cappedWaitNanos, nowNanos);
        }
        return answer(table.update(key, limits, nowNanos,
                (tatsNanos, atNanos) -> BucketMath.reserve(tatsNanos, atNanos, tokens, limits, cappedWaitNanos)));
    }

    /** The synchronous form of {@link #peek}. */
    public Reservation peekNow(String key, Limits limits, long tokens) {
        return peekAt(key, limits, tokens, clock.getAsLong());
    }

    private Reservation peekAt(String key, Limits limits, long tokens, long nowNanos) {
        if (limits.adaptive() != null) {
            return answer(table.readAdaptive(key, limits, nowNanos, (tatsNanos, rate, atNanos) ->
                    AdaptiveMath.peek(tatsNanos, rate, atNanos, tokens, limits)).decision());
        }
        return answer(BucketMath.peek(table.read(key, limits, nowNanos), nowNanos, tokens, limits));
    }

    private static Reservation answer(Decision d) {
        return new Reservation(d.granted(), d.waitTicks(), d.remaining());
    }

    /** The cases of {@link #execute}, one per command. */
    private final class Cases implements StoreCommand.Handler {

        @Override
        public CompletionStage<Choice> reserveAll(StoreCommand.ReserveAll c) {
            return CompletableFuture.completedFuture(reserveAllNow(c));
        }

        @Override
        public CompletionStage<Reservation> reserve(StoreCommand.Reserve c) {
            return CompletableFuture.completedFuture(reserveNow(c.key(), c.limits(), c.tokens(), c.maxWaitNanos()));
        }

        @Override
        public CompletionStage<Reservation> peek(StoreCommand.Peek c) {
            return CompletableFuture.completedFuture(peekNow(c.key(), c.limits(), c.tokens()));
        }

        @Override
        public CompletionStage<Reservation> refund(StoreCommand.Refund c) {
            Limits limits = c.limits();
            if (limits.adaptive() != null) {
                return CompletableFuture.completedFuture(answer(table.updateAdaptive(c.key(), limits,
                        clock.getAsLong(), (tatsNanos, rate, atNanos) ->
                                AdaptiveMath.refund(tatsNanos, rate, atNanos, c.tokens(), limits)).decision()));
            }
            return CompletableFuture.completedFuture(answer(table.update(c.key(), limits, clock.getAsLong(),
                    (tatsNanos, atNanos) -> {
                        long[] nextNanos = BucketMath.refund(tatsNanos, atNanos, c.tokens(), limits);
                        return Decision.of(true, 0, BucketMath.available(nextNanos, atNanos, limits), nextNanos);
                    })));
        }

        @Override
        public CompletionStage<Void> remove(StoreCommand.Remove c) {
            table.remove(c.key());
            return DONE;
        }

        /** Answers the state afterwards as a peek of one token. */
        @Override
        public CompletionStage<Reservation> penalize(StoreCommand.Penalize c) {
            Limits limits = c.limits();
            long penaltyNanos = Math.min(c.penaltyNanos(), MAX_PENALTY_NANOS);
            if (limits.adaptive() != null) {
                return CompletableFuture.completedFuture(answer(table.updateAdaptive(c.key(), limits,
                        clock.getAsLong(), (tatsNanos, rate, atNanos) ->
                                AdaptiveMath.penalize(tatsNanos, rate, atNanos, penaltyNanos, limits)).decision()));
            }
            return CompletableFuture.completedFuture(answer(table.update(c.key(), limits, clock.getAsLong(),
                    (tatsNanos, atNanos) -> BucketMath.peek(
                            BucketMath.penalize(tatsNanos, atNanos, penaltyNanos, limits), atNanos, 1, limits))));
        }

        @Override
        public CompletionStage<Adaptation> throttle(StoreCommand.Throttle c) {
            Limits limits = c.limits();
            BucketStore.requireAdaptive(c.key(), limits);
            Adapted a = table.updateAdaptive(c.key(), limits, clock.getAsLong(),
                    (tatsNanos, rate, atNanos) -> AdaptiveMath.throttle(tatsNanos, rate, atNanos, limits));
            return CompletableFuture.completedFuture(new Adaptation(a.cut(), a.rate().factorPpm(),
                    a.rate().starting()));
        }

        @Override
        public CompletionStage<Adaptation> rate(StoreCommand.Rate c) {
            Limits limits = c.limits();
            if (limits.adaptive() == null) {
                return CompletableFuture.completedFuture(Adaptation.CEILING);
            }
            Adapted a = table.readAdaptive(c.key(), limits, clock.getAsLong(),
                    (tatsNanos, rate, atNanos) -> AdaptiveMath.peek(tatsNanos, rate, atNanos, 1, limits));
            return CompletableFuture.completedFuture(new Adaptation(false, a.rate().factorPpm(),
                    a.rate().starting()));
        }

        /**
         * Chooses the candidate whose tokens come soonest (of equals, the one with most tokens, then the first),
         * then reserves there accepting no longer a wait than the one it chose by: if another thread took that
         * key's tokens meanwhile, the reservation is refused (nothing consumed) and the choice is made again.
         * Each step is atomic; the choice and the reservation together are as good as atomic unless the
         * candidates are taken faster than {@value #CHOICES} choices can be made, when the last choice is
         * reserved whatever its wait.
         */
        @Override
        public CompletionStage<Choice> reserveFreest(StoreCommand.ReserveFreest c) {
            List<String> keys = c.keys();
            List<Limits> limits = c.limits();
            long maxWaitNanos = Math.min(c.maxWaitNanos(), MAX_WAIT_NANOS);
            for (int attempt = 1; ; attempt++) {
                int best = 0;
                long bestWaitNanos = Long.MAX_VALUE;
                long bestRemaining = -1;
                // one instant for every candidate: with a reading each, time passing between them could make a
                // later key look sooner
                long nowNanos = clock.getAsLong();
                for (int i = 0; i < keys.size(); i++) {
                    Reservation peek = peekAt(keys.get(i), limits.get(i), c.tokens(), nowNanos);
                    if (peek.waitNanos() < bestWaitNanos
                            || peek.waitNanos() == bestWaitNanos && peek.remaining() > bestRemaining) {
                        best = i;
                        bestWaitNanos = peek.waitNanos();
                        bestRemaining = peek.remaining();
                    }
                }
                if (bestWaitNanos > maxWaitNanos) {
                    Reservation refused = peekAt(keys.get(best), limits.get(best), c.tokens(), nowNanos);
                    return CompletableFuture.completedFuture(new Choice(best,
                            new Reservation(false, refused.waitNanos(), refused.remaining())));
                }
                long acceptNanos = attempt < CHOICES ? bestWaitNanos : maxWaitNanos;
                Reservation r = reserveNow(keys.get(best), limits.get(best), c.tokens(), acceptNanos);
                if (r.granted() || attempt >= CHOICES) {
                    return CompletableFuture.completedFuture(new Choice(best, r));
                }
            }
        }
    }

    /**
     * The synchronous form of {@link #reserveAll}: every key's bucket (each candidate's group and the shared keys)
     * locked in key order, decided by {@link AdaptiveMath#reserveAll} (each key at its current rate), stored together
     * with the rate states of the keys that adapt.
     *
     * @throws IllegalArgumentException as {@link BucketStore#checkReserveAll} says
     */
    public Choice reserveAllNow(StoreCommand.ReserveAll c) {
        BucketStore.checkReserveAll(c);
        int candidates = c.keys().size();
        List<String> keys = c.named();
        List<Limits> limits = c.namedLimits();
        int[] first = new int[candidates]; // where each candidate's group starts among the keys
        for (int i = 1; i < candidates; i++) {
            first[i] = first[i - 1] + 1 + c.with().get(i - 1).size();
        }
        int shared = keys.size() - c.allOf().size();
        List<List<Limits>> groupLimits = new ArrayList<>(candidates);
        for (int i = 0; i < candidates; i++) {
            groupLimits.add(limits.subList(first[i], first[i] + 1 + c.with().get(i).size()));
        }
        long maxWaitNanos = Math.min(c.maxWaitNanos(), MAX_WAIT_NANOS);
        AllOfDecision[] decided = new AllOfDecision[1];
        table.updateAll(keys, limits, clock.getAsLong(), (tatsNanos, rates, atNanos) -> {
            long[][][] groupTats = new long[candidates][][];
            RateState[][] groupRates = new RateState[candidates][];
            for (int i = 0; i < candidates; i++) {
                int to = first[i] + groupLimits.get(i).size();
                groupTats[i] = Arrays.copyOfRange(tatsNanos, first[i], to);
                groupRates[i] = Arrays.copyOfRange(rates, first[i], to);
            }
            AllOfAdapted a = AdaptiveMath.reserveAll(groupTats, groupRates, groupLimits,
                    Arrays.copyOfRange(tatsNanos, shared, tatsNanos.length), Arrays.copyOfRange(rates, shared,
                            rates.length), c.allOfLimits(), atNanos, c.tokens(), maxWaitNanos);
            AllOfDecision d = a.decision();
            decided[0] = d;
            long[][] next = new long[tatsNanos.length][];
            if (d.granted()) {
                int size = groupLimits.get(d.chosen()).size();
                for (int i = 0; i < d.tatTicks().length; i++) {
                    int at = i < size ? first[d.chosen()] + i : shared + i - size;
                    next[at] = d.tatTicks(i);
                    rates[at] = a.rates()[i];
                }
            }
            return next;
        });
        AllOfDecision d = decided[0];
        return new Choice(d.chosen(), new Reservation(d.granted(), d.waitTicks(), d.remaining()));
    }

    /**
     * Drops every bucket that has refilled to full; safe to run concurrently with reservations.
     *
     * @return how many buckets were dropped
     */
    public int sweep() {
        return table.sweep(clock.getAsLong());
    }

    /**
     * The {@code n} keys furthest from full now, with the nanoseconds until their first limit is full again:
     * the busiest keys, for monitoring. Reads every bucket: call it from a console, not per exchange.
     */
    public List<Map.Entry<String, Long>> busiest(int n) {
        return table.busiest(n, clock.getAsLong());
    }

    /**
     * The {@code n} keys whose adaptive rate is lowest now, with their factor in parts per million of the configured
     * rate (only keys below it). Reads every bucket: call it from a console, not per exchange.
     */
    public List<Map.Entry<String, Long>> slowest(int n) {
        return table.slowest(n, clock.getAsLong());
    }

    /** The number of buckets held now: active keys, plus full ones not yet swept. */
    public int size() {
        return table.size();
    }
}
