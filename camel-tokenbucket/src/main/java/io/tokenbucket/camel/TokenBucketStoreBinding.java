package io.tokenbucket.camel;

import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.FallbackBucketStore;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.health.WritableHealthCheckRepository;

/**
 * An endpoint's bucket store and what is bound to it while the endpoint runs: the store itself (the component's
 * local buckets of the limiter name, or a Redis store behind its {@code onStoreError} policy), the Redis
 * connection lease, the readiness check (when camel-health is present) and the Micrometer meters (when Micrometer
 * is present). {@link #open()} binds them all when the endpoint starts, {@link #close()} gives them back when it
 * stops; until the first open the store is null.
 *
 * <p>Also the one place that knows the store's concrete class: where it is ({@link #description()}), how to take
 * its secrets out of a text ({@link #redact}), and how many calls its failure policy answered
 * ({@link #fallbacks()}).
 */
final class TokenBucketStoreBinding {

    private static final boolean MICROMETER_PRESENT = isPresent("io.micrometer.core.instrument.MeterRegistry");

    private final TokenBucketEndpoint endpoint;
    private volatile BucketStore store;
    /** The Redis store as opened (null for a local store), kept once closed: where it was stays readable. */
    private volatile TokenBucketRedisStores.Opened redis;
    private AutoCloseable releasesWatched; // guarded by this
    private TokenBucketHealthCheck healthCheck;
    private AutoCloseable metrics;

    /** The store binding of {@code endpoint}, opened by {@link #open()}. */
    TokenBucketStoreBinding(TokenBucketEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    /** Whether an optional dependency's class can be loaded. */
    static boolean isPresent(String className) {
        try {
            Class.forName(className, false, TokenBucketStoreBinding.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    /**
     * Opens the endpoint's store and binds its health check and meters.
     *
     * @throws TokenBucketStoreException when Redis cannot be reached, naming where it was looked for
     */
    void open() throws Exception {
        TokenBucketComponent component = endpoint.getComponent();
        if (endpoint.getConfiguration().getStore() == TokenBucketStoreType.redis) {
            redis = TokenBucketRedisStores.open(endpoint, component.redisConnections());
            store = redis.store();
            if (redis.publishes()) { // at once, so that a refused SUBSCRIBE shows before a slot is waited for
                watchReleases(() -> component.slotsReleased(endpoint.getName()));
            }
            WritableHealthCheckRepository checks = healthChecks();
            if (checks != null) {
                healthCheck = new TokenBucketHealthCheck(endpoint, redis.probe());
                checks.addHealthCheck(healthCheck);
            }
        } else {
            store = component.localStore(endpoint.getName());
        }
        if (MICROMETER_PRESENT) {
            metrics = TokenBucketMetrics.bind(endpoint);
        }
    }

    /** Unbinds the meters and the health check and gives back the Redis lease; the store stays readable. */
    void close() throws Exception {
        if (metrics != null) {
            metrics.close();
            metrics = null;
        }
        if (healthCheck != null) {
            WritableHealthCheckRepository checks = healthChecks();
            if (checks != null) {
                checks.removeHealthCheck(healthCheck);
            }
            healthCheck = null;
        }
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

    private WritableHealthCheckRepository healthChecks() {
        return HealthCheckHelper.getHealthCheckRepository(endpoint.getCamelContext(), "producers",
                WritableHealthCheckRepository.class);
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
