package io.tokenbucket.store;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.LongSupplier;

import io.tokenbucket.math.Limits;

/**
 * A remote store with a policy for its failures: each call goes to the primary store; when that fails (an
 * error or a timeout) the call goes to the fallback instead, or fails when there is none. After a failure the
 * primary is left alone for {@link #PROBE_INTERVAL_NANOS} (calls go straight to the fallback, or fail at once),
 * then tried again, so a dead Redis costs one timeout per second, not one per exchange.
 *
 * <p>The fallback decides the policy: none fails the exchange; {@link #ALLOW_ALL} admits it; a local store
 * throttles it locally with the same limits.
 */
public final class FallbackBucketStore implements BucketStore {

    /** How long the primary is bypassed after a failure before it is tried again. */
    public static final long PROBE_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** A store that grants every request at once and keeps nothing: the {@code allow} policy. */
    public static final BucketStore ALLOW_ALL = new BucketStore() {
        @Override
        public CompletionStage<Reservation> reserve(String key, Limits limits, long tokens, long maxWaitNanos) {
            return CompletableFuture.completedFuture(new Reservation(true, 0, limits.capacity()));
        }

        @Override
        public CompletionStage<Reservation> peek(String key, Limits limits, long tokens) {
            return reserve(key, limits, tokens, 0);
        }

        @Override
        public CompletionStage<Reservation> refund(String key, Limits limits, long tokens) {
            return reserve(key, limits, tokens, 0);
        }

        @Override
        public CompletionStage<Void> remove(String key) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletionStage<Reservation> penalize(String key, Limits limits, long penaltyNanos) {
            return reserve(key, limits, 1, 0);
        }

        @Override
        public CompletionStage<Choice> reserveFreest(List<String> keys, List<Limits> limits, long tokens,
                                                     long maxWaitNanos) {
            return reserve(keys.get(0), limits.get(0), tokens, maxWaitNanos).thenApply(r -> new Choice(0, r));
        }
    };

    private final BucketStore primary;
    private final BucketStore fallback;
    private final LongSupplier clock;
    private final LongAdder failures = new LongAdder();
    private final LongAdder fallbacks = new LongAdder();
    private volatile long bypassUntil;
    private volatile Throwable lastFailure;

    /**
     * @param primary  the store to use while it answers
     * @param fallback the store to use while it does not, or null to fail those calls
     * @param clock    a monotonic nanosecond clock
     */
    public FallbackBucketStore(BucketStore primary, BucketStore fallback, LongSupplier clock) {
        this.primary = primary;
        this.fallback = fallback;
        this.clock = clock;
        this.bypassUntil = clock.getAsLong();
    }

    @Override
    public CompletionStage<Reservation> reserve(String key, Limits limits, long tokens, long maxWaitNanos) {
        return call(s -> s.reserve(key, limits, tokens, maxWaitNanos));
    }

    @Override
    public CompletionStage<Reservation> peek(String key, Limits limits, long tokens) {
        return call(s -> s.peek(key, limits, tokens));
    }

    @Override
    public CompletionStage<Reservation> refund(String key, Limits limits, long tokens) {
        return call(s -> s.refund(key, limits, tokens));
    }

    @Override
    public CompletionStage<Void> remove(String key) {
        return call(s -> s.remove(key));
    }

    @Override
    public CompletionStage<Reservation> penalize(String key, Limits limits, long penaltyNanos) {
        return call(s -> s.penalize(key, limits, penaltyNanos));
    }

    @Override
    public CompletionStage<Choice> reserveFreest(List<String> keys, List<Limits> limits, long tokens,
                                                 long maxWaitNanos) {
        return call(s -> s.reserveFreest(keys, limits, tokens, maxWaitNanos));
    }

    /** Calls that failed on the primary store (including timeouts). */
    public long failures() {
        return failures.sum();
    }

    /** Calls answered by the fallback (the {@code allow} or {@code local} policy at work). */
    public long fallbacks() {
        return fallbacks.sum();
    }

    /** True while the primary is bypassed after a failure. */
    public boolean isBypassing() {
        return clock.getAsLong() - bypassUntil < 0;
    }

    private <T> CompletionStage<T> call(Function<BucketStore, CompletionStage<T>> op) {
        if (isBypassing()) {
            return onFailure(op, lastFailure);
        }
        CompletableFuture<T> first;
        try {
            first = op.apply(primary).toCompletableFuture();
        } catch (IllegalArgumentException e) {
            throw e; // the caller's mistake, not the store's
        } catch (RuntimeException e) {
            first = CompletableFuture.failedFuture(e);
        }
        return first.handle((value, failure) -> {
            if (failure == null) {
                return CompletableFuture.completedFuture(value);
            }
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                    ? failure.getCause() : failure;
            failures.increment();
            lastFailure = cause;
            bypassUntil = clock.getAsLong() + PROBE_INTERVAL_NANOS;
            return onFailure(op, cause).toCompletableFuture();
        }).thenCompose(f -> f);
    }

    private <T> CompletionStage<T> onFailure(Function<BucketStore, CompletionStage<T>> op, Throwable cause) {
        if (fallback == null) {
            return CompletableFuture.failedFuture(cause);
        }
        fallbacks.increment();
        return op.apply(fallback);
    }
}
