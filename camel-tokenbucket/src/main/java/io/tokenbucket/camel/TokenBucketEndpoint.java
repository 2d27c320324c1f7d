package io.tokenbucket.camel;

import java.util.function.Supplier;

import io.tokenbucket.camel.observe.TokenBucketHealthCheck;
import io.tokenbucket.camel.observe.TokenBucketMetrics;
import io.tokenbucket.camel.producer.TokenBucketKeyLists;
import io.tokenbucket.camel.producer.TokenBucketLimitSource;
import io.tokenbucket.camel.producer.TokenBucketProducer;
import io.tokenbucket.camel.producer.TokenBucketRequest;
import io.tokenbucket.camel.producer.TokenBucketServices;
import io.tokenbucket.camel.producer.TokenBucketStoreBinding;
import io.tokenbucket.camel.producer.TokenBucketWaitQueue;
import io.tokenbucket.camel.redis.TokenBucketRedisStores;
import io.tokenbucket.camel.producer.TokenBucketRequest.Key;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.local.LocalBucketStore;
import org.apache.camel.Category;
import org.apache.camel.Component;
import org.apache.camel.Consumer;
import org.apache.camel.Processor;
import org.apache.camel.Producer;
import org.apache.camel.api.management.ManagedAttribute;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.health.WritableHealthCheckRepository;
import org.apache.camel.api.management.ManagedOperation;
import org.apache.camel.api.management.ManagedResource;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.UriEndpoint;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriPath;
import org.apache.camel.support.DefaultEndpoint;
import org.apache.camel.util.ObjectHelper;

/**
 * Throttles exchanges per key with a token bucket, in memory or in Redis: each exchange takes its cost in
 * tokens from the bucket of its key (a header) and waits, fails or is marked when they are not there yet.
 *
 * <p>The endpoint is what Camel and JMX see: its options ({@link TokenBucketConfiguration}), its counters
 * ({@link TokenBucketStatistics}) and its managed attributes and operations. Its work is done by named roles: the
 * limits of each key come from {@link TokenBucketLimitSource}, the store from {@link TokenBucketStoreBinding}; each
 * exchange is read by {@link TokenBucketRequest}, decided by {@link TokenBucketProducer}, and, when it must wait,
 * held by {@link TokenBucketWaitQueue}. Those roles get what they work with as one {@link TokenBucketServices}, not
 * the endpoint. While it runs, the endpoint binds its readiness check ({@link TokenBucketHealthCheck}, a Redis store
 * with camel-health) and its meters ({@link TokenBucketMetrics}, with Micrometer).
 */
@UriEndpoint(firstVersion = "0.1.0", scheme = "tokenbucket", title = "Token Bucket", syntax = "tokenbucket:name",
             producerOnly = true, remote = false, category = { Category.CORE, Category.CLUSTERING },
             headersClass = TokenBucketConstants.class)
@ManagedResource(description = "Managed TokenBucketEndpoint")
public class TokenBucketEndpoint extends DefaultEndpoint {

    private static final boolean MICROMETER_PRESENT =
            ObjectHelper.loadClass("io.micrometer.core.instrument.MeterRegistry",
                    TokenBucketEndpoint.class.getClassLoader()) != null;

    @UriPath(description = "The limiter name. Endpoints with the same name share their buckets; keys are"
            + " scoped to the name.")
    @Metadata(required = true)
    private final String name;

    @UriParam
    private final TokenBucketConfiguration configuration;

    private final TokenBucketStatistics statistics = new TokenBucketStatistics();
    private final TokenBucketLimitSource limitSource;
    private final TokenBucketStoreBinding storeBinding = new TokenBucketStoreBinding();
    private final TokenBucketShared shared;
    private final TokenBucketServices services;
    private final TokenBucketWaitQueue queue;
    /** The readiness check of a Redis store while the endpoint runs (with camel-health), else null. */
    private TokenBucketHealthCheck healthCheck;
    /** The endpoint's meters while it runs (with Micrometer), else null. */
    private AutoCloseable metrics;

    TokenBucketEndpoint(String uri, Component component, TokenBucketShared shared, String name,
                        TokenBucketConfiguration configuration) {
        super(uri, component);
        this.shared = shared;
        this.name = name;
        this.configuration = configuration;
        this.limitSource = new TokenBucketLimitSource(configuration);
        this.services = new TokenBucketServices(name, configuration, statistics, storeBinding, shared::timer,
                shared::worker, shared::handOff, () -> shared.slotsReleased(name));
        this.queue = new TokenBucketWaitQueue(services,
                (attempt, accept, lease) -> TokenBucketProducer.reserve(storeBinding.store(), attempt, accept, lease));
    }

    /** Checks the options once they are all set; a bad one fails endpoint creation, naming it. */
    void validate() {
        limitSource.validate();
        TokenBucketKeyLists.allOfOption(configuration);
    }

    @Override
    protected void doStart() throws Exception {
        super.doStart();
        if (limitSource.limits() == null) { // not validated yet
            validate();
        }
        if (configuration.getStore() == TokenBucketStoreType.redis) {
            storeBinding.open(TokenBucketRedisStores.open(name, configuration, statistics,
                    limitSource.limitsInFlight(), getCamelContext().getRegistry(), shared.redisConnections(),
                    () -> shared.localStore(name)), services::slotsReleased);
        } else {
            storeBinding.open(shared.localStore(name));
        }
        bindObservers();
        queue.started();
        shared.register(queue);
    }

    @Override
    protected void doStop() throws Exception {
        shared.unregister(queue);
        unbindObservers();
        storeBinding.close();
        super.doStop();
    }

    /** Binds the readiness check of a Redis store (with camel-health) and the meters (with Micrometer). */
    private void bindObservers() {
        Supplier<Throwable> probe = storeBinding.probe();
        WritableHealthCheckRepository checks = probe == null ? null : healthChecks();
        if (checks != null) {
            healthCheck = new TokenBucketHealthCheck(services, probe);
            checks.addHealthCheck(healthCheck);
        }
        if (MICROMETER_PRESENT) {
            metrics = TokenBucketMetrics.bind(getCamelContext(), shared.meterRegistry(), services,
                    this::getLocalKeys, queue::waiting);
        }
    }

    private void unbindObservers() throws Exception {
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
    }

    private WritableHealthCheckRepository healthChecks() {
        return HealthCheckHelper.getHealthCheckRepository(getCamelContext(), "producers",
                WritableHealthCheckRepository.class);
    }

    /** False: the buckets are this component's (in memory, or a store it owns), as the annotation says. */
    @Override
    public boolean isRemote() {
        return false;
    }

    @Override
    public Producer createProducer() {
        return new TokenBucketProducer(this, services, limitSource, queue);
    }

    @Override
    public Consumer createConsumer(Processor processor) {
        throw new UnsupportedOperationException("tokenbucket: is a producer only: use it in to(...), not from(...)");
    }

    /** The limiter name. */
    @ManagedAttribute(description = "The limiter name: endpoints with the same name share their buckets")
    public String getName() {
        return name;
    }

    /** What this endpoint's exchanges met. */
    public TokenBucketStatistics getStatistics() {
        return statistics;
    }

    /** The endpoint's limits, for example {@code capacity 5, refill 5 per 1000 ms}. */
    @ManagedAttribute(description = "The endpoint's limits (keys may have their own: keyLimits, limitResolver)")
    public String getLimitsDescription() {
        return limitSource.describe();
    }

    /** Where the buckets live, the Redis URI masked. */
    @ManagedAttribute(description = "Where the buckets live")
    public String getStoreDescription() {
        return storeBinding.description();
    }

    /** The endpoint's mode. */
    @ManagedAttribute(description = "delay, reject or check")
    public String getModeName() {
        return configuration.getMode().name();
    }

    /** Exchanges that got their tokens. */
    @ManagedAttribute(description = "Exchanges that got their tokens (at once or after waiting)")
    public long getAdmittedCount() {
        return statistics.getAdmitted();
    }

    /** Exchanges that waited for their tokens. */
    @ManagedAttribute(description = "Admitted exchanges that waited for their tokens")
    public long getDelayedCount() {
        return statistics.getDelayed();
    }

    /** Exchanges that did not get their tokens. */
    @ManagedAttribute(description = "Exchanges that did not get their tokens (rejected, over maxWait, check false)")
    public long getRejectedCount() {
        return statistics.getRejected();
    }

    /** Acquires that failed because the store (Redis) did not answer (onStoreError=fail) or refused. */
    @ManagedAttribute(description = "Acquires that failed because the store (Redis) did not answer or refused")
    public long getStoreErrorCount() {
        return statistics.getStoreErrors();
    }

    /** Store calls answered by the onStoreError policy (allow or local) because Redis did not answer. */
    @ManagedAttribute(description = "Store calls answered by the allow or local policy while Redis did not answer")
    public long getFallbackCount() {
        return storeBinding.fallbacks();
    }

    /** Store calls Redis refused (a missing permission, a script error): failed under every onStoreError policy. */
    @ManagedAttribute(description = "Store calls Redis refused (a permission, a script error): failed whatever"
            + " onStoreError")
    public long getStoreRefusalCount() {
        return storeBinding.refusals();
    }

    /** Whether the onStoreError policy answers the store calls now (Redis did not answer lately). */
    @ManagedAttribute(description = "Whether the onStoreError policy answers the store calls now (Redis did not"
            + " answer lately)")
    public boolean isInStoreFallback() {
        return storeBinding.inFallback();
    }

    /** Exchanges that were still waiting when their producer stopped (failed, tokens refunded). */
    @ManagedAttribute(description = "Exchanges still waiting when their producer stopped (failed, tokens refunded)")
    public long getAbandonedCount() {
        return statistics.getAbandoned();
    }

    /** Waiters released past their lateness bound (a stall) that gave their tokens back and reserved again. */
    @ManagedAttribute(description = "Waiters released past maxLateness (a stall) that reserved again")
    public long getRebookedCount() {
        return statistics.getRebooked();
    }

    /** Exchanges of this instance holding in-flight slots now (between admission and the end of their exchange). */
    @ManagedAttribute(description = "Exchanges of this instance holding in-flight slots now")
    public long getInFlightCount() {
        return statistics.getInFlight();
    }

    /** Exchanges waiting for an in-flight slot now (they are among getWaitingCount too). */
    @ManagedAttribute(description = "Exchanges waiting for an in-flight slot now (counted in WaitingCount too)")
    public long getSlotWaitingCount() {
        return statistics.getSlotWaiting();
    }

    /** Exchanges waiting for their tokens now, at most {@code maxWaiting}. */
    @ManagedAttribute(description = "Exchanges waiting for their tokens now (at most maxWaiting)")
    public int getWaitingCount() {
        return queue.waiting();
    }

    /** Mean wait of the delayed exchanges, in milliseconds. */
    @ManagedAttribute(description = "Mean wait of the delayed exchanges (ms)")
    public double getMeanWaitMillis() {
        return statistics.getMeanWaitMillis();
    }

    /** Mean reservations per reservation call to Redis (batching); 0 when none was sent. */
    @ManagedAttribute(description = "Mean reservations per Redis reservation call (redisBatching); 0 when none")
    public double getMeanStoreBatchSize() {
        return statistics.getMeanStoreBatchSize();
    }

    /** Buckets held in memory for this endpoint's name (the local store, or Redis's local fallback). */
    @ManagedAttribute(description = "Buckets held in this JVM's memory for this limiter name")
    public int getLocalKeys() {
        LocalBucketStore local = localBuckets();
        return local == null ? 0 : local.size();
    }

    /** The buckets held in this JVM's memory for this endpoint's name, or null when none were made. */
    LocalBucketStore localBuckets() {
        return shared.existingLocalStore(name);
    }

    /** Drops the state of {@code key} (blank or null: the default key): its bucket starts full. */
    @ManagedOperation(description = "Drop a key's bucket (it starts full)")
    public void removeKey(String key) {
        Key k = asSent(key);
        store().remove(k.stored(), k.limits()).toCompletableFuture().join();
    }

    /**
     * The key an exchange with header {@code key} uses, resolved: a missing or blank one is the default key, as
     * {@link TokenBucketRequest} reads the header, so that an operator's blank or null is that bucket, not another.
     */
    private Key asSent(String key) {
        return Key.of(key == null || key.isBlank() ? TokenBucketRequest.DEFAULT_KEY : key, limitSource::limitsFor);
    }

    /** Tokens left and the wait for one token on key {@code raw} (blank or null: the default key), taking none. */
    @ManagedOperation(description = "Tokens left on a key and the wait for one more (ms), consuming nothing")
    public String peekKey(String raw) {
        Key key = asSent(raw);
        Outcome r = store().peek(key.stored(), key.limits(), 1).toCompletableFuture().join();
        return "remaining=" + r.remaining() + ", waitMillis=" + TokenBucketLimitSource.ceilMillis(r.waitTicks());
    }

    /**
     * The current rate of key {@code raw} (blank or null: the default key) as a fraction of its configured rate (1.0
     * without adaptive=true).
     */
    @ManagedOperation(description = "A key's current rate as a fraction of its configured rate (adaptive)")
    public double rateOfKey(String raw) {
        return rate(raw).factor();
    }

    /**
     * The adaptive rate of key {@code raw} (blank or null: the default key) as text: {@code rate=} its fraction of
     * the configured rate, {@code starting=} whether it is in its slow start (adaptiveStart below 1, no throttled
     * signal yet), for example {@code rate=0.25, starting=true}.
     */
    @ManagedOperation(description = "A key's adaptive rate and whether it is in its slow start, as text")
    public String rateStateOfKey(String raw) {
        Outcome a = rate(raw);
        return "rate=" + a.factor() + ", starting=" + a.starting();
    }

    private Outcome rate(String raw) {
        Key key = asSent(raw);
        return store().rate(key.stored(), key.limits()).toCompletableFuture().join();
    }

    /** Throttled signals received. */
    @ManagedAttribute(description = "Throttled signals received (operation throttled), cutting or ignored")
    public long getThrottledSignalCount() {
        return statistics.getThrottledSignals();
    }

    /** Throttled signals that cut a key's rate. */
    @ManagedAttribute(description = "Throttled signals that cut a key's rate (the others fell within adaptiveHold)")
    public long getRateCutCount() {
        return statistics.getRateCuts();
    }

    /** The lowest rate a throttled signal left on a key within the last minute, 1.0 when none. */
    @ManagedAttribute(description = "The lowest rate (fraction of the configured) a throttled signal left on a key"
            + " within the last minute; 1.0 when none")
    public double getLowestRecentRate() {
        return statistics.getLowestRecentRate();
    }

    /**
     * Changes the endpoint's limits at runtime, in the syntax of the {@code limits} option; each key's next
     * exchange uses them and keeps its state (the time until full).
     */
    @ManagedOperation(description = "Change the endpoint's limits at runtime, e.g. 10/1s,1000/1h")
    public void updateLimits(String text) {
        limitSource.update(text);
    }

    /** Changes the per-key limits at runtime, in the syntax of the {@code keyLimits} option. */
    @ManagedOperation(description = "Change the per-key limits at runtime, e.g. premium-*=20/1s")
    public void updateKeyLimits(String text) {
        limitSource.updateKeyLimits(text);
    }

    /** The endpoint's options. */
    public TokenBucketConfiguration getConfiguration() {
        return configuration;
    }

    /** Where this endpoint's keys get their limits. */
    TokenBucketLimitSource limitSource() {
        return limitSource;
    }

    /** The buckets of this endpoint's limiter; null before the endpoint first started. */
    BucketStore store() {
        return storeBinding.store();
    }
}
