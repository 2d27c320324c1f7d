package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * A probe of Redis, whose answer is kept for {@link #FRESH_NANOS}: the one of a shared connection (a script call of
 * {@code TIME} alone, that Redis answers: any number of endpoints on one Redis ask it at most once a second, and at
 * most one is in flight, so a health request over ten endpoints of a frozen Redis waits one timeout, not ten), and
 * a store's own ({@link RedisBucketStore#probe}). No {@code PING}: a probe sends only commands the store sends anyway,
 * so a least-privilege ACL user needs nothing more for readiness.
 */
final class RedisProbe {

    /** How long an answer is reused. */
    static final long FRESH_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** A probe's answer: when it came, and the failure, or null when Redis answered. */
    private record Answer(long atNanos, Throwable failure) {
    }

    private final Supplier<CompletableFuture<?>> call;
    private final Supplier<Throwable> notConnected;
    private volatile Answer last;
    private CompletableFuture<Throwable> inFlight;

    /**
     * @param call         sends the probe; gives null while the connection is not open
     * @param notConnected why it is not open (null: not known)
     */
    RedisProbe(Supplier<CompletableFuture<?>> call, Supplier<Throwable> notConnected) {
        this.call = call;
        this.notConnected = notConnected;
    }

    /**
     * Whether Redis answers: null when it answered the probe within {@code timeout} (now or in the last second),
     * else why not, with a message that says so (a {@link io.tokenbucket.store.StoreRefusedException} when Redis
     * refused it).
     */
    Throwable check(Duration timeout) {
        Answer answer = last;
        if (answer != null && System.nanoTime() - answer.atNanos() < FRESH_NANOS) {
            return answer.failure();
        }
        CompletableFuture<Throwable> probe;
        synchronized (this) {
            if (inFlight == null || inFlight.isDone()) {
                inFlight = probe(timeout);
            }
            probe = inFlight;
        }
        try {
            return probe.get(timeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(100), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return e;
        } catch (ExecutionException | TimeoutException e) {
            return didNotAnswer(timeout); // the probe's own timeout ends it first; this is a bound only
        }
    }

    /** Drops the answer kept, so that the next {@link #check} asks Redis (a call was refused meanwhile). */
    void forget() {
        last = null;
    }

    private CompletableFuture<Throwable> probe(Duration timeout) {
        CompletableFuture<?> sent;
        try {
            sent = call.get();
        } catch (RuntimeException e) {
            sent = CompletableFuture.failedFuture(e);
        }
        if (sent == null) {
            Throwable why = notConnected.get();
            Throwable failure = why != null ? why : new IllegalStateException("not connected to Redis yet");
            last = new Answer(System.nanoTime(), failure);
            return CompletableFuture.completedFuture(failure);
        }
        return sent.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .handle((reply, error) -> {
                    Throwable cause = error == null ? null : RedisRefusals.classify(error);
                    Throwable failure = cause == null ? null
                            : cause instanceof TimeoutException ? didNotAnswer(timeout) : cause;
                    last = new Answer(System.nanoTime(), failure);
                    return failure;
                });
    }

    private static TimeoutException didNotAnswer(Duration timeout) {
        return new TimeoutException("no answer within " + timeout.toMillis() + " ms (storeTimeout)");
    }
}
