package io.tokenbucket.camel;

import org.apache.camel.RuntimeCamelException;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriParams;

/**
 * Every option of the {@code tokenbucket:} endpoint, with its default, once. The component holds one as the
 * defaults for its endpoints ({@code camel.component.tokenbucket.*}) and gives each endpoint a copy that its URI
 * options then override.
 *
 * <p>Each option is an annotated field (the annotation is its documentation: the generated metadata, the adoc
 * tables and the starter come from it) with the getter and setter Camel's configurers call. The Redis options and
 * the adaptive-rate options are grouped in the superclasses {@link TokenBucketRedisOptions} and
 * {@link TokenBucketAdaptiveOptions}; Camel's tooling reads options up the class hierarchy, so they stay options
 * of this one class ({@code adaptiveFloor=0.2}, {@code camel.component.tokenbucket.adaptive-floor}).
 *
 * <p>Holds values and nothing else: it knows no other type of the component. Options are checked, and the limits
 * built from them, by {@code TokenBucketLimitSource} when an endpoint is created (and by
 * {@link TokenBucketComponent#checkOptions} for configuration that arrives some other way).
 */
@UriParams
public class TokenBucketConfiguration extends TokenBucketRedisOptions implements Cloneable {

    /**
     * The longest wait of any exchange, in milliseconds: 365 days (a store's {@code MAX_WAIT_NANOS}). Also the
     * ceiling of {@code maxWait} and of the penalty header; an exchange whose wait would be longer is rejected,
     * whatever {@code maxWait} says.
     */
    public static final long MAX_WAIT_MILLIS = 365L * 24 * 3600 * 1000;

    /**
     * The largest {@code maxAllOf}: 1,000, within the {@code io.tokenbucket.store.BucketStore#MAX_KEYS} keys
     * one store step may charge.
     */
    public static final int MAX_ALL_OF = 1000;

    @UriParam(defaultValue = "1", description = "The bucket size in tokens: how many exchanges may pass at once"
            + " after a quiet period (the burst). At least 1.")
    private long capacity = 1;

    @UriParam(description = "Tokens added back every refillPeriod, at least 1. Default: the capacity.")
    private Long refillAmount;

    @UriParam(defaultValue = "1s", javaType = "java.time.Duration", description = "The refill period, Camel duration"
            + " text (1s, 500ms) or milliseconds: refillAmount tokens come back per period, spread evenly over it.")
    private long refillPeriod = 1000;

    @UriParam(description = "Several limits per bucket, replacing capacity, refillAmount and refillPeriod: N/period"
            + " entries separated by commas (period a Camel duration), each with an optional :burst. 10/1s,1000/1h"
            + " is 10 per second and 1000 per hour, reserved together; 1/1s:5 is one per second in bursts of 5.")
    private String limits;

    @UriParam(description = "The most exchanges of one key in flight at once (from admission to the end of the"
            + " exchange), across every instance sharing the store; an exchange without a slot waits in arrival"
            + " order, fails or is told, as mode says. A key's limits may name their own (limits=10/1s,4 in flight)."
            + " Set alone: no rate limit. 0 (the default): none.")
    private long maxInFlight;

    @UriParam(label = "advanced", defaultValue = "30s", javaType = "java.time.Duration", description = "With"
            + " store=redis, how long an in-flight slot outlives an instance that stopped renewing it; a running"
            + " exchange renews its slots every third of it. Camel duration text or milliseconds, from 1s.")
    private long inFlightLease = 30_000;

    /** Whether capacity, refillAmount, refillPeriod or limits were set: else maxInFlight alone sets no rate. */
    private boolean rateGiven;

    // no asterisk in this text: Camel's metadata generator drops every one from descriptions
    @UriParam(description = "Limits for some keys: pattern=limits entries separated by ;, a pattern being a key or a"
            + " glob in which an asterisk stands for any characters, the limits in the syntax of the limits option"
            + " (p7=10/1s,1000/1h). The first match wins; other keys get the endpoint's limits.")
    private String keyLimits;

    @UriParam(label = "advanced", javaType = "io.tokenbucket.camel.TokenBucketLimitResolver", description = "A bean"
            + " that gives keys limits of their own, asked on every exchange before keyLimits: it answers the key's"
            + " limits, or null for the endpoint's.")
    private TokenBucketLimitResolver limitResolver;

    @UriParam(defaultValue = TokenBucketConstants.KEY, description = "The header whose value is the bucket key"
            + " (for example proxyId). Exchanges with the same key share a bucket.")
    private String keyHeader = TokenBucketConstants.KEY;

    @UriParam(defaultValue = "false", description = "When true, an exchange without a non-blank key header fails with"
            + " NoSuchHeaderException; when false, such exchanges share one default bucket.")
    private boolean requireKey;

    @UriParam(defaultValue = "1", description = "The tokens one exchange costs, from 1 to the capacity; header"
            + " CamelTokenBucketCost overrides it (for refund: any number from 1).")
    private long cost = 1;

    @UriParam(defaultValue = "delay", enums = "delay,reject,check", description = "delay: wait for the tokens,"
            + " holding no thread; reject: fail with TokenBucketRejectedException instead; check: never wait or"
            + " fail, set header CamelTokenBucketAllowed (true: the tokens were taken) and continue.")
    private TokenBucketMode mode = TokenBucketMode.delay;

    @UriParam(javaType = "java.time.Duration", description = "In delay mode, the longest wait accepted (Camel"
            + " duration text or milliseconds), at most 365d; an exchange that would wait longer fails at once with"
            + " TokenBucketRejectedException, consuming nothing. Unset: 365d.")
    private Long maxWait;

    @UriParam(defaultValue = "100000", description = "In delay mode, how many exchanges may wait at once on this"
            + " endpoint; past it, one that would have to wait fails at once with TokenBucketRejectedException,"
            + " consuming nothing. A waiter holds no thread but about 1.3 KB. 0: no exchange waits.")
    private int maxWaiting = 100_000;

    @UriParam(label = "advanced", defaultValue = "100", description = "The most distinct keys header"
            + " CamelTokenBucketCandidates may name; more fails the exchange. 1 to 1024.")
    private int maxCandidates = 100;

    @UriParam(description = "Keys also charged by every acquire and refund, separated by commas (for example global):"
            + " all in one atomic step or none; the exchange waits for the slowest. Header CamelTokenBucketAllOf"
            + " replaces it. At most maxAllOf keys. Default none.")
    private String allOf;

    @UriParam(label = "advanced", defaultValue = "8", description = "The most distinct keys the allOf option or"
            + " header CamelTokenBucketAllOf may name, the exchange's own key included; more fails the exchange."
            + " From 1 to 1000.")
    private int maxAllOf = 8;

    @UriParam(defaultValue = "local", enums = "local,redis", description = "Where the buckets live: local (this JVM,"
            + " one limit per Camel instance) or redis (one limit shared by every instance using the same Redis and"
            + " keyPrefix).")
    private TokenBucketStoreType store = TokenBucketStoreType.local;

    @UriParam(label = "advanced,metrics", defaultValue = "false", description = "Whether Micrometer meters are also"
            + " kept per key (tokenbucket.key.exchanges), for at most metricsMaxKeys keys.")
    private boolean metricsPerKey;

    @UriParam(label = "advanced,metrics", defaultValue = "100", description = "With metricsPerKey, how many keys (the"
            + " first seen) get meters of their own.")
    private int metricsMaxKeys = 100;

    @UriParam(label = "advanced", defaultValue = "10s", javaType = "java.time.Duration", description = "How long"
            + " exchanges waiting for their tokens may hold up the stop of the Camel context: those whose tokens"
            + " come later fail at once with TokenBucketException (tokens refunded), the rest still waiting fail"
            + " when it has passed.")
    private long stopTimeout = 10_000;

    @UriParam(label = "advanced", defaultValue = "100ms", javaType = "java.time.Duration", description = "Lateness"
            + " past which a released waiter reserves again instead of going on (a stall); at least its keys' token"
            + " interval. Negative: never.")
    private long maxLateness = 100;

    // Camel's own option and wording (camel-kafka, camel-netty, camel-jms): what it means here is in the adoc
    @UriParam(label = "advanced", defaultValue = "false", description = "Sets whether synchronous processing"
            + " should be strictly used. The calling thread then waits for the store and for the exchange's tokens or"
            + " slot (within maxWait), and continues the route itself; a transacted exchange always does.")
    private boolean synchronous;

    /** A copy that can be changed without touching this one (the option values are shared, not copied). */
    public TokenBucketConfiguration copy() {
        try {
            return (TokenBucketConfiguration) clone();
        } catch (CloneNotSupportedException e) {
            throw new RuntimeCamelException(e);
        }
    }

    /** The bucket size in tokens (the burst). Default 1. */
    public long getCapacity() {
        return capacity;
    }

    /** Sets the bucket size in tokens (the burst), at least 1. Default 1. */
    public void setCapacity(long capacity) {
        this.capacity = capacity;
        this.rateGiven = true;
    }

    /** Tokens added back per refill period; defaults to the capacity. */
    public long getRefillAmount() {
        return refillAmount != null ? refillAmount : capacity;
    }

    /** Sets the tokens added back per refill period, at least 1. Default: the capacity. */
    public void setRefillAmount(Long refillAmount) {
        this.refillAmount = refillAmount;
        this.rateGiven = true;
    }

    /** The refill period in milliseconds. Default 1000 (1s). */
    public long getRefillPeriod() {
        return refillPeriod;
    }

    /** Sets the refill period in milliseconds (Camel duration text such as 1s or 500ms when configured). Default 1s. */
    public void setRefillPeriod(long refillPeriod) {
        this.refillPeriod = refillPeriod;
        this.rateGiven = true;
    }

    /** The header holding the bucket key. Default {@code CamelTokenBucketKey}. */
    public String getKeyHeader() {
        return keyHeader;
    }

    /** Sets the header holding the bucket key. Default {@code CamelTokenBucketKey}. */
    public void setKeyHeader(String keyHeader) {
        this.keyHeader = keyHeader;
    }

    /** Whether an exchange without a key fails. Default false. */
    public boolean isRequireKey() {
        return requireKey;
    }

    /** Sets whether an exchange without a non-blank key header fails (true) or uses the default bucket (false). */
    public void setRequireKey(boolean requireKey) {
        this.requireKey = requireKey;
    }

    /** The cost of one exchange in tokens. Default 1. */
    public long getCost() {
        return cost;
    }

    /** Sets the cost of one exchange in tokens, from 1 to the capacity. Default 1. */
    public void setCost(long cost) {
        this.cost = cost;
    }

    /** What happens when the tokens are not there yet. Default {@link TokenBucketMode#delay}. */
    public TokenBucketMode getMode() {
        return mode;
    }

    /** Sets what happens when the tokens are not there yet. Default {@link TokenBucketMode#delay}. */
    public void setMode(TokenBucketMode mode) {
        this.mode = mode;
    }

    /** The longest wait accepted in delay mode, in milliseconds; null (the default) for {@value #MAX_WAIT_MILLIS}. */
    public Long getMaxWait() {
        return maxWait;
    }

    /** Sets the longest wait accepted in delay mode, in milliseconds, at most 365 days; null (the default): 365 days. */
    public void setMaxWait(Long maxWait) {
        this.maxWait = maxWait;
    }

    /**
     * How late past its reserved time, in milliseconds, a waiting exchange may be released and still go on with its
     * reservation; a later one reserves again. Default 100.
     */
    public long getMaxLateness() {
        return maxLateness;
    }

    /**
     * Sets how late (milliseconds; Camel duration text when configured) a waiting exchange may be released and still
     * use its reservation; the bound applied is the larger of this and its keys' shortest token interval. A negative
     * value never reserves again. Default 100ms.
     */
    public void setMaxLateness(long maxLateness) {
        this.maxLateness = maxLateness;
    }

    /** How many exchanges may wait at once on an endpoint. Default {@value #DEFAULT_MAX_WAITING}. */
    public int getMaxWaiting() {
        return maxWaiting;
    }

    /** Sets how many exchanges may wait at once on an endpoint, at least 0. Default {@value #DEFAULT_MAX_WAITING}. */
    public void setMaxWaiting(int maxWaiting) {
        this.maxWaiting = maxWaiting;
    }

    /** The most distinct candidate keys per exchange. Default {@value #DEFAULT_MAX_CANDIDATES}. */
    public int getMaxCandidates() {
        return maxCandidates;
    }

    /** Sets the most distinct candidate keys per exchange, at least 1. Default {@value #DEFAULT_MAX_CANDIDATES}. */
    public void setMaxCandidates(int maxCandidates) {
        this.maxCandidates = maxCandidates;
    }

    /** The keys every acquire and refund also charges, separated by commas. Default none. */
    public String getAllOf() {
        return allOf;
    }

    /** Sets the keys every acquire and refund also charges, separated by commas (null: none). Default none. */
    public void setAllOf(String allOf) {
        this.allOf = allOf;
    }

    /** The most distinct keys of {@code allOf} or header CamelTokenBucketAllOf. Default {@value #DEFAULT_MAX_ALL_OF}. */
    public int getMaxAllOf() {
        return maxAllOf;
    }

    /** Sets the most distinct all-of keys per exchange, from 1 to {@value #MAX_ALL_OF}. Default {@value #DEFAULT_MAX_ALL_OF}. */
    public void setMaxAllOf(int maxAllOf) {
        this.maxAllOf = maxAllOf;
    }

    /** Where the buckets live. Default {@link TokenBucketStoreType#local}. */
    public TokenBucketStoreType getStore() {
        return store;
    }

    /** Sets where the buckets live. Default {@link TokenBucketStoreType#local}. */
    public void setStore(TokenBucketStoreType store) {
        this.store = store;
    }

    /**
     * How long exchanges still waiting for their tokens may hold up the Camel context's stop, in milliseconds.
     * Default 10000 (10s).
     */
    public long getStopTimeout() {
        return stopTimeout;
    }

    /**
     * Sets how long waiting exchanges may hold up the Camel context's stop, in milliseconds (Camel duration text
     * when configured); 0 fails them as soon as the stop begins. Default 10s.
     */
    public void setStopTimeout(long stopTimeout) {
        this.stopTimeout = stopTimeout;
    }

    /** Several limits per bucket ({@code 10/1s,1000/1h}), or null (the default) for capacity and refill. */
    public String getLimits() {
        return limits;
    }

    /** Sets several limits per bucket, replacing capacity, refillAmount and refillPeriod. Default none. */
    public void setLimits(String limits) {
        this.limits = limits;
        this.rateGiven = true;
    }

    /** The most exchanges of one key in flight at once, or 0 (the default) for no in-flight limit. */
    public long getMaxInFlight() {
        return maxInFlight;
    }

    /**
     * Sets the most exchanges of one key in flight at once (from admission to the end of the exchange), for keys
     * whose limits name none; 0 (the default) for none. Set alone it is the keys' only limit.
     */
    public void setMaxInFlight(long maxInFlight) {
        this.maxInFlight = maxInFlight;
    }

    /** How long, in milliseconds, an in-flight slot on Redis lasts without a renewal. Default 30s. */
    public long getInFlightLease() {
        return inFlightLease;
    }

    /** Sets how long, in milliseconds, an in-flight slot on Redis lasts without a renewal, from 1s. Default 30s. */
    public void setInFlightLease(long inFlightLease) {
        this.inFlightLease = inFlightLease;
    }

    /** Whether a rate option (capacity, refillAmount, refillPeriod or limits) was set; for the component's checks. */
    public boolean isRateGiven() {
        return rateGiven;
    }

    /** Limits of their own for some keys ({@code premium-*=20/1s;p7=10/1s}), or null (the default). */
    public String getKeyLimits() {
        return keyLimits;
    }

    /** Sets limits of their own for some keys; takes effect on each key's next exchange. Default none. */
    public void setKeyLimits(String keyLimits) {
        this.keyLimits = keyLimits;
    }

    /** The bean giving keys limits of their own, or null (the default). */
    public TokenBucketLimitResolver getLimitResolver() {
        return limitResolver;
    }

    /** Sets a bean giving keys limits of their own, asked before keyLimits. Default none. */
    public void setLimitResolver(TokenBucketLimitResolver limitResolver) {
        this.limitResolver = limitResolver;
    }

    /** Whether meters are kept per key too. Default false. */
    public boolean isMetricsPerKey() {
        return metricsPerKey;
    }

    /** Sets whether meters are kept per key too, for at most {@link #getMetricsMaxKeys()} keys. Default false. */
    public void setMetricsPerKey(boolean metricsPerKey) {
        this.metricsPerKey = metricsPerKey;
    }

    /** How many keys get meters of their own with metricsPerKey. Default 100. */
    public int getMetricsMaxKeys() {
        return metricsMaxKeys;
    }

    /** Sets how many keys get meters of their own with metricsPerKey (the first seen). Default 100. */
    public void setMetricsMaxKeys(int metricsMaxKeys) {
        this.metricsMaxKeys = metricsMaxKeys;
    }

    /**
     * Whether synchronous processing is strictly used: the thread that sends an exchange to the endpoint waits for
     * the store's answer and for the exchange's wait (tokens or an in-flight slot, within maxWait) and continues the
     * route itself, never on the worker pool. An exchange that {@code isTransacted()} is processed so whatever this
     * says. Default false.
     */
    public boolean isSynchronous() {
        return synchronous;
    }

    /** Sets whether synchronous processing is strictly used (see {@link #isSynchronous()}). Default false. */
    public void setSynchronous(boolean synchronous) {
        this.synchronous = synchronous;
    }
}
