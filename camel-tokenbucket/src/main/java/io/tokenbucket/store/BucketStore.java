package io.tokenbucket.store;

import java.util.List;
import java.util.concurrent.CompletionStage;

import io.tokenbucket.math.Limits;

/**
 * The buckets of one limiter, keyed by a string, each updated atomically by
 * {@link io.tokenbucket.math.BucketMath}.
 *
 * <p>Limits are passed with every call (ticks are nanoseconds), so a store keeps nothing but each key's
 * state, and a key's limits may change from one call to the next: its state carries over position by position
 * (each limit keeps the time until it is full again). Results are asynchronous: the local store returns
 * completed stages, a remote store completes them on its I/O thread, so callers must not block in their
 * continuations. Keys are expected bounded already ({@link BucketKeys#bound(String)}).
 */
public interface BucketStore extends AutoCloseable {

    /**
     * Reserves {@code tokens} tokens on {@code key}, or refuses and consumes nothing when they would take
     * longer than {@code maxWaitNanos} to arrive.
     *
     * @param maxWaitNanos the longest acceptable wait in nanoseconds: 0 never waits,
     *                     {@link io.tokenbucket.math.BucketMath#NO_LIMIT} accepts any wait
     */
    CompletionStage<Reservation> reserve(String key, Limits limits, long tokens, long maxWaitNanos);

    /** What a reservation of {@code tokens} would get now, without consuming anything. */
    CompletionStage<Reservation> peek(String key, Limits limits, long tokens);

    /** Gives {@code tokens} back to {@code key}, never above its capacity; answers the tokens now remaining. */
    CompletionStage<Reservation> refund(String key, Limits limits, long tokens);

    /** Drops the state of {@code key}: its bucket starts full next time. */
    CompletionStage<Void> remove(String key);

    /**
     * Makes {@code key} unavailable for {@code penaltyNanos}: no token before then, after which it refills from
     * empty; a longer debt already owed is kept. Answers the state afterwards (as a peek of one token).
     */
    CompletionStage<Reservation> penalize(String key, Limits limits, long penaltyNanos);

    /**
     * Reserves {@code tokens} on whichever of {@code keys} has them soonest (of equals, the one with the most
     * tokens, then the first), as
     * {@link #reserve} would on that key.
     *
     * @param limits the limits of each key, in the same order
     */
    CompletionStage<Choice> reserveFreest(List<String> keys, List<Limits> limits, long tokens, long maxWaitNanos);

    /** Releases what the store holds; the default holds nothing. */
    @Override
    default void close() {
    }
}
