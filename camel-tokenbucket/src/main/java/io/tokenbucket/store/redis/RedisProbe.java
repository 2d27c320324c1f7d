package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;

/**
 * The health probe of one shared connection: a {@code PING}, whose answer is kept for {@link #FRESH_NANOS}. Any
 * number of endpoints on one Redis then ask it at most once a second, and at most one {@code PING} is in flight:
 * a health request over ten endpoints of a frozen Redis waits one timeout, not ten.
 */
final class RedisProbe {

    /** How long an answer is reused. */
    static final long FRESH_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** A probe's answer: when it came, and the failure, or null when Redis answered. */
    private record Answer(long atNanos, Throwable failure) {
    }

    private final Supplier<RedisClusterAsyncCommands<String, String>> commands;
    private final Supplier<Throwable> notConnected;
    private volatile Answer last;
    private CompletableFuture<Throwable> inFlight;

    /**
     * @param commands     the connection's commands, null while it is not open
     * @param notConnected why it is not open
     */
    RedisProbe(Supplier<RedisClusterAsyncCommands<String, String>> commands, Supplier<Throwable> notConnected) {
        this.commands = commands;
        this.notConnected = notConnected;
    }

    /**
     * Whether Redis answers: null when it answered a {@code PING} within {@code timeout} (now or in the last
     * second), else why not, with a message that says so.
     */
    Throwable check(Duration timeout) {
        Answer answer = last;
        if (answer != null && System.nanoTime() - answer.atNanos() < FRESH_NANOS) {
            return answer.failure();
        }
        CompletableFuture<Throwable> ping;
        synchronized (this) {
            if (inFlight == null || inFlight.isDone()) {
                inFlight = ping(timeout);
            }
            ping = inFlight;
        }
        try {
            return ping.get(timeout.toNanos() + TimeUnit.MILLISECONDS.toNanos(100), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return e;
        } catch (ExecutionException | TimeoutException e) {
            return didNotAnswer(timeout); // the ping's own timeout ends it first; this is a bound only
        }
    }

    private CompletableFuture<Throwable> ping(Duration timeout) {
        RedisClusterAsyncCommands<String, String> c = commands.get();
        if (c == null) {
            Throwable why = notConnected.get();
            Throwable failure = why != null ? why : new IllegalStateException("not connected to Redis yet");
            last = new Answer(System.nanoTime(), failure);
            return CompletableFuture.completedFuture(failure);
        }
        return c.ping().toCompletableFuture().orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
                .handle((pong, error) -> {
                    Throwable cause = error == null ? null : BucketScript.unwrap(error);
                    Throwable failure = cause == null ? null
                            : cause instanceof TimeoutException ? didNotAnswer(timeout) : cause;
                    last = new Answer(System.nanoTime(), failure);
                    return failure;
                });
    }

    private static TimeoutException didNotAnswer(Duration timeout) {
        return new TimeoutException("no answer to a PING within " + timeout.toMillis() + " ms (storeTimeout)");
    }
}
