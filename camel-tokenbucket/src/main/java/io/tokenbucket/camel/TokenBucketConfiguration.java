package io.tokenbucket.camel;

import java.util.concurrent.TimeUnit;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketStore;
import org.apache.camel.RuntimeCamelException;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriParams;

/**
 * Every option of the {@code tokenbucket:} endpoint. The component holds one as the defaults for its endpoints
 * ({@code camel.component.tokenbucket.*}) and gives each endpoint a copy that its URI options then override.
 *
 * <p>Longer than the component's other files on purpose: it is the one {@code @UriParams} class Camel's tooling
 * reads, and each option is an annotated field (the annotation is its documentation: the generated metadata, the
 * adoc tables and the starter come from it) with the getter and setter Camel's configurers call. Splitting it
 * would split the options of one endpoint over several classes for no reader's benefit.
 */
@UriParams
public class TokenBucketConfiguration implements Cloneable {

    /** The Redis URI when none is given. */
    public static final String DEFAULT_REDIS_URI = "redis://localhost:6379";

    /**
     * The longest wait of any exchange, in milliseconds: 365 days. Also the ceiling of {@code maxWait} and of the
     * penalty header; an exchange whose wait would be longer is rejected, whatever {@code maxWait} says.
     */
    public static final long MAX_WAIT_MILLIS = TimeUnit.NANOSECONDS.toMillis(BucketStore.MAX_WAIT_NANOS);

    /** The default of {@code maxWaiting}. */
    public static final int DEFAULT_MAX_WAITING = 100_000;

    /** The default of {@code maxCandidates}. */
    public static final int DEFAULT_MAX_CANDIDATES = 100;

    /** The default of {@code maxAllOf}. */
    public static final int DEFAULT_MAX_ALL_OF = 8;

    /**
     * The largest {@code maxAllOf}: 1,000, within the {@link io.tokenbucket.store.BucketStore#MAX_KEYS} keys
     * one store step may charge.
     */
    public static final int MAX_ALL_OF = 1000;

    @UriParam(defaultValue = "1", description = "The bucket size in tokens: how many exchanges may pass at once"
            + " after a quiet period (the burst). At least 1.")
    private long capacity = 1;

    @UriParam(description = "Tokens added back to the bucket every refillPeriod. At least 1. Default: the"
            + " capacity (the bucket refills completely once per period).")
    private Long refillAmount;

    @UriParam(defaultValue = "1s", javaType = "java.time.Duration", description = "The refill period: Camel"
            + " duration text (1s, 500ms, 2m, 1h) or milliseconds. refillAmount tokens come back per period,"
            + " spread evenly over it.")
    private long refillPeriod = 1000;

    @UriParam(description = "Several limits per bucket, replacing capacity, refillAmount and refillPeriod: a"
            + " comma-separated list of N/period (N tokens every period, a Camel duration), each with an optional"
            + " :burst for a capacity other than N. 10/1s,1000/1h is 10 per second and 1000 per hour, checked and"
            + " reserved together; 1/1s:5 is one per second in bursts of 5.")
    private String limits;

    // no asterisk in this text: Camel's metadata generator drops every one from descriptions
    @UriParam(description = "Limits of their own for some keys: pattern=limits entries separated by ;, where a"
            + " pattern is a key or a glob in which an asterisk stands for any run of characters (premium- and an"
            + " asterisk: every key starting with premium-), and limits use the syntax of the limits option, for"
            + " example p7=10/1s,1000/1h. The first matching entry wins; other keys get the endpoint's limits.")
    private String keyLimits;

    @UriParam(label = "advanced", javaType = "io.tokenbucket.camel.TokenBucketLimitResolver", description = "A"
            + " bean that gives keys limits of their own, asked on every exchange before keyLimits: return the"
            + " limits in the syntax of the limits option, or null for the endpoint's.")
    private TokenBucketLimitResolver limitResolver;

    @UriParam(defaultValue = TokenBucketConstants.KEY, description = "The header whose value is the bucket key"
            + " (for example proxyId). Exchanges with the same key share a bucket.")
    private String keyHeader = TokenBucketConstants.KEY;

    @UriParam(defaultValue = "false", description = "When true, an exchange without a non-blank key header fails"
            + " with NoSuchHeaderException naming the header; when false such exchanges share the endpoint's one"
            + " default bucket.")
    private boolean requireKey;

    @UriParam(defaultValue = "1", description = "The cost of one exchange in tokens, from 1 to the capacity."
            + " The header CamelTokenBucketCost overrides it per exchange (for operation refund: any number from 1,"
            + " given back up to the capacity).")
    private long cost = 1;

    @UriParam(defaultValue = "delay", enums = "delay,reject,check", description = "delay: wait until the tokens"
            + " are there, holding no thread; reject: never wait, fail with TokenBucketRejectedException; check:"
            + " never wait, never fail, set header CamelTokenBucketAllowed (true consumes the tokens, false"
            + " consumes nothing) and continue.")
    private TokenBucketMode mode = TokenBucketMode.delay;

    @UriParam(javaType = "java.time.Duration", description = "In delay mode, the longest wait accepted (Camel"
            + " duration text or milliseconds), at most 365d; an exchange that would wait longer fails at once with"
            + " TokenBucketRejectedException and consumes nothing. Unset: 365d, the longest wait of any exchange.")
    private Long maxWait;

    @UriParam(defaultValue = "100000", description = "In delay mode, how many exchanges may wait"
            + " for their tokens at once on this endpoint. Past it an exchange that would have to wait fails at once"
            + " with TokenBucketRejectedException and consumes nothing (one that need not wait still passes). Each"
            + " waiting exchange holds no thread but its memory: about 1.3 KB with a small message, so the default"
            + " bounds the waiting at about 130 MB. 0: no exchange waits.")
    private int maxWaiting = DEFAULT_MAX_WAITING;

    @UriParam(label = "advanced", defaultValue = "100", description = "The most distinct keys"
            + " header CamelTokenBucketCandidates may name (duplicates count once). More fails the exchange with an"
            + " IllegalArgumentException naming the header. Each candidate costs a limit lookup and, with store=redis,"
            + " one key read inside the script, which blocks Redis for every client while it runs (about a"
            + " microsecond per candidate). At least 1.")
    private int maxCandidates = DEFAULT_MAX_CANDIDATES;

    @UriParam(description = "Keys whose buckets every acquire (and refund) of this endpoint also charges, separated"
            + " by commas, for example global: the exchange's tokens are taken from its own key's bucket and from each"
            + " of these in one atomic step, or from none; it waits for the slowest. Each key gets its limits as any"
            + " key does (limitResolver, keyLimits, else the endpoint's). Header CamelTokenBucketAllOf replaces it."
            + " At most maxAllOf keys. Default none.")
    private String allOf;

    @UriParam(label = "advanced", defaultValue = "8", description = "The most distinct keys the allOf option or"
            + " header CamelTokenBucketAllOf may name (duplicates, and the exchange's own key, count once). More"
            + " fails the exchange with an IllegalArgumentException naming the header. Every key of an acquire is"
            + " locked (store=local) or read and written inside one script (store=redis). From 1 to 1000.")
    private int maxAllOf = DEFAULT_MAX_ALL_OF;

    @UriParam(defaultValue = "local", enums = "local,redis", description = "Where the buckets live. local: in"
            + " this JVM's memory, one limit per Camel instance; redis: in Redis, one limit shared by every Camel"
            + " instance using the same Redis and keyPrefix.")
    private TokenBucketStoreType store = TokenBucketStoreType.local;

    @UriParam(label = "advanced,metrics", defaultValue = "false", description = "Whether Micrometer meters are also"
            + " kept per key (tokenbucket.key.exchanges with a key tag), for at most metricsMaxKeys keys: worth it for a"
            + " proxy fleet of hundreds of keys, not for millions of API keys.")
    private boolean metricsPerKey;

    @UriParam(label = "advanced,metrics", defaultValue = "100", description = "With metricsPerKey, how many keys"
            + " get meters of their own: the first keys seen, up to this many.")
    private int metricsMaxKeys = 100;

    @UriParam(label = "redis", defaultValue = DEFAULT_REDIS_URI, secret = true, description = "The Redis to keep"
            + " buckets in (store=redis), as a Lettuce URI such as redis://localhost:6379/0; a user and password go"
            + " in its user info (redis://user:secret, an at sign, then the host); rediss:// for TLS;"
            + " redis-sentinel:// for Sentinel; redis-cluster://host1:7000,host2:7001 (the seed nodes) for a Redis"
            + " Cluster. Endpoints with the same URI share one client and one connection.")
    private String redisUri; // null: unset, so an application client in the registry may be used

    @UriParam(label = "redis,advanced", javaType = "io.lettuce.core.AbstractRedisClient", description = "A Lettuce"
            + " RedisClient or RedisClusterClient owned by the application, used instead of redisUri; the component"
            + " makes one connection on it and never shuts it down. When neither this nor redisUri is set and the"
            + " registry holds exactly one such client, that one is used.")
    private Object redisClient;

    @UriParam(label = "redis", defaultValue = "tokenbucket:", description = "The prefix of every Redis key: a"
            + " bucket's key is the prefix, the limiter name, a colon and the bucket key (tokenbucket:proxies:p1)."
            + " Instances share a limit when they share Redis and this prefix.")
    private String keyPrefix = "tokenbucket:";

    @UriParam(label = "redis", defaultValue = "fail", enums = "fail,allow,local", description = "When Redis fails"
            + " or does not answer within storeTimeout: fail: the exchange fails with TokenBucketStoreException"
            + " (nothing admitted without a token); allow: admit it, and count it; local: throttle it with a local"
            + " bucket of the same limits until Redis answers again.")
    private TokenBucketStoreErrorPolicy onStoreError = TokenBucketStoreErrorPolicy.fail;

    @UriParam(label = "advanced", defaultValue = "10s", javaType = "java.time.Duration", description = "How long"
            + " exchanges still waiting for their tokens may hold up the stop of the Camel context: from the moment"
            + " the context starts stopping, an exchange whose tokens would come later than this fails at once, and"
            + " any still waiting when it has passed fails then, each with TokenBucketException (its tokens"
            + " refunded), so the route's error handler sees it and the graceful shutdown does not wait out its"
            + " timeout (45s by default, past Kubernetes' 30s grace). Exchanges whose tokens come sooner go on as"
            + " usual. Stopping one route instead fails its waiting exchanges when the route's producer stops.")
    private long stopTimeout = 10_000;

    @UriParam(label = "redis", defaultValue = "1s", javaType = "java.time.Duration", description = "How long one"
            + " Redis call may take before it counts as a store error.")
    private long storeTimeout = 1000;

    @UriParam(label = "redis,advanced", defaultValue = "true", description = "Whether reservations that arrive"
            + " while a reservation call is on its way to Redis go together in the next call, whatever their keys:"
            + " each store has 4 lanes (a key always in the same one, so its reservations keep their arrival order),"
            + " each with one script call in flight carrying everything queued for it (at most 256); on a cluster a"
            + " lane's call is split by hash slot. Each reservation is still decided on its own, in arrival order,"
            + " with its own answer, error and onStoreError fallback; nothing waits for a batch to fill. Many"
            + " reservations then share one script call, whose fixed cost is most of Redis's work for one."
            + " false: every reservation is a script call of its own, pipelined.")
    private boolean redisBatching = true;

    @UriParam(label = "adaptive", defaultValue = "false", description = "Whether each key's rate adapts to feedback"
            + " (AIMD): operation throttled (send it when the target answers 429 or 503) cuts the key's rate by"
            + " adaptiveDecrease down to adaptiveFloor, and tokens granted raise it by adaptiveIncrease per refill"
            + " amount granted at the current rate, up to the configured rate, the ceiling. The rate lives with the"
            + " key's bucket (in Redis: shared by every instance). false: the configured rate always.")
    private boolean adaptive;

    // no asterisk in this text: Camel's metadata generator drops every one from descriptions
    @UriParam(label = "adaptive", description = "With adaptive: the keys whose rate adapts, as patterns separated by"
            + " commas, each a key or a glob in which an asterisk stands for any run of characters (as in keyLimits),"
            + " matched on the key as sent; the other keys keep their configured rate, and operation throttled on one"
            + " fails naming it. Lets one endpoint whose all-of acquire charges proxies, hosts and (proxy, host) pairs"
            + " together adapt the pairs alone. Default: every key.")
    private String adaptiveKeys;

    @UriParam(label = "adaptive", defaultValue = "0.1", description = "With adaptive: the lowest rate, as a"
            + " fraction of the configured rate, from 0.000001 to below 1; an adaptiveStart below it lowers it to"
            + " the start.")
    private double adaptiveFloor = 0.1;

    @UriParam(label = "adaptive", defaultValue = "0.5", description = "With adaptive: what a throttled signal"
            + " multiplies the rate by, above 0 and below 1 (0.5 halves it); the first signal of a key in its slow"
            + " start (adaptiveStart) halves it first, then multiplies it by this.")
    private double adaptiveDecrease = 0.5;

    @UriParam(label = "adaptive", defaultValue = "0.1", description = "With adaptive: what one increase step adds"
            + " to the rate, as a fraction of the current rate (0.1: 10 % more), from 0.000001 to 1; at least one"
            + " millionth of the configured rate. A step is earned by each"
            + " refill amount of tokens granted at the current rate: under steady demand, one step per refill"
            + " period.")
    private double adaptiveIncrease = 0.1;

    @UriParam(label = "adaptive", defaultValue = "1s", javaType = "java.time.Duration", description = "With adaptive:"
            + " how long after a cut further throttled signals are ignored and no increase is earned (the replies"
            + " of exchanges already in flight all report the same overload), 0 to 1h.")
    private long adaptiveHold = 1000;

    @UriParam(label = "adaptive", defaultValue = "1m", javaType = "java.time.Duration", description = "With adaptive:"
            + " how long an idle key (its bucket full all along) keeps its learned rate; once its bucket has been full"
            + " that long it is back where a new key starts (adaptiveStart) and costs nothing. A busy key that is"
            + " briefly full keeps its rate. 0 to 1d.")
    private long adaptiveMemory = 60_000;

    @UriParam(label = "adaptive", defaultValue = "1.0", description = "With adaptive: where a key without rate state"
            + " starts, as a fraction of the configured rate, from 0.000001 to 1. Below 1 it is a slow start,"
            + " as TCP's: until its first throttled signal each increase step doubles the key's rate (up to the"
            + " configured rate), and the first signal halves it, then multiplies it by adaptiveDecrease, and ends"
            + " the start; from then on AIMD. Finds a limit far below the configured rate in a few signals instead of"
            + " seconds of refusals at the configured rate. A start below adaptiveFloor lowers the floor to it."
            + " 1 (the default): a new key starts at the configured rate.")
    private double adaptiveStart = 1.0;

    /** A copy that can be changed without touching this one. */
    public TokenBucketConfiguration copy() {
        try {
            return (TokenBucketConfiguration) clone();
        } catch (CloneNotSupportedException e) {
            throw new RuntimeCamelException(e);
        }
    }

    /**
     * Checks every option and returns the endpoint's limits in nanosecond ticks.
     *
     * @throws IllegalArgumentException naming the option and its value
     */
    public Limits validate() {
        if (refillPeriod < 1) {
            throw new IllegalArgumentException("refillPeriod must be at least 1 millisecond, was " + refillPeriod);
        }
        Limits limits = this.limits != null ? TokenBucketLimitSpec.parse(this.limits, "limits")
                : Limits.of(Limit.of(capacity, getRefillAmount(), TokenBucketLimitSpec.nanos(refillPeriod,
                        "refillPeriod")));
        if (cost < 1 || cost > limits.capacity()) {
            throw new IllegalArgumentException("cost must be between 1 and capacity " + limits.capacity()
                    + ", was " + cost);
        }
        if (keyLimits != null) {
            TokenBucketLimitSpec.parseKeyLimits(keyLimits);
        }
        if (maxWait != null && (maxWait < 0 || maxWait > MAX_WAIT_MILLIS)) {
            throw new IllegalArgumentException("maxWait must be between 0 and 365d (" + MAX_WAIT_MILLIS
                    + " ms, the longest wait of any exchange), was " + maxWait + " ms");
        }
        if (maxWaiting < 0) {
            throw new IllegalArgumentException("maxWaiting must not be negative, was " + maxWaiting);
        }
        if (maxCandidates < 1) {
            throw new IllegalArgumentException("maxCandidates must be at least 1, was " + maxCandidates);
        }
        if (maxAllOf < 1 || maxAllOf > MAX_ALL_OF) {
            throw new IllegalArgumentException("maxAllOf must be between 1 and " + MAX_ALL_OF + ", was " + maxAllOf);
        }
        if (allOf != null) {
            TokenBucketRequest.allOfOption(allOf, maxAllOf);
        }
        if (store == TokenBucketStoreType.redis
                && !TokenBucketStoreBinding.isPresent("io.lettuce.core.AbstractRedisClient")) {
            throw new IllegalArgumentException("store=redis needs Lettuce on the classpath: add the dependency"
                    + " io.lettuce:lettuce-core");
        }
        if (metricsMaxKeys < 0) {
            throw new IllegalArgumentException("metricsMaxKeys must not be negative, was " + metricsMaxKeys);
        }
        if (stopTimeout < 0) {
            throw new IllegalArgumentException("stopTimeout must not be negative, was " + stopTimeout);
        }
        if (storeTimeout < 1) {
            throw new IllegalArgumentException("storeTimeout must be at least 1 millisecond, was " + storeTimeout);
        }
        if (adaptiveKeys != null) {
            if (!adaptive) {
                throw new IllegalArgumentException("adaptiveKeys needs adaptive=true, was adaptiveKeys '"
                        + adaptiveKeys + "' with adaptive=false");
            }
            if (TokenBucketLimitSpec.parseGlobs(adaptiveKeys).isEmpty()) {
                throw new IllegalArgumentException("adaptiveKeys must name at least one key or pattern, was '"
                        + adaptiveKeys + "'");
            }
        }
        if (keyHeader == null || keyHeader.isBlank()) {
            throw new IllegalArgumentException("keyHeader must name a header, was '" + keyHeader + "'");
        }
        return limits.withAdaptive(adaptation());
    }

    /**
     * The adaptation of the {@code adaptive*} options, or null when {@code adaptive=false}.
     *
     * @throws IllegalArgumentException naming the option and its value when one is out of range
     */
    public Adaptive adaptation() {
        if (!adaptive) {
            return null;
        }
        long floor = ppm("adaptiveFloor", adaptiveFloor, 1, Adaptive.PPM - 1, "from 0.000001 to below 1");
        long decrease = ppm("adaptiveDecrease", adaptiveDecrease, 1, Adaptive.PPM - 1, "above 0 and below 1");
        long increase = ppm("adaptiveIncrease", adaptiveIncrease, 1, Adaptive.PPM, "from 0.000001 to 1");
        if (adaptiveHold < 0 || adaptiveHold > TimeUnit.NANOSECONDS.toMillis(Adaptive.MAX_HOLD_TICKS)) {
            throw new IllegalArgumentException("adaptiveHold must be between 0 and 1h (3600000 ms), was "
                    + adaptiveHold + " ms");
        }
        if (adaptiveMemory < 0 || adaptiveMemory > TimeUnit.NANOSECONDS.toMillis(Adaptive.MAX_MEMORY_TICKS)) {
            throw new IllegalArgumentException("adaptiveMemory must be between 0 and 1d (86400000 ms), was "
                    + adaptiveMemory + " ms");
        }
        long start = ppm("adaptiveStart", adaptiveStart, 1, Adaptive.PPM, "from 0.000001 to 1");
        // each option works set alone: a start below the floor (the default 0.1, or one set) lowers the floor to it,
        // as a key must be able to go back to where it started
        floor = Math.min(floor, start);
        return Adaptive.of(floor, decrease, increase, TimeUnit.MILLISECONDS.toNanos(adaptiveHold),
                TimeUnit.MILLISECONDS.toNanos(adaptiveMemory)).withStart(start);
    }

    /** A fraction as whole parts per million, rounded, in {@code [min, max]}; NaN and infinities refused. */
    private static long ppm(String name, double value, long min, long max, String range) {
        double scaled = value * Adaptive.PPM;
        if (Double.isNaN(scaled) || scaled < min - 0.5 || scaled >= max + 0.5) {
            throw new IllegalArgumentException(name + " must be " + range + ", was " + value);
        }
        return Math.max(min, Math.min(max, Math.round(scaled)));
    }

    /**
     * The longest wait this configuration accepts, in nanoseconds, for {@link BucketStore}: 0 outside delay mode,
     * {@link BucketStore#MAX_WAIT_NANOS} when maxWait is unset.
     */
    public long maxWaitNanos() {
        if (mode != TokenBucketMode.delay) {
            return 0;
        }
        return maxWait == null ? BucketStore.MAX_WAIT_NANOS : TimeUnit.MILLISECONDS.toNanos(maxWait);
    }

    /**
     * The milliseconds of duration text, read as an endpoint URI's duration options are (Camel duration text such
     * as {@code 1s}, {@code 500ms}, {@code 1h30m} or {@code 5min}, or a number of milliseconds), exactly: for
     * configuration that reaches the component as text some other way, such as the Spring Boot starter's.
     *
     * @param name the name of the option or property, for the message
     * @throws IllegalArgumentException naming it and the text when the text is no duration, or longer than a
     *                                  {@code long} holds in milliseconds
     */
    public static long durationMillis(String name, String text) {
        return TokenBucketOptionText.durationOption(name, text);
    }

    /** The bucket size in tokens (the burst). Default 1. */
    public long getCapacity() {
        return capacity;
    }

    /** Sets the bucket size in tokens (the burst), at least 1. Default 1. */
    public void setCapacity(long capacity) {
        this.capacity = capacity;
    }

    /** Tokens added back per refill period; defaults to the capacity. */
    public long getRefillAmount() {
        return refillAmount != null ? refillAmount : capacity;
    }

    /** Sets the tokens added back per refill period, at least 1. Default: the capacity. */
    public void setRefillAmount(Long refillAmount) {
        this.refillAmount = refillAmount;
    }

    /** The refill period in milliseconds. Default 1000 (1s). */
    public long getRefillPeriod() {
        return refillPeriod;
    }

    /** Sets the refill period in milliseconds (Camel duration text such as 1s or 500ms when configured). Default 1s. */
    public void setRefillPeriod(long refillPeriod) {
        this.refillPeriod = refillPeriod;
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

    /** The Redis URI (store=redis), or null when unset: then {@value #DEFAULT_REDIS_URI} or a registry client. */
    public String getRedisUri() {
        return redisUri;
    }

    /** Sets the Redis URI (store=redis), see the class description of the option. Default {@value #DEFAULT_REDIS_URI}. */
    public void setRedisUri(String redisUri) {
        this.redisUri = redisUri;
    }

    /** The application-owned Lettuce client, or null (the default) to create one from {@link #getRedisUri()}. */
    public Object getRedisClient() {
        return redisClient;
    }

    /** Sets an application-owned Lettuce {@code RedisClient} or {@code RedisClusterClient}; default none. */
    public void setRedisClient(Object redisClient) {
        this.redisClient = redisClient;
    }

    /** The prefix of every Redis key. Default {@code tokenbucket:}. */
    public String getKeyPrefix() {
        return keyPrefix;
    }

    /** Sets the prefix of every Redis key. Default {@code tokenbucket:}. */
    public void setKeyPrefix(String keyPrefix) {
        this.keyPrefix = keyPrefix;
    }

    /** What happens when Redis fails. Default {@link TokenBucketStoreErrorPolicy#fail}. */
    public TokenBucketStoreErrorPolicy getOnStoreError() {
        return onStoreError;
    }

    /** Sets what happens when Redis fails. Default {@link TokenBucketStoreErrorPolicy#fail}. */
    public void setOnStoreError(TokenBucketStoreErrorPolicy onStoreError) {
        this.onStoreError = onStoreError;
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

    /** How long one Redis call may take, in milliseconds. Default 1000 (1s). */
    public long getStoreTimeout() {
        return storeTimeout;
    }

    /** Sets how long one Redis call may take, in milliseconds (Camel duration text when configured). Default 1s. */
    public void setStoreTimeout(long storeTimeout) {
        this.storeTimeout = storeTimeout;
    }

    /** Whether Redis reservations are batched while calls are in flight. Default true. */
    public boolean isRedisBatching() {
        return redisBatching;
    }

    /** Sets whether Redis reservations are batched while calls are in flight. Default true. */
    public void setRedisBatching(boolean redisBatching) {
        this.redisBatching = redisBatching;
    }

    /** Whether each key's rate adapts to throttled signals and success. Default false. */
    public boolean isAdaptive() {
        return adaptive;
    }

    /** Sets whether each key's rate adapts to throttled signals and success. Default false. */
    public void setAdaptive(boolean adaptive) {
        this.adaptive = adaptive;
    }

    /** With adaptive, the patterns of the keys whose rate adapts, separated by commas; null (the default): all. */
    public String getAdaptiveKeys() {
        return adaptiveKeys;
    }

    /** Sets the patterns of the keys whose rate adapts (keys or globs with an asterisk, separated by commas). */
    public void setAdaptiveKeys(String adaptiveKeys) {
        this.adaptiveKeys = adaptiveKeys;
    }

    /**
     * Where a key without adaptive rate state starts, as a fraction of the configured rate; below 1, a slow start.
     * Default 1.0 (at the configured rate).
     */
    public double getAdaptiveStart() {
        return adaptiveStart;
    }

    /**
     * Sets where a key without adaptive rate state starts, a fraction of the configured rate from 0.000001 to 1 (a
     * start below adaptiveFloor lowers the floor to it); below 1 each increase step doubles the rate until the first
     * throttled signal, which halves it and cuts it by adaptiveDecrease. Default 1.0.
     */
    public void setAdaptiveStart(double adaptiveStart) {
        this.adaptiveStart = adaptiveStart;
    }

    /** The lowest adaptive rate, as a fraction of the configured rate. Default 0.1. */
    public double getAdaptiveFloor() {
        return adaptiveFloor;
    }

    /**
     * Sets the lowest adaptive rate, a fraction of the configured rate from 0.000001 to below 1; an adaptiveStart
     * below it lowers it to the start. Default 0.1.
     */
    public void setAdaptiveFloor(double adaptiveFloor) {
        this.adaptiveFloor = adaptiveFloor;
    }

    /** What a throttled signal multiplies the rate by. Default 0.5. */
    public double getAdaptiveDecrease() {
        return adaptiveDecrease;
    }

    /** Sets what a throttled signal multiplies the rate by, above 0 and below 1. Default 0.5. */
    public void setAdaptiveDecrease(double adaptiveDecrease) {
        this.adaptiveDecrease = adaptiveDecrease;
    }

    /** What one increase step adds to the rate, as a fraction of the configured rate. Default 0.1. */
    public double getAdaptiveIncrease() {
        return adaptiveIncrease;
    }

    /** Sets what one increase step adds, a fraction of the configured rate from 0.000001 to 1. Default 0.1. */
    public void setAdaptiveIncrease(double adaptiveIncrease) {
        this.adaptiveIncrease = adaptiveIncrease;
    }

    /** How long after a cut further signals are ignored, in milliseconds. Default 1000 (1s). */
    public long getAdaptiveHold() {
        return adaptiveHold;
    }

    /** Sets how long after a cut further signals are ignored, in milliseconds, 0 to 1h. Default 1s. */
    public void setAdaptiveHold(long adaptiveHold) {
        this.adaptiveHold = adaptiveHold;
    }

    /** How long an idle key (its bucket full all along) keeps its learned rate, in milliseconds. Default 60000 (1m). */
    public long getAdaptiveMemory() {
        return adaptiveMemory;
    }

    /** Sets how long an idle key (its bucket full all along) keeps its learned rate, in milliseconds, 0 to 1d. Default 1m. */
    public void setAdaptiveMemory(long adaptiveMemory) {
        this.adaptiveMemory = adaptiveMemory;
    }

    /** Several limits per bucket ({@code 10/1s,1000/1h}), or null (the default) for capacity and refill. */
    public String getLimits() {
        return limits;
    }

    /** Sets several limits per bucket, replacing capacity, refillAmount and refillPeriod. Default none. */
    public void setLimits(String limits) {
        this.limits = limits;
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
}
