package io.tokenbucket.camel.springboot;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketLimitResolver;
import io.tokenbucket.camel.TokenBucketMode;
import io.tokenbucket.camel.TokenBucketStoreErrorPolicy;
import io.tokenbucket.camel.TokenBucketStoreType;
import org.apache.camel.CamelContext;
import org.apache.camel.spring.boot.ComponentConfigurationPropertiesCommon;
import org.apache.camel.spring.boot.util.CamelPropertiesHelper;
import org.apache.camel.util.StringHelper;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Throttles exchanges per key with a token bucket, in memory or in Redis: the options of the {@code tokenbucket}
 * component, the defaults of every {@code tokenbucket:} endpoint, as {@code camel.component.tokenbucket.*}.
 *
 * <p>One property per component option of the component's JSON, with the component's default. Durations are
 * text, read as the component reads its URI options (Camel duration text: {@code 1s}, {@code 500ms},
 * {@code 2m}, {@code 1h}, {@code 1m30s}, or a number of milliseconds), and ISO-8601 ({@code PT2S}) as Spring
 * writes durations; text that is neither fails the binding, naming the property. Objects are bean references
 * ({@code "#bean:name"} or {@code "#name"}).
 */
@ConfigurationProperties(prefix = "camel.component.tokenbucket")
public class TokenBucketComponentConfiguration extends ComponentConfigurationPropertiesCommon {


    /** The options given in the application's configuration (setters called by the binder), by option name. */
    private final Set<String> given = new HashSet<>();

    /**
     * Whether to enable auto configuration of the tokenbucket component. This is enabled by default. When
     * false, these properties are not applied: the component keeps its own defaults.
     */
    private Boolean enabled;
    /**
     * The bucket size in tokens: how many exchanges may pass at once after a quiet period (the burst). At
     * least 1.
     */
    private Long capacity = 1L;
    /**
     * Tokens added back to the bucket every refillPeriod. At least 1. Default: the capacity (the bucket refills
     * completely once per period).
     */
    private Long refillAmount;
    /**
     * The refill period: Camel duration text (1s, 500ms, 2m, 1h) or milliseconds. refillAmount tokens come back
     * per period, spread evenly over it.
     */
    private String refillPeriod = "1s";
    /**
     * The header whose value is the bucket key (for example proxyId). Exchanges with the same key share a
     * bucket.
     */
    private String keyHeader = "CamelTokenBucketKey";
    /**
     * When true, an exchange without a non-blank key header fails with NoSuchHeaderException naming the
     * header; when false such exchanges share the endpoint's one default bucket.
     */
    private Boolean requireKey = false;
    /**
     * The cost of one exchange in tokens, from 1 to the capacity. The header CamelTokenBucketCost overrides it
     * per exchange.
     */
    private Long cost = 1L;
    /**
     * delay: wait until the tokens are there, holding no thread; reject: never wait, fail with
     * TokenBucketRejectedException; check: never wait, never fail, set header CamelTokenBucketAllowed (true
     * consumes the tokens, false consumes nothing) and continue.
     */
    private TokenBucketMode mode = TokenBucketMode.delay;
    /**
     * In delay mode, the longest wait accepted (Camel duration text or milliseconds), at most 365d; an exchange
     * that would wait longer fails at once with TokenBucketRejectedException and consumes nothing. Unset: 365d,
     * the longest wait of any exchange.
     */
    private String maxWait;
    /**
     * In delay mode, how many exchanges may wait for their tokens at once on an endpoint. Past it an exchange
     * that would have to wait fails at once with TokenBucketRejectedException and consumes nothing (one that need
     * not wait still passes). Each waiting exchange holds no thread but its memory: about 1.3 KB with a small
     * message, so the default bounds the waiting at about 130 MB. 0: no exchange waits.
     */
    private Integer maxWaiting = 100000;
    /**
     * The most distinct keys header CamelTokenBucketCandidates may name (duplicates count once). More fails the
     * exchange with an IllegalArgumentException naming the header. Each candidate costs a limit lookup and,
     * with store=redis, one key read inside the script, which blocks Redis for every client while it runs
     * (about a microsecond per candidate). At least 1.
     */
    private Integer maxCandidates = 100;
    /**
     * Where the buckets live. local: in this JVM's memory, one limit per Camel instance; redis: in Redis, one
     * limit shared by every Camel instance using the same Redis and keyPrefix (needs io.lettuce:lettuce-core).
     */
    private TokenBucketStoreType store = TokenBucketStoreType.local;
    /**
     * Several limits per bucket, replacing capacity, refillAmount and refillPeriod: a comma-separated list of
     * N/period (N tokens every period, a Camel duration), each with an optional :burst for a capacity other than
     * N. 10/1s,1000/1h is 10 per second and 1000 per hour, checked and reserved together; 1/1s:5 is one per
     * second in bursts of 5.
     */
    private String limits;
    /**
     * Limits of their own for some keys: pattern=limits entries separated by ;, where a pattern is a key or a glob
     * in which an asterisk stands for any run of characters (premium- and an asterisk: every key starting with
     * premium-), and limits use the syntax of the limits option, for example p7=10/1s,1000/1h. The first matching
     * entry wins; other keys get the endpoint's limits.
     */
    private String keyLimits;
    /**
     * A bean that gives keys limits of their own, asked on every exchange before keyLimits: return the limits
     * in the syntax of the limits option, or null for the endpoint's. The option is a
     * io.tokenbucket.camel.TokenBucketLimitResolver type, given as a bean reference (#bean:name).
     */
    private TokenBucketLimitResolver limitResolver;
    /**
     * The Redis to keep buckets in (store=redis), as a Lettuce URI such as redis://localhost:6379/0; a user and
     * password go in its user info; rediss:// for TLS; redis-sentinel:// for Sentinel;
     * redis-cluster://host1:7000,host2:7001 (the seed nodes) for a Redis Cluster. Endpoints with the same URI
     * share one client and one connection. Default redis://localhost:6379, unless this is unset and the
     * registry holds exactly one Lettuce client (see redisClient).
     */
    private String redisUri;
    /**
     * A Lettuce RedisClient or RedisClusterClient owned by the application, used instead of redisUri; the
     * component makes one connection on it and never shuts it down. When neither this nor redisUri is set and
     * the registry holds exactly one such client, that one is used. The option is a
     * io.lettuce.core.AbstractRedisClient type, given as a bean reference (#bean:name).
     */
    private Object redisClient;
    /**
     * The prefix of every Redis key: a bucket's key is the prefix, the limiter name, a colon and the bucket key
     * (tokenbucket:proxies:p1). Instances share a limit when they share Redis and this prefix.
     */
    private String keyPrefix = "tokenbucket:";
    /**
     * When Redis fails or does not answer within storeTimeout: fail: the exchange fails with
     * TokenBucketStoreException (nothing admitted without a token); allow: admit it, and count it; local:
     * throttle it with a local bucket of the same limits until Redis answers again.
     */
    private TokenBucketStoreErrorPolicy onStoreError = TokenBucketStoreErrorPolicy.fail;
    /**
     * How long one Redis call may take before it counts as a store error (Camel duration text or
     * milliseconds).
     */
    private String storeTimeout = "1s";
    /**
     * Whether Micrometer meters are also kept per key (tokenbucket.key.exchanges with a key tag), for at most
     * metricsMaxKeys keys: worth it for a proxy fleet of hundreds of keys, not for millions of API keys.
     */
    private Boolean metricsPerKey = false;
    /**
     * With metricsPerKey, how many keys get meters of their own: the first keys seen, up to this many.
     */
    private Integer metricsMaxKeys = 100;
    /**
     * Whether the producer should be started lazy (on the first message). By starting lazy you can use this to
     * allow CamelContext and routes to startup in situations where a producer may otherwise fail during
     * starting and cause the route to fail being started. By deferring this startup to be lazy then the startup
     * failure can be handled during routing messages via Camel's routing error handlers. Beware that when the
     * first message is processed then creating and starting the producer may take a little time and prolong
     * the total processing time of the processing.
     */
    private Boolean lazyStartProducer = false;
    /**
     * Whether autowiring is enabled. This is used for automatic autowiring options (the option must be marked
     * as autowired) by looking up in the registry to find if there is a single instance of matching type, which
     * then gets configured on the component.
     */
    private Boolean autowiredEnabled = true;
    /**
     * The thread pool on which exchanges continue after waiting for their tokens (never the timer thread).
     * Default: a Camel pool named TokenBucketWorker sized like Camel's default thread pool profile, with an
     * unbounded queue. The option is a java.util.concurrent.ExecutorService type, given as a bean reference
     * (#bean:name).
     */
    private ExecutorService workerPool;
    /**
     * The Micrometer registry for the endpoints' meters. Default: the only MeterRegistry in Camel's registry,
     * else camel-micrometer's (metricsRegistry); no meters when there is none or Micrometer is absent. The option
     * is a io.micrometer.core.instrument.MeterRegistry type, given as a bean reference (#bean:name).
     */
    private Object meterRegistry;
    /**
     * The defaults for every endpoint's options, as a bean (#bean:name); the component uses a copy of it. The
     * other properties given here are applied on top of it; those not given leave its values alone. The option
     * is a io.tokenbucket.camel.TokenBucketConfiguration type.
     */
    private TokenBucketConfiguration configuration;

    /**
     * The component options to set, by Camel option name: every option that has a value, durations in
     * milliseconds. With a {@link #getConfiguration() configuration} bean, only the options given in the
     * application's configuration, so that the defaults here do not overwrite the bean's values; the bean itself
     * is not in the map.
     */
    Map<String, Object> componentOptions(CamelContext camelContext) {
        Map<String, Object> options = new LinkedHashMap<>(
                CamelPropertiesHelper.getNonNullProperties(camelContext, this));
        // Camel Spring Boot's switches, not component options
        options.remove("enabled");
        options.remove("customizer");
        options.remove("configuration");
        if (configuration != null) {
            options.keySet().retainAll(given);
        }
        options.computeIfPresent("refillPeriod", (name, text) -> durationMillis(name, (String) text));
        options.computeIfPresent("maxWait", (name, text) -> durationMillis(name, (String) text));
        options.computeIfPresent("storeTimeout", (name, text) -> durationMillis(name, (String) text));
        return options;
    }

    /**
     * The milliseconds of a duration: Camel duration text read as the component reads it
     * ({@link TokenBucketConfiguration#durationMillis}: {@code 1s}, {@code 500ms}, {@code 1m30s}, {@code 5min}, a
     * plain number of milliseconds; exactly, never wrapped around) or ISO-8601 ({@code PT2S}).
     *
     * @param option the Camel option name ({@code refillPeriod})
     * @throws IllegalArgumentException naming the property ({@code camel.component.tokenbucket.refill-period})
     *                                  and the text when it is neither
     */
    static long durationMillis(String option, String text) {
        String property = "camel.component.tokenbucket." + StringHelper.camelCaseToDash(option);
        String trimmed = text == null ? "" : text.trim();
        if (!trimmed.startsWith("P") && !trimmed.startsWith("p") && !trimmed.startsWith("-P")) {
            return TokenBucketConfiguration.durationMillis(property, trimmed);
        }
        try {
            return Duration.parse(trimmed).toMillis();
        } catch (DateTimeParseException | ArithmeticException e) {
            throw new IllegalArgumentException(property + " must be a duration such as 1s, 500ms, 2m, 1h or PT2S, or"
                    + " a number of milliseconds, was '" + text + "'");
        }
    }

    private void given(String option) {
        given.add(option);
    }

    public Long getCapacity() {
        return capacity;
    }

    public void setCapacity(Long capacity) {
        given("capacity");
        this.capacity = capacity;
    }

    public Long getRefillAmount() {
        return refillAmount;
    }

    public void setRefillAmount(Long refillAmount) {
        given("refillAmount");
        this.refillAmount = refillAmount;
    }

    public String getRefillPeriod() {
        return refillPeriod;
    }

    public void setRefillPeriod(String refillPeriod) {
        durationMillis("refillPeriod", refillPeriod);
        given("refillPeriod");
        this.refillPeriod = refillPeriod;
    }

    public String getKeyHeader() {
        return keyHeader;
    }

    public void setKeyHeader(String keyHeader) {
        given("keyHeader");
        this.keyHeader = keyHeader;
    }

    public Boolean getRequireKey() {
        return requireKey;
    }

    public void setRequireKey(Boolean requireKey) {
        given("requireKey");
        this.requireKey = requireKey;
    }

    public Long getCost() {
        return cost;
    }

    public void setCost(Long cost) {
        given("cost");
        this.cost = cost;
    }

    public TokenBucketMode getMode() {
        return mode;
    }

    public void setMode(TokenBucketMode mode) {
        given("mode");
        this.mode = mode;
    }

    public String getMaxWait() {
        return maxWait;
    }

    public void setMaxWait(String maxWait) {
        if (maxWait != null) {
            durationMillis("maxWait", maxWait);
        }
        given("maxWait");
        this.maxWait = maxWait;
    }

    public Integer getMaxWaiting() {
        return maxWaiting;
    }

    public void setMaxWaiting(Integer maxWaiting) {
        given("maxWaiting");
        this.maxWaiting = maxWaiting;
    }

    public Integer getMaxCandidates() {
        return maxCandidates;
    }

    public void setMaxCandidates(Integer maxCandidates) {
        given("maxCandidates");
        this.maxCandidates = maxCandidates;
    }

    public TokenBucketStoreType getStore() {
        return store;
    }

    public void setStore(TokenBucketStoreType store) {
        given("store");
        this.store = store;
    }

    public String getLimits() {
        return limits;
    }

    public void setLimits(String limits) {
        given("limits");
        this.limits = limits;
    }

    public String getKeyLimits() {
        return keyLimits;
    }

    public void setKeyLimits(String keyLimits) {
        given("keyLimits");
        this.keyLimits = keyLimits;
    }

    public TokenBucketLimitResolver getLimitResolver() {
        return limitResolver;
    }

    public void setLimitResolver(TokenBucketLimitResolver limitResolver) {
        given("limitResolver");
        this.limitResolver = limitResolver;
    }

    public String getRedisUri() {
        return redisUri;
    }

    public void setRedisUri(String redisUri) {
        given("redisUri");
        this.redisUri = redisUri;
    }

    public Object getRedisClient() {
        return redisClient;
    }

    public void setRedisClient(Object redisClient) {
        given("redisClient");
        this.redisClient = redisClient;
    }

    public String getKeyPrefix() {
        return keyPrefix;
    }

    public void setKeyPrefix(String keyPrefix) {
        given("keyPrefix");
        this.keyPrefix = keyPrefix;
    }

    public TokenBucketStoreErrorPolicy getOnStoreError() {
        return onStoreError;
    }

    public void setOnStoreError(TokenBucketStoreErrorPolicy onStoreError) {
        given("onStoreError");
        this.onStoreError = onStoreError;
    }

    public String getStoreTimeout() {
        return storeTimeout;
    }

    public void setStoreTimeout(String storeTimeout) {
        durationMillis("storeTimeout", storeTimeout);
        given("storeTimeout");
        this.storeTimeout = storeTimeout;
    }

    public Boolean getMetricsPerKey() {
        return metricsPerKey;
    }

    public void setMetricsPerKey(Boolean metricsPerKey) {
        given("metricsPerKey");
        this.metricsPerKey = metricsPerKey;
    }

    public Integer getMetricsMaxKeys() {
        return metricsMaxKeys;
    }

    public void setMetricsMaxKeys(Integer metricsMaxKeys) {
        given("metricsMaxKeys");
        this.metricsMaxKeys = metricsMaxKeys;
    }

    public Boolean getLazyStartProducer() {
        return lazyStartProducer;
    }

    public void setLazyStartProducer(Boolean lazyStartProducer) {
        given("lazyStartProducer");
        this.lazyStartProducer = lazyStartProducer;
    }

    public Boolean getAutowiredEnabled() {
        return autowiredEnabled;
    }

    public void setAutowiredEnabled(Boolean autowiredEnabled) {
        given("autowiredEnabled");
        this.autowiredEnabled = autowiredEnabled;
    }

    public ExecutorService getWorkerPool() {
        return workerPool;
    }

    public void setWorkerPool(ExecutorService workerPool) {
        given("workerPool");
        this.workerPool = workerPool;
    }

    public Object getMeterRegistry() {
        return meterRegistry;
    }

    public void setMeterRegistry(Object meterRegistry) {
        given("meterRegistry");
        this.meterRegistry = meterRegistry;
    }

    public TokenBucketConfiguration getConfiguration() {
        return configuration;
    }

    public void setConfiguration(TokenBucketConfiguration configuration) {
        this.configuration = configuration;
    }
}
