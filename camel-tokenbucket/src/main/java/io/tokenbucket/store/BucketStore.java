package io.tokenbucket.store;

import java.util.concurrent.CompletionStage;

import io.tokenbucket.math.Limit;

/**
 * The buckets of one limiter, keyed by a string, each updated atomically by
 * {@link io.tokenbucket.math.BucketMath}.
 *
 * <p>Limits are passed with every call (ticks are nanoseconds), so a store keeps nothing but each key's
 * state and the same key may be used with another limit later. Results are asynchronous: the local store
 * returns completed stages, a remote store completes them on its I/O thread, so callers must not block in
 * their continuations. Keys are expected bounded already ({@link BucketKeys#bound(String)}).
 */
public interface BucketStore extends AutoCloseable {

    /**
     * Reserves {@code tokens} tokens on {@code key}, or refuses and consumes nothing when they would take
     * longer than {@code maxWaitNanos} to arrive.
     *
     * @param maxWaitNanos the longest acceptable wait in nanoseconds: 0 never waits,
     *                     {@link io.tokenbucket.math.BucketMath#NO_LIMIT} accepts any wait
     */
    CompletionStage<Reservation> reserve(String key, Limit limit, long tokens, long maxWaitNanos);

    /** What a reservation of {@code tokens} would get now, without consuming anything. */
    CompletionStage<Reservation> peek(String key, Limit limit, long tokens);

    /** Gives {@code tokens} back to {@code key}, never above its capacity. */
    CompletionStage<Void> refund(String key, Limit limit, long tokens);

    /** Drops the state of {@code key}: its bucket starts full next time. */
    CompletionStage<Void> remove(String key);

    /** Releases what the store holds; the default holds nothing. */
    @Override
    default void close() {
    }
}
