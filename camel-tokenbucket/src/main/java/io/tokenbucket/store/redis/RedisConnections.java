package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;

/**
 * The Redis connections of one component: one client and one connection per Redis URI (or per
 * application-owned client), shared by every endpoint that names it, counted, and closed with the last one.
 *
 * <p>A client created here uses shared {@link ClientResources} (one set of Netty threads for all clients),
 * rejects commands while disconnected instead of queueing them (standalone; a cluster buffers them while a
 * node connection opens), times commands out after the store timeout (a store error is a policy decision,
 * never a hang), and reconnects with a backoff capped at one second, so
 * the store recovers within a second or two of Redis coming back. A client owned by the application is used
 * as it is and never shut down here; only the connection made on it is closed.
 *
 * <p>When Redis cannot be reached at the first connect (connection refused, no route, connect timeout: Redis is
 * down or not up yet), the lease is given anyway, without a connection ({@link Lease#commands()} is null), and the
 * connection is made in the background, every second at most, until it opens: an application starts while its
 * Redis is down, and its store policy decides meanwhile. Any other failure (a wrong password, TLS, a bad URI)
 * is a mistake that waiting does not mend, and fails {@link #acquire} at once.
 *
 * <p>URIs: whatever Lettuce's {@link RedisURI} accepts ({@code redis://[user:password@]host:port[/db]},
 * {@code rediss://} for TLS, {@code redis-sentinel://...}); a Redis Cluster is named by
 * {@code redis-cluster://[user:password@]host:port[,host:port...]} (or {@code rediss-cluster://}), the seed
 * nodes of the cluster. {@link RedisUris} reads them. A connection made from a {@code redis-sentinel://} URI follows
 * the Sentinels' announcements of a new master ({@link SentinelWatch}).
 *
 * <p>This class shares and counts; {@link SharedConnection} opens one connection, now or in the background.
 */
public final class RedisConnections implements AutoCloseable {

    private final Map<Object, SharedConnection> shared = new HashMap<>();
    private ClientResources resources;
    private ScheduledExecutorService connector;

    /** A share of one connection; {@link #close()} gives it back. */
    public final class Lease implements AutoCloseable {
        private final Object id;
        private final SharedConnection connection;
        private boolean closed;

        private Lease(Object id, SharedConnection connection) {
            this.id = id;
            this.connection = connection;
        }

        /**
         * The asynchronous commands of the shared connection (standalone or cluster); null while the first
         * connection has not opened yet ({@link #notConnected()} says why).
         */
        public RedisClusterAsyncCommands<String, String> commands() {
            return connection.commands;
        }

        /** Whether the connection is to a Redis Cluster. */
        public boolean isCluster() {
            return connection.client instanceof RedisClusterClient;
        }

        /** Why there is no connection yet: the last failure to open it; null once it is open. */
        public Throwable notConnected() {
            return connection.commands == null ? connection.lastFailure : null;
        }

        /**
         * Whether Redis answers within {@code timeout} (a script call of {@code TIME} alone): null when it does, else
         * why not. One probe per shared connection, its answer reused for a second, so every endpoint on it may ask.
         */
        public Throwable probe(Duration timeout) {
            return connection.probe.check(timeout);
        }

        /**
         * Calls {@code onMessage} on every message published to {@code channel}, on a publish/subscribe connection of
         * its own made on this lease's client (Lettuce subscribes again after a reconnect), until the answer is
         * closed. The connection is made in the background, on the thread of the background connects, and tried
         * again every second while Redis cannot be reached or refuses the {@code SUBSCRIBE}, so the caller never
         * waits for it. {@code onMessage} runs on Lettuce's I/O thread and must not block; a message {@code probe}
         * (a store's probe, {@link RedisBucketStore#probe}) is not passed on.
         *
         * @param refused hears each refusal of the {@code SUBSCRIBE} (a
         *                {@link io.tokenbucket.store.StoreRefusedException}: an ACL without the command or the
         *                channel), and null when a subscription is made
         */
        public AutoCloseable subscribe(String channel, Runnable onMessage,
                                       java.util.function.Consumer<Throwable> refused) {
            Subscription subscription = new Subscription(connection, channel, onMessage, refused);            connector().execute(subscription::open);
            return subscription;
        }

        /** Gives the lease back; the last one closes the connection, and the client when it was created here. */
        @Override
        public void close() {
            synchronized (RedisConnections.this) {
                if (closed) {
                    return;
                }
                closed = true;
                if (--connection.leases == 0) {
                    shared.remove(id);
                    connection.close();
                }
            }
        }
    }

    /**
     * A lease on the connection to {@code uri}, created on first use.
     *
     * @param uri     a Redis URI as described on this class
     * @param timeout the command timeout of a client created here
     * @throws io.lettuce.core.RedisConnectionException when Redis cannot be reached now; its message is masked
     */
    public synchronized Lease acquire(String uri, Duration timeout) {
        return lease(uri, () -> {
            AbstractRedisClient client = createClient(uri, timeout);
            RedisURI parsed = client instanceof RedisClient ? RedisUris.parse(uri) : null;
            return new SharedConnection(client, true, describe(uri), this, this::connector,
                    parsed != null && SentinelWatch.follows(parsed) ? parsed : null);
        });
    }

    /**
     * A lease on a connection made on an application-owned client ({@link RedisClient} or
     * {@link RedisClusterClient}), which is never shut down here.
     */
    public synchronized Lease acquire(AbstractRedisClient client) {
        return lease(client, () -> new SharedConnection(client, false, null, this, this::connector, null));
    }

    /** A lease on the connection of {@code id} (a URI or a client), opened with {@code opening} on first use. */
    private Lease lease(Object id, Supplier<SharedConnection> opening) {
        SharedConnection s = shared.get(id);
        if (s == null) {
            s = opening.get();
            try {
                s.open();
            } catch (RuntimeException e) {
                s.close(); // shuts down a client created here; an application's is never shut down
                throw e;
            }
            shared.put(id, s);
        }
        s.leases++;
        return new Lease(id, s);
    }

    /**
     * A subscription of {@link Lease#subscribe}: opened in the background, again while it fails, and again on the new
     * master when the Sentinels move the connection, until closed.
     */
    private final class Subscription implements AutoCloseable {
        private final SharedConnection connection;
        private final String channel;
        private final Runnable onMessage;
        private final java.util.function.Consumer<Throwable> refused;
        private final AutoCloseable following;
        private StatefulRedisPubSubConnection<String, String> pubSub; // guarded by this
        private boolean closed; // guarded by this

        Subscription(SharedConnection connection, String channel, Runnable onMessage,
                     java.util.function.Consumer<Throwable> refused) {
            this.connection = connection;
            this.channel = channel;
            this.onMessage = onMessage;
            this.refused = refused;
            this.following = connection.whenMoved(this::reopen);
        }

        /** After a move: the old master publishes nothing any more; subscribes on the new one. */
        synchronized void reopen() {
            if (pubSub != null) {
                pubSub.closeAsync();
                pubSub = null;
            }
            open();
        }

        synchronized void open() {
            if (closed) {
                return;
            }
            try {
                pubSub = connection.connectPubSub();
                pubSub.addListener(new RedisPubSubAdapter<>() {
                    @Override
                    public void message(String from, String message) {
                        if (!"probe".equals(message)) {
                            onMessage.run();
                        }
                    }
                });
                StatefulRedisPubSubConnection<String, String> opened = pubSub;
                pubSub.async().subscribe(channel).whenComplete((done, failure) -> subscribed(opened, failure));
            } catch (RuntimeException unreachable) {
                connector().schedule(this::open, 1, TimeUnit.SECONDS);
            }
        }

        /** A refused {@code SUBSCRIBE} is told, and tried again on a new connection a second later. */
        private void subscribed(StatefulRedisPubSubConnection<String, String> opened, Throwable failure) {
            Throwable cause = failure == null ? null : RedisRefusals.classify(failure);
            if (!(cause instanceof io.tokenbucket.store.StoreRefusedException)) {
                if (cause == null) {
                    refused.accept(null);
                }
                return; // an unreachable Redis: Lettuce subscribes again when it reconnects
            }
            refused.accept(cause);
            synchronized (this) {
                if (pubSub == opened) {
                    pubSub = null;
                }
            }
            opened.closeAsync();
            connector().schedule(this::open, 1, TimeUnit.SECONDS);
        }

        @Override
        public synchronized void close() {
            closed = true;
            try {
                following.close();
            } catch (Exception cannot) {
                // removing from a list: nothing to fail
            }
            if (pubSub != null) {
                pubSub.closeAsync();
            }
        }
    }

    /** Closes every connection and every client created here, and the shared client resources. */
    @Override
    public synchronized void close() {
        shared.values().forEach(SharedConnection::close);
        shared.clear();
        if (connector != null) {
            connector.shutdownNow();
            connector = null;
        }
        if (resources != null) {
            resources.shutdown();
            resources = null;
        }
    }

    /**
     * What may be shown of {@code uri}: rebuilt from the parsed URI with its credentials as {@code ***} (never
     * masked by a pattern over the text), and a redaction of its secrets for other texts ({@link RedisUris}).
     */
    public static RedisUriText describe(String uri) {
        return RedisUris.describe(uri);
    }

    private synchronized ScheduledExecutorService connector() {
        if (connector == null) { // a thread only once some Redis was down at its first connect
            connector = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "tokenbucket-redis-connect");
                t.setDaemon(true);
                return t;
            });
        }
        return connector;
    }

    private AbstractRedisClient createClient(String uri, Duration timeout) {
        if (resources == null) {
            resources = ClientResources.builder()
                    .reconnectDelay(Delay.exponential(Duration.ofMillis(50), Duration.ofSeconds(1), 2,
                            java.util.concurrent.TimeUnit.MILLISECONDS))
                    .build();
        }
        if (RedisUris.isCluster(RedisUris.scheme(uri))) {
            RedisClusterClient client = RedisClusterClient.create(resources, RedisUris.clusterSeeds(uri));
            // Commands are rejected while a node connection is down, as on a standalone Redis: otherwise Lettuce
            // sends the commands a lost connection had in flight again once it reconnects, and a script that ran
            // but whose answer was lost would run twice (charged twice). A node connection opened lazily, on the
            // first command for its node, is connected before that command is written, so it is not rejected.
            client.setOptions(ClusterClientOptions.builder()
                    .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                    .timeoutOptions(TimeoutOptions.enabled(timeout))
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            .enableAllAdaptiveRefreshTriggers().build())
                    .build());
            return client;
        }
        RedisClient client = RedisClient.create(resources, RedisUris.parse(uri));
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(timeout))
                .build());
        return client;
    }
}
