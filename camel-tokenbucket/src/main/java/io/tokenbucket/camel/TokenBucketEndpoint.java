package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.BucketKeys;
import io.tokenbucket.store.FallbackBucketStore;
import io.tokenbucket.store.Reservation;
import io.tokenbucket.store.local.LocalBucketStore;
import org.apache.camel.Category;
import org.apache.camel.api.management.ManagedAttribute;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.health.WritableHealthCheckRepository;
import org.apache.camel.api.management.ManagedOperation;
import org.apache.camel.api.management.ManagedResource;
import org.apache.camel.Consumer;
import org.apache.camel.Processor;
import org.apache.camel.Producer;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.UriEndpoint;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriPath;
import org.apache.camel.support.DefaultEndpoint;

/**
 * Throttles exchanges per key with a token bucket, in memory or in Redis: each exchange takes its cost in
 * tokens from the bucket of its key (a header) and waits, fails or is marked when they are not there yet.
 */
@UriEndpoint(firstVersion = "0.1.0", scheme = "tokenbucket", title = "Token Bucket", syntax = "tokenbucket:name",
             producerOnly = true, remote = false, category = { Category.CORE, Category.CLUSTERING },
             headersClass = TokenBucketConstants.class)
@ManagedResource(description = "Managed TokenBucketEndpoint")
public class TokenBucketEndpoint extends DefaultEndpoint {

    @UriPath(description = "The limiter name. Endpoints with the same name share their buckets; keys are"
            + " scoped to the name.")
    @Metadata(required = true)
    private final String name;

    @UriParam
    private final TokenBucketConfiguration configuration;

    private static final boolean MICROMETER_PRESENT = isPresent("io.micrometer.core.instrument.MeterRegistry");

    private volatile Limits limits;
    private final TokenBucketStatistics statistics = new TokenBucketStatistics();
    private volatile KeyLimits keyLimits;
    private final AtomicInteger waiting = new AtomicInteger();
    private BucketStore store;
    private AutoCloseable storeLease;
    private String storeDescription = "local";
    private UnaryOperator<String> redact = UnaryOperator.identity();
    private TokenBucketHealthCheck healthCheck;
    private AutoCloseable metrics;

    TokenBucketEndpoint(String uri, TokenBucketComponent component, String name,
                        TokenBucketConfiguration configuration) {
        super(uri, component);
        this.name = name;
        this.configuration = configuration;
    }

    /** Whether an optional dependency's class can be loaded. */
    static boolean isPresent(String className) {
        try {
            Class.forName(className, false, TokenBucketEndpoint.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    /** Checks the options once they are all set; a bad one fails endpoint creation, naming it. */
    void validate() {
        limits = configuration.validate();
    }

    /** The parsed keyLimits option, kept with the text it came from so a change at runtime is seen. */
    private record KeyLimits(String text, List<Map.Entry<TokenBucketLimitSpec.Glob, Limits>> entries) {
    }

    @Override
    public TokenBucketComponent getComponent() {
        return (TokenBucketComponent) super.getComponent();
    }

    @Override
    protected void doStart() throws Exception {
        super.doStart();
        if (limits == null) {
            validate();
        }
        if (configuration.getStore() == TokenBucketStoreType.redis) {
            TokenBucketRedisStores.Opened opened = TokenBucketRedisStores.open(this, getComponent().redisConnections());
            store = opened.store();
            storeLease = opened.lease();
            storeDescription = opened.where();
            redact = opened.redact();
            WritableHealthCheckRepository checks = HealthCheckHelper.getHealthCheckRepository(getCamelContext(),
                    "producers", WritableHealthCheckRepository.class);
            if (checks != null) {
                healthCheck = new TokenBucketHealthCheck(this, opened.probe());
                checks.addHealthCheck(healthCheck);
            }
        } else {
            store = getComponent().localStore(name);
        }
        if (MICROMETER_PRESENT) {
            metrics = TokenBucketMetrics.bind(this);
        }
    }

    @Override
    protected void doStop() throws Exception {
        if (metrics != null) {
            metrics.close();
            metrics = null;
        }
        if (healthCheck != null) {
            WritableHealthCheckRepository checks = HealthCheckHelper.getHealthCheckRepository(getCamelContext(),
                    "producers", WritableHealthCheckRepository.class);
            if (checks != null) {
                checks.removeHealthCheck(healthCheck);
            }
            healthCheck = null;
        }
        if (storeLease != null) {
            storeLease.close();
            storeLease = null;
        }
        super.doStop();
    }

    @Override
    public Producer createProducer() {
        return new TokenBucketProducer(this);
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
        return limits == null ? "" : describe(limits);
    }

    /** Where the buckets live, the Redis URI masked. */
    @ManagedAttribute(description = "Where the buckets live")
    public String getStoreDescription() {
        return storeDescription;
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

    /** Acquires that failed because the store (Redis) did not answer (onStoreError=fail). */
    @ManagedAttribute(description = "Acquires that failed because the store (Redis) did not answer")
    public long getStoreErrorCount() {
        return statistics.getStoreErrors();
    }

    /** Store calls answered by the onStoreError policy (allow or local) because Redis did not answer. */
    @ManagedAttribute(description = "Store calls answered by the allow or local policy while Redis did not answer")
    public long getFallbackCount() {
        return store instanceof FallbackBucketStore f ? f.fallbacks() : 0;
    }

    /** Exchanges that were still waiting when their producer stopped (failed, tokens refunded). */
    @ManagedAttribute(description = "Exchanges still waiting when their producer stopped (failed, tokens refunded)")
    public long getAbandonedCount() {
        return statistics.getAbandoned();
    }

    /** Exchanges waiting for their tokens now, at most {@code maxWaiting}. */
    @ManagedAttribute(description = "Exchanges waiting for their tokens now (at most maxWaiting)")
    public int getWaitingCount() {
        return waiting.get();
    }

    /**
     * Takes one of the {@code maxWaiting} places for an exchange about to wait.
     *
     * @return false when every place is taken (the exchange must not wait)
     */
    boolean startWaiting() {
        int max = configuration.getMaxWaiting();
        while (true) {
            int n = waiting.get();
            if (n >= max) {
                return false;
            }
            if (waiting.compareAndSet(n, n + 1)) {
                return true;
            }
        }
    }

    /** Gives back the place of an exchange that stopped waiting (released or abandoned). */
    void stopWaiting() {
        waiting.decrementAndGet();
    }

    /** Mean wait of the delayed exchanges, in milliseconds. */
    @ManagedAttribute(description = "Mean wait of the delayed exchanges (ms)")
    public double getMeanWaitMillis() {
        return statistics.getMeanWaitMillis();
    }

    /** Buckets held in memory for this endpoint's name (the local store, or Redis's local fallback). */
    @ManagedAttribute(description = "Buckets held in this JVM's memory for this limiter name")
    public int getLocalKeys() {
        LocalBucketStore local = getComponent().existingLocalStore(name);
        return local == null ? 0 : local.size();
    }

    /** Drops the state of {@code key}: its bucket starts full. */
    @ManagedOperation(description = "Drop a key's bucket (it starts full)")
    public void removeKey(String key) {
        store.remove(BucketKeys.bound(key)).toCompletableFuture().join();
    }

    /** Tokens left and the wait for one token on {@code key}, consuming nothing. */
    @ManagedOperation(description = "Tokens left on a key and the wait for one more (ms), consuming nothing")
    public String peekKey(String key) {
        Reservation r = store.peek(BucketKeys.bound(key), limitsFor(key), 1).toCompletableFuture().join();
        return "remaining=" + r.remaining() + ", waitMillis=" + ceilMillis(r.waitNanos());
    }

    /** Nanoseconds as whole milliseconds, rounded up, never negative and never wrapping. */
    static long ceilMillis(long nanos) {
        return nanos <= 0 ? 0 : nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1);
    }

    /**
     * Changes the endpoint's limits at runtime, in the syntax of the {@code limits} option; each key's next
     * exchange uses them and keeps its state (the time until full).
     */
    @ManagedOperation(description = "Change the endpoint's limits at runtime, e.g. 10/1s,1000/1h")
    public void updateLimits(String text) {
        Limits parsed = TokenBucketLimitSpec.parse(text, "limits");
        configuration.setLimits(text);
        limits = parsed;
    }

    /** Changes the per-key limits at runtime, in the syntax of the {@code keyLimits} option. */
    @ManagedOperation(description = "Change the per-key limits at runtime, e.g. premium-*=20/1s")
    public void updateKeyLimits(String text) {
        TokenBucketLimitSpec.parseKeyLimits(text);
        configuration.setKeyLimits(text);
    }

    /** The endpoint's options. */
    public TokenBucketConfiguration getConfiguration() {
        return configuration;
    }

    /** The endpoint's limits in nanosecond ticks, as validated from the options. */
    Limits limits() {
        return limits;
    }

    /**
     * The limits of {@code key}, the key as the exchange sent it (never its stored, possibly hashed, form): the
     * limit resolver's answer, else the first keyLimits entry that matches, else the endpoint's. Read on every
     * exchange, so a change of either takes effect on the key's next one.
     */
    Limits limitsFor(String key) {
        TokenBucketLimitResolver resolver = configuration.getLimitResolver();
        if (resolver != null) {
            String text = resolver.limitsFor(key);
            if (text != null) {
                return TokenBucketLimitSpec.parse(text, () -> "the limits the limitResolver gave key '"
                        + TokenBucketProducer.shown(key) + "'");
            }
        }
        String text = configuration.getKeyLimits();
        if (text == null) {
            return limits;
        }
        KeyLimits parsed = keyLimits;
        if (parsed == null || !parsed.text().equals(text)) {
            parsed = new KeyLimits(text, TokenBucketLimitSpec.parseKeyLimits(text));
            keyLimits = parsed;
        }
        for (Map.Entry<TokenBucketLimitSpec.Glob, Limits> entry : parsed.entries()) {
            if (entry.getKey().matches(key)) {
                return entry.getValue();
            }
        }
        return limits;
    }

    /** The buckets of this endpoint's limiter. */
    BucketStore store() {
        return store;
    }

    /** Where this endpoint's buckets live, for messages: {@code local} or {@code redis at redis://***@host:6379}. */
    String describeStore() {
        return storeDescription;
    }

    /** {@code text} (a store failure's message) without the store's secrets, for messages; null stays null. */
    String redact(String text) {
        return redact.apply(text);
    }

    /** Limits in the user's terms, for messages: {@code capacity 5, refill 5 per 1000 ms}, joined by "; ". */
    static String describe(Limits limits) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < limits.size(); i++) {
            Limit limit = limits.get(i);
            text.append(i == 0 ? "" : "; ").append("capacity ").append(limit.capacity()).append(", refill ")
                    .append(limit.refillAmount()).append(" per ")
                    .append(TimeUnit.NANOSECONDS.toMillis(limit.refillPeriod())).append(" ms");
        }
        return text.toString();
    }
}
