package io.tokenbucket.store;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletionStage;

import io.tokenbucket.math.Limits;

/**
 * One operation on a {@link BucketStore}, as data: what {@link BucketStore#execute} runs. There is one record per
 * operation; {@code R} is what the operation answers.
 *
 * <p>A store answers a command through its {@link Handler}, one method per record ({@link #sendTo}). That visitor
 * is the dispatch because Java 17 has no pattern-matching {@code switch}: an {@code instanceof} chain would need
 * an unchecked cast per case and would compile on with a case missing, whereas adding a record here adds a method
 * to {@link Handler}, so every store fails to compile until it has its case, and each case returns its own type.
 * Adding an operation costs one record and one case per store.
 *
 * <p>Keys are bounded already ({@link BucketKeys#bound}); limits travel with every command (ticks are
 * nanoseconds). Records check nothing themselves: each store validates the numbers as it always has.
 *
 * @param <R> the answer: {@link Reservation}, {@link Choice}, {@link Adaptation}, or {@link Void}
 */
public sealed interface StoreCommand<R> permits StoreCommand.Reserve, StoreCommand.Peek, StoreCommand.Refund,
        StoreCommand.Remove, StoreCommand.Penalize, StoreCommand.ReserveFreest, StoreCommand.ReserveAll,
        StoreCommand.Throttle, StoreCommand.Rate {

    /** Runs this command on {@code handler}'s case for it. */
    CompletionStage<R> sendTo(Handler handler);

    /** A store's cases: one per command record, each answering as that record's operation documents. */
    interface Handler {

        /** Answers {@link Reserve}. */
        CompletionStage<Reservation> reserve(Reserve command);

        /** Answers {@link Peek}. */
        CompletionStage<Reservation> peek(Peek command);

        /** Answers {@link Refund}. */
        CompletionStage<Reservation> refund(Refund command);

        /** Answers {@link Remove}. */
        CompletionStage<Void> remove(Remove command);

        /** Answers {@link Penalize}. */
        CompletionStage<Reservation> penalize(Penalize command);

        /** Answers {@link ReserveFreest}. */
        CompletionStage<Choice> reserveFreest(ReserveFreest command);

        /** Answers {@link ReserveAll}. */
        CompletionStage<Choice> reserveAll(ReserveAll command);

        /** Answers {@link Throttle}. */
        CompletionStage<Adaptation> throttle(Throttle command);

        /** Answers {@link Rate}. */
        CompletionStage<Adaptation> rate(Rate command);
    }

    /**
     * Reserves {@code tokens} on {@code key}, or refuses and consumes nothing when they would take longer than
     * {@code maxWaitNanos} to arrive ({@link BucketStore#reserve}).
     *
     * @param maxWaitNanos the longest acceptable wait in nanoseconds: 0 never waits, anything from
     *                     {@link BucketStore#MAX_WAIT_NANOS} up accepts any wait up to that ceiling
     */
    record Reserve(String key, Limits limits, long tokens, long maxWaitNanos) implements StoreCommand<Reservation> {
        @Override
        public CompletionStage<Reservation> sendTo(Handler handler) {
            return handler.reserve(this);
        }
    }

    /** What a reservation of {@code tokens} would get now, without consuming anything ({@link BucketStore#peek}). */
    record Peek(String key, Limits limits, long tokens) implements StoreCommand<Reservation> {
        @Override
        public CompletionStage<Reservation> sendTo(Handler handler) {
            return handler.peek(this);
        }
    }

    /** Gives {@code tokens} (any number from 1) back to {@code key}, never past full ({@link BucketStore#refund}). */
    record Refund(String key, Limits limits, long tokens) implements StoreCommand<Reservation> {
        @Override
        public CompletionStage<Reservation> sendTo(Handler handler) {
            return handler.refund(this);
        }
    }

    /** Drops the state of {@code key} ({@link BucketStore#remove}). */
    record Remove(String key) implements StoreCommand<Void> {
        @Override
        public CompletionStage<Void> sendTo(Handler handler) {
            return handler.remove(this);
        }
    }

    /**
     * Makes {@code key} unavailable for {@code penaltyNanos} nanoseconds, at most
     * {@link BucketStore#MAX_PENALTY_NANOS} ({@link BucketStore#penalize}).
     */
    record Penalize(String key, Limits limits, long penaltyNanos) implements StoreCommand<Reservation> {
        @Override
        public CompletionStage<Reservation> sendTo(Handler handler) {
            return handler.penalize(this);
        }
    }

    /**
     * Reserves {@code tokens} on whichever of {@code keys} has them soonest ({@link BucketStore#reserveFreest}).
     *
     * @param limits       the limits of each key, in the same order
     * @param maxWaitNanos as for {@link Reserve}
     */
    record ReserveFreest(List<String> keys, List<Limits> limits, long tokens, long maxWaitNanos)
            implements StoreCommand<Choice> {
        @Override
        public CompletionStage<Choice> sendTo(Handler handler) {
            return handler.reserveFreest(this);
        }
    }

    /**
     * Reserves {@code tokens} on one of {@code keys} (the freest, counting the shared keys' waits) together with the
     * keys charged with it ({@code with}), and on every key of {@code allOf}, atomically: all are charged or none
     * ({@link BucketStore#reserveAll}). Each key is charged at its current rate when its limits adapt.
     *
     * @param keys         the candidates, at least one; one key for a plain all-of acquire
     * @param limits       the limits of each candidate, in the same order
     * @param with         for each candidate, in the same order, the keys charged with it when it is chosen (its
     *                     group: a proxy's (proxy, host) pair key), each list possibly empty
     * @param withLimits   the limits of each of those keys, in the same layout
     * @param allOf        the shared keys, charged whichever candidate is chosen; every key of every list distinct
     * @param allOfLimits  the limits of each shared key, in the same order
     * @param maxWaitNanos as for {@link Reserve}
     */
    record ReserveAll(List<String> keys, List<Limits> limits, List<List<String>> with,
                      List<List<Limits>> withLimits, List<String> allOf, List<Limits> allOfLimits, long tokens,
                      long maxWaitNanos) implements StoreCommand<Choice> {

        /** A reservation whose candidates are charged alone (no key charged with any of them). */
        public ReserveAll(List<String> keys, List<Limits> limits, List<String> allOf, List<Limits> allOfLimits,
                          long tokens, long maxWaitNanos) {
            this(keys, limits, Collections.nCopies(keys.size(), List.of()),
                    Collections.nCopies(keys.size(), List.of()), allOf, allOfLimits, tokens, maxWaitNanos);
        }

        /** Every key this command names: each candidate followed by its group's keys, then the shared keys. */
        public List<String> named() {
            List<String> named = new ArrayList<>();
            for (int c = 0; c < keys.size(); c++) {
                named.add(keys.get(c));
                named.addAll(with.get(c));
            }
            named.addAll(allOf);
            return named;
        }

        /** The limits of {@link #named()}, at the same positions. */
        public List<Limits> namedLimits() {
            List<Limits> named = new ArrayList<>();
            for (int c = 0; c < keys.size(); c++) {
                named.add(limits.get(c));
                named.addAll(withLimits.get(c));
            }
            named.addAll(allOfLimits);
            return named;
        }

        /** True when some candidate has keys charged with it. */
        public boolean grouped() {
            for (List<String> group : with) {
                if (!group.isEmpty()) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public CompletionStage<Choice> sendTo(Handler handler) {
            return handler.reserveAll(this);
        }
    }

    /**
     * A {@code throttled} signal on {@code key}, whose limits must be adaptive ({@link Limits#adaptive()}): cuts its
     * rate unless the last cut still holds ({@link BucketStore#throttle}).
     */
    record Throttle(String key, Limits limits) implements StoreCommand<Adaptation> {
        @Override
        public CompletionStage<Adaptation> sendTo(Handler handler) {
            return handler.throttle(this);
        }
    }

    /** The current rate of {@code key}, changing nothing ({@link BucketStore#rate}). */
    record Rate(String key, Limits limits) implements StoreCommand<Adaptation> {
        @Override
        public CompletionStage<Adaptation> sendTo(Handler handler) {
            return handler.rate(this);
        }
    }
}
