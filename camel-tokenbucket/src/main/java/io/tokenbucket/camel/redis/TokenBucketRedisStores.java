package io.tokenbucket.camel.redis;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketStatistics;
import io.tokenbucket.camel.TokenBucketStoreException;
import io.tokenbucket.camel.producer.TokenBucketExceptions;
import io.tokenbucket.camel.producer.TokenBucketStoreBinding;
import io.lettuce.core.AbstractRedisClient;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.FallbackBucketStore;
import io.tokenbucket.store.StoreRefusedException;
import io.tokenbucket.store.redis.RedisBucketStore;
import io.tokenbucket.store.redis.RedisConnections;
import io.tokenbucket.store.local.LocalBucketStore;
import io.tokenbucket.store.redis.RedisUriText;
import org.apache.camel.spi.Registry;

/**
 * Opens the Redis store of a {@code store=redis} endpoint. Kept apart from the endpoint so that Lettuce, an
 * optional dependency, is only loaded by applications that use Redis.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketRedisStores {

    private TokenBucketRedisStores() {
    }

    /**
     * Opens the Redis store of the endpoint {@code name}. When Redis answers, a probe runs what the endpoint needs
     * (the script's commands, and the release's PUBLISH for in-flight limits): a refusal fails the start.
     *
     * @param publishes whether the endpoint's keys have in-flight limits, whose releases are published
     * @param registry  where the application's Redis client may be bound
     * @param local     the component's local buckets of the name, for {@code onStoreError=local}
     * @throws TokenBucketStoreException when the connection cannot be made for a reason other than an unreachable
     *                                   Redis, or Redis refuses what the endpoint needs
     */
    public static TokenBucketStoreBinding.Opened open(String name, TokenBucketConfiguration config,
                                                      TokenBucketStatistics statistics, boolean publishes,
                                                      Registry registry, RedisConnections connections,
                                                      Supplier<LocalBucketStore> local)
            throws TokenBucketStoreException {
        Duration timeout = Duration.ofMillis(config.getStoreTimeout());
        Object client = config.getRedisClient();
        String uri = config.getRedisUri();
        if (client == null && uri == null) {
            Set<AbstractRedisClient> found = registry.findByType(AbstractRedisClient.class);
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
            throw lettuceLinkage(name, e);
        } catch (RuntimeException e) {
            throw TokenBucketExceptions.cannotConnect(name, where, redact, e);
        }
        RedisBucketStore redis = new RedisBucketStore(lease::commands, lease.isCluster(),
                RedisBucketStore.namespace(config.getKeyPrefix(), name), timeout,
                config.isRedisBatching(), statistics::storeBatch);
        BucketStore fallback = switch (config.getOnStoreError()) {
            case fail -> null;
            case allow -> FallbackBucketStore.ALLOW_ALL;
            case local -> local.get();
        };
        RedisConnections.Lease leased = lease;
        Supplier<Throwable> probe = () -> {
            Throwable connection = leased.probe(timeout);
            return connection != null ? connection : redis.probe(timeout, publishes);
        };
        // not the health check's probes, whose answers are reused for a second: a check right after must ask again
        if (lease.commands() != null && redis.probeNow(timeout, publishes) instanceof StoreRefusedException refused) {
            lease.close(); // a refusal at start is a mistake that waiting will not mend: the start fails
            throw TokenBucketExceptions.storeRefused(name, "redis at " + where, redact, refused);
        }
        AtomicReference<FallbackBucketStore> store = new AtomicReference<>();
        TokenBucketStoreWatcher watcher = new TokenBucketStoreWatcher(name, "redis at " + where,
                config.getOnStoreError(), redact, () -> fallback == null ? statistics.getStoreErrors()
                : store.get().fallbacks(), System::nanoTime, redis::forgetProbes);
        store.set(new FallbackBucketStore(redis, fallback, System::nanoTime, watcher));
        Supplier<Throwable> health = () -> {
            Throwable failure = probe.get();
            return failure != null ? failure : watcher.subscriptionRefusal();
        };
        return new TokenBucketStoreBinding.Opened(store.get(), lease, "redis at " + where, health, redact,
                onRelease -> leased.subscribe(redis.releasedChannel(), onRelease, watcher::subscribeRefused),
                publishes);
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
