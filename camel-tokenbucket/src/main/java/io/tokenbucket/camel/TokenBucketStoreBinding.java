package io.tokenbucket.camel;

import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.FallbackBucketStore;
import io.tokenbucket.store.local.LocalBucketStore;
import io.tokenbucket.store.redis.RedisConnections;
import org.apache.camel.CamelContext;

/**
 * An endpoint's bucket store and what is bound to it while the endpoint runs: the store itself (the component's
 * local buckets of the limiter name, or a Redis store behind its {@code onStoreError} policy), the Redis
 * connection lease and the subscription to the releases of in-flight slots. {@link #open} binds them when the
 * endpoint starts, {@link #close()} gives them back when it stops; until the first open the store is null.
 *
 * <p>Also the one place that knows the store's concrete class: where it is ({@link #description()}), how to take
 * its secrets out of a text ({@link #redact}), how many calls its failure policy answered ({@link #fallbacks()}),
 * and how a failed call reads ({@link #failed}).
 */
final class TokenBucketStoreBinding {

    private final String name;
    private final TokenBucketConfiguration configuration;
    private final TokenBucketStatistics statistics;
    /** Whether the endpoint's keys have in-flight limits (their releases are then published), asked at open. */
    private final BooleanSupplier publishes;
    private volatile BucketStore store;
    /** The Redis store as opened (null for a local store), kept once closed: where it was stays readable. */
    private volatile TokenBucketRedisStores.Opened redis;
    private AutoCloseable releasesWatched; // guarded by this

    /**
     * The store binding of the endpoint {@code name}, opened by {@link #open}.
     *
     * @param publishes whether the endpoint's keys have in-flight limits, whose releases a Redis store publishes
     */
    TokenBucketStoreBinding(String name, TokenBucketConfiguration configuration, TokenBucketStatistics statistics,
                            BooleanSupplier publishes) {
        this.name = name;
        this.configuration = configuration;
        this.statistics = statistics;
        this.publishes = publishes;
    }

    /**
     * Opens the endpoint's store: the limiter's local buckets, or its Redis store.
     *
     * @param camel       the Camel context, whose registry may hold the application's Redis client
     * @param local       the component's local buckets of the limiter name (the store, or Redis's local fallback)
     * @param connections the component's Redis connections
     * @param onRelease   wakes the waiters of the limiter name when another instance releases a slot
     * @throws TokenBucketStoreException when Redis cannot be reached, naming where it was looked for
     */
    void open(CamelContext camel, Supplier<LocalBucketStore> local, Supplier<RedisConnections> connections,
              Runnable onRelease) throws Exception {
        if (configuration.getStore() == TokenBucketStoreType.redis) {
            redis = TokenBucketRedisStores.open(name, configuration, statistics, publishes.getAsBoolean(),
                    camel.getRegistry(), connections.get(), local);
            store = redis.store();
            if (redis.publishes()) { // at once, so that a refused SUBSCRIBE shows before a slot is waited for
                watchReleases(onRelease);
            }
        } else {
            store = local.get();
        }
    }

    /** Gives back the Redis lease and the subscription; the store stays readable. */
    void close() throws Exception {
        synchronized (this) {
            if (releasesWatched != null) {
                releasesWatched.close();
                releasesWatched = null;
            }
        }
        if (redis != null) {
            redis.lease().close(); // a lease is given back once, however often it is closed
        }
    }

    /**
     * On a Redis store, calls {@code onRelease} whenever any instance releases an in-flight slot that waiters asked
     * for (the store publishes it), from the first call until the binding closes; once per binding. The subscription
     * is made in the background (never on the calling thread); until it is, the waiters' own poll finds the slots.
     */
    synchronized void watchReleases(Runnable onRelease) {
        if (releasesWatched == null && redis != null) {
            releasesWatched = redis.releases().apply(onRelease);
        }
    }

    /** The readiness probe of a Redis store (null when it answered, else why not); null for a local store. */
    Supplier<Throwable> probe() {
        TokenBucketRedisStores.Opened opened = redis;
        return opened == null ? null : opened.probe();
    }

    /** The buckets of the endpoint's limiter; null before the endpoint first started. */
    BucketStore store() {
        return store;
    }

    /** Where the buckets live, for messages: {@code local} or {@code redis at redis://***@host:6379}. */
    String description() {
        TokenBucketRedisStores.Opened opened = redis;
        return opened == null ? "local" : opened.where();
    }

    /** {@code text} (a store failure's message) without the store's secrets, for messages; null stays null. */
    String redact(String text) {
        TokenBucketRedisStores.Opened opened = redis;
        return opened == null ? text : opened.redact().apply(text);
    }

    /**
     * The exception of an exchange whose store call failed or timed out ({@code onStoreError=fail}), or was refused
     * (under every policy), naming the store without its secrets.
     */
    TokenBucketStoreException failed(Throwable failure) {
        return TokenBucketExceptions.storeFailed(name, description(), this::redact, configuration.getStoreTimeout(),
                failure);
    }

    /** Store calls answered by the {@code onStoreError} policy (allow or local) because Redis did not answer. */
    long fallbacks() {
        return store instanceof FallbackBucketStore f ? f.fallbacks() : 0;
    }

    /** Store calls Redis refused (a permission, a script error): failed under every policy. */
    long refusals() {
        return store instanceof FallbackBucketStore f ? f.refusals() : 0;
    }

    /** Whether the store is answered by its {@code onStoreError} policy now (Redis did not answer lately). */
    boolean inFallback() {
        return store instanceof FallbackBucketStore f && f.isBypassing();
    }
}
