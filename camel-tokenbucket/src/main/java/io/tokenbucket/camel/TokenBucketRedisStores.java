package io.tokenbucket.camel;

import java.time.Duration;
import java.util.Set;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

import io.lettuce.core.AbstractRedisClient;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.FallbackBucketStore;
import io.tokenbucket.store.redis.RedisBucketStore;
import io.tokenbucket.store.redis.RedisConnections;
import io.tokenbucket.store.redis.RedisUriText;

/**
 * Opens the Redis store of a {@code store=redis} endpoint. Kept apart from the endpoint so that Lettuce, an
 * optional dependency, is only loaded by applications that use Redis.
 */
final class TokenBucketRedisStores {

    private TokenBucketRedisStores() {
    }

    /**
     * An open Redis store with its failure policy, the lease to give back when the endpoint stops, where it is
     * (without credentials, for messages), a probe for the health check, and what removes the URI's secrets from
     * a text before it is shown.
     */
    record Opened(FallbackBucketStore store, AutoCloseable lease, String where, Supplier<Throwable> probe,
                  UnaryOperator<String> redact) {
    }

    static Opened open(TokenBucketEndpoint endpoint, RedisConnections connections) throws TokenBucketStoreException {
        TokenBucketConfiguration config = endpoint.getConfiguration();
        Duration timeout = Duration.ofMillis(config.getStoreTimeout());
        Object client = config.getRedisClient();
        String uri = config.getRedisUri();
        if (client == null && uri == null) {
            Set<AbstractRedisClient> found = endpoint.getCamelContext().getRegistry().findByType(AbstractRedisClient.class);
            client = found.size() == 1 ? found.iterator().next() : null;
        }
        if (uri == null) {
            uri = TokenBucketConfiguration.DEFAULT_REDIS_URI;
        }
        RedisUriText text = client != null ? null : RedisConnections.describe(uri);
        String where = text == null ? "the application's Redis client" : text.described();
        UnaryOperator<String> redact = text == null ? UnaryOperator.identity() : text::redact;
        RedisConnections.Lease lease;
        try {
            if (client == null) {
                lease = connections.acquire(uri, timeout);
            } else if (client instanceof AbstractRedisClient lettuce) {
                lease = connections.acquire(lettuce);
            } else {
                throw new IllegalArgumentException("redisClient must be a Lettuce RedisClient or RedisClusterClient,"
                        + " was " + client.getClass().getName());
            }
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (RuntimeException e) {
            throw TokenBucketExceptions.cannotConnect(endpoint.getName(), where, redact, e);
        }
        RedisBucketStore redis = new RedisBucketStore(lease::commands, lease.isCluster(),
                RedisBucketStore.namespace(config.getKeyPrefix(), endpoint.getName()), timeout,
                config.isRedisBatching(), endpoint.getStatistics()::storeBatch);
        BucketStore fallback = switch (config.getOnStoreError()) {
            case fail -> null;
            case allow -> FallbackBucketStore.ALLOW_ALL;
            case local -> endpoint.getComponent().localStore(endpoint.getName());
        };
        RedisConnections.Lease leased = lease;
        Supplier<Throwable> probe = () -> leased.probe(timeout);
        return new Opened(new FallbackBucketStore(redis, fallback, System::nanoTime), lease, "redis at " + where,
                probe, redact);
    }
}
