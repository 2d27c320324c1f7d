package io.tokenbucket.camel;

import org.apache.camel.spi.UriParam;
import org.apache.camel.spi.UriParams;

/**
 * The options of {@code store=redis}, grouped: where Redis is, the prefix of its keys, how long a call may take,
 * what a failure means and whether calls are batched. Options of the {@code tokenbucket:} endpoint like any other
 * ({@link TokenBucketConfiguration} extends this class).
 */
@UriParams
public abstract class TokenBucketRedisOptions extends TokenBucketAdaptiveOptions {

    /** The Redis URI when none is given. */
    public static final String DEFAULT_REDIS_URI = "redis://localhost:6379";

    @UriParam(label = "redis", defaultValue = DEFAULT_REDIS_URI, secret = true, description = "The Redis for"
            + " store=redis, a Lettuce URI: redis://host:6379/0, with user and password as redis://user:secret, an"
            + " at sign, then the host; rediss:// for TLS; redis-sentinel://; redis-cluster://host1:7000,host2:7001."
            + " Endpoints with the same URI share one connection.")
    private String redisUri; // null: unset, so an application client in the registry may be used

    @UriParam(label = "redis,advanced", javaType = "io.lettuce.core.AbstractRedisClient", description = "A Lettuce"
            + " RedisClient or RedisClusterClient of the application, used instead of redisUri and never shut down"
            + " by the component. Default: the registry's only such client, if there is one.")
    private Object redisClient;

    @UriParam(label = "redis", defaultValue = "tokenbucket:", description = "The prefix of every Redis key"
            + " (tokenbucket:proxies:p1 for limiter proxies and key p1). Instances share a limit when they share"
            + " Redis and this prefix.")
    private String keyPrefix = "tokenbucket:";

    @UriParam(label = "redis", defaultValue = "fail", enums = "fail,allow,local", description = "When Redis"
            + " cannot be reached or does not answer within storeTimeout: fail: the exchange fails with"
            + " TokenBucketStoreException (nothing admitted without a token); allow: admit it, and count it; local:"
            + " throttle it with a local bucket of the same limits until Redis answers again. Not when Redis refuses"
            + " (NOPERM, a script error): that fails the exchange under every policy.")
    private TokenBucketStoreErrorPolicy onStoreError = TokenBucketStoreErrorPolicy.fail;

    @UriParam(label = "redis", defaultValue = "1s", javaType = "java.time.Duration", description = "How long one"
            + " Redis call may take before it counts as a store error.")
    private long storeTimeout = 1000;

    @UriParam(label = "redis,advanced", defaultValue = "true", description = "Whether reservations that arrive while"
            + " a call is on its way to Redis go together in the next script call (at most 256, in 4 lanes by key),"
            + " each still decided on its own, in arrival order. false: one script call per reservation.")
    private boolean redisBatching = true;

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

    /**
     * What happens when Redis cannot be reached or does not answer (not when it refuses). Default
     * {@link TokenBucketStoreErrorPolicy#fail}.
     */
    public TokenBucketStoreErrorPolicy getOnStoreError() {
        return onStoreError;
    }

    /**
     * Sets what happens when Redis cannot be reached or does not answer (not when it refuses). Default
     * {@link TokenBucketStoreErrorPolicy#fail}.
     */
    public void setOnStoreError(TokenBucketStoreErrorPolicy onStoreError) {
        this.onStoreError = onStoreError;
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
}
