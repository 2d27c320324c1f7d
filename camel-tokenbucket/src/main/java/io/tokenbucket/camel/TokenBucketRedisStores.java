package io.tokenbucket.camel;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
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
                  UnaryOperator<String> redact, java.util.function.Function<Runnable, AutoCloseable> releases) {
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
        } catch (LinkageError e) {
            throw lettuceLinkage(endpoint.getName(), e);
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
                probe, redact, onRelease -> leased.subscribe(redis.releasedChannel(), onRelease));
    }

    /**
     * Lettuce's client could not be created because a class it needs is missing: Lettuce 7 on Netty 4.1, as when
     * an application pins lettuce-core 7 (in place of the component's Lettuce 6) beside a Netty 4.1 that Spring Boot
     * 3.5's BOM, Quarkus or a broker client such as Artemis brings. Here, not in
     * TokenBucketExceptions, because it names Lettuce's and Netty's classes and only Redis users load this class.
     */
    private static TokenBucketStoreException lettuceLinkage(String endpointName, LinkageError e) {
        String lettuce = io.lettuce.core.RedisClient.class.getPackage().getImplementationVersion();
        String netty;
        try {
            Map<String, io.netty.util.Version> modules = io.netty.util.Version.identify();
            io.netty.util.Version transport = modules.get("netty-transport");
            netty = transport == null ? "version unknown" : "netty-transport " + transport.artifactVersion();
            // a mix, as when a broker client brings Netty 4.1 and a pinned Lettuce 7 some modules of 4.2
            Set<String> others = new TreeSet<>();
            modules.values().forEach(v -> others.add(v.artifactVersion()));
            if (transport != null) {
                others.remove(transport.artifactVersion());
            }
            if (!others.isEmpty()) {
                netty += ", other Netty modules " + String.join(", ", others);
            }
        } catch (LinkageError | RuntimeException unknown) {
            netty = "version unknown";
        }
        return new TokenBucketStoreException(endpointName, null, "tokenbucket:" + endpointName
                + ": the Redis client cannot be created"
                + " (" + e + "): Lettuce " + (lettuce == null ? "(version unknown)" : lettuce) + " does not run on"
                + " the Netty on the class path (" + netty + "). Lettuce 7 needs Netty 4.2; Lettuce 6, which the"
                + " component brings, runs on Netty 4.1 and 4.2: align them, either by removing the application's"
                + " version of lettuce-core (or leaving it to the BOM that manages Netty, as Spring Boot 3.5's"
                + " does), or by importing io.netty:netty-bom 4.2.x with Lettuce 7", e);
    }
}
