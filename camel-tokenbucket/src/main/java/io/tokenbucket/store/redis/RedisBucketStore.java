package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.Reservation;

/**
 * Buckets in Redis, one string key per bucket holding its {@code tat} in microseconds of the Redis clock, with
 * a TTL at the moment it is full again (so idle keys expire by themselves and cost nothing).
 *
 * <p>Each operation is one round trip: {@link BucketScript} reads, decides and writes atomically, whatever the
 * contention; no compare-and-set loop, no polling. Time is Redis {@code TIME}, so Camel instances whose clocks
 * disagree share one timeline. Works on a standalone Redis and on a Redis Cluster (one key per script call).
 *
 * <p>Keys are {@code <keyPrefix><limiter name>:<key>} ({@link #namespace}). Every call fails its stage with
 * {@link java.util.concurrent.TimeoutException} when Redis has not answered within the store timeout.
 */
public final class RedisBucketStore implements BucketStore {

    private static final long MICROS_PER_NANO = 1000;

    private final RedisClusterAsyncCommands<String, String> commands;
    private final BucketScript script;
    private final String namespace;
    private final long timeoutNanos;

    /**
     * @param commands  Lettuce's asynchronous commands of a standalone or cluster connection
     * @param namespace the prefix of this limiter's keys, {@code <keyPrefix><name>:}
     * @param timeout   how long one call may take before its stage fails
     */
    public RedisBucketStore(RedisClusterAsyncCommands<String, String> commands, String namespace, Duration timeout) {
        this.commands = commands;
        this.script = new BucketScript(commands);
        this.namespace = namespace;
        this.timeoutNanos = timeout.toNanos();
    }

    /**
     * The namespace of a limiter's keys: {@code <keyPrefix><name>:}, with {@code %} and {@code :} in the name
     * escaped ({@code %25}, {@code %3A}) so that two limiters can never share a key: limiter {@code a} with key
     * {@code b:c} and limiter {@code a:b} with key {@code c} stay apart.
     */
    public static String namespace(String keyPrefix, String limiterName) {
        return keyPrefix + limiterName.replace("%", "%25").replace(":", "%3A") + ":";
    }

    /** The Redis key of a bucket key. */
    public String redisKey(String key) {
        return namespace + key;
    }

    @Override
    public CompletionStage<Reservation> reserve(String key, Limit limit, long tokens, long maxWaitNanos) {
        limit.cost(tokens); // fails at once, without a round trip, for a cost that can never be satisfied
        long maxWait = maxWaitNanos == BucketMath.NO_LIMIT ? -1 : ceilMicros(maxWaitNanos);
        return call(key, "reserve", limit, tokens, maxWait);
    }

    @Override
    public CompletionStage<Reservation> peek(String key, Limit limit, long tokens) {
        limit.cost(tokens);
        return call(key, "peek", limit, tokens, -1);
    }

    @Override
    public CompletionStage<Void> refund(String key, Limit limit, long tokens) {
        return call(key, "refund", limit, Math.min(tokens, limit.capacity()), -1).thenApply(r -> null);
    }

    @Override
    public CompletionStage<Void> remove(String key) {
        return timed(commands.del(redisKey(key)).toCompletableFuture()).thenApply(n -> null);
    }

    private CompletableFuture<Reservation> call(String key, String op, Limit limit, long tokens, long maxWaitMicros) {
        // the interval in microseconds, rounded up again: never faster than the nanosecond limit
        long intervalMicros = Math.max(1, (limit.interval() + MICROS_PER_NANO - 1) / MICROS_PER_NANO);
        return timed(script.run(commands, redisKey(key), op, Long.toString(limit.capacity()),
                Long.toString(intervalMicros), Long.toString(tokens), Long.toString(maxWaitMicros)))
                .thenApply(RedisBucketStore::reservation);
    }

    private static Reservation reservation(List<Long> reply) {
        return new Reservation(reply.get(0) == 1, reply.get(1) * MICROS_PER_NANO, reply.get(2));
    }

    private <T> CompletableFuture<T> timed(CompletableFuture<T> future) {
        return future.orTimeout(timeoutNanos, TimeUnit.NANOSECONDS);
    }

    private static long ceilMicros(long nanos) {
        return nanos / MICROS_PER_NANO + (nanos % MICROS_PER_NANO == 0 ? 0 : 1);
    }
}
