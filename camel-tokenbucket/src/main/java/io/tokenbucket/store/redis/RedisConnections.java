package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;

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
 * <p>URIs: whatever Lettuce's {@link RedisURI} accepts ({@code redis://[user:password@]host:port[/db]},
 * {@code rediss://} for TLS, {@code redis-sentinel://...}); a Redis Cluster is named by
 * {@code redis-cluster://[user:password@]host:port[,host:port...]} (or {@code rediss-cluster://}), the seed
 * nodes of the cluster.
 */
public final class RedisConnections implements AutoCloseable {

    private static final Pattern USER_INFO = Pattern.compile("(?<=://)[^@/]*@");

    private final Map<Object, Shared> shared = new HashMap<>();
    private ClientResources resources;

    /** A share of one connection; {@link #close()} gives it back. */
    public final class Lease implements AutoCloseable {
        private final Object id;
        private final Shared connection;
        private boolean closed;

        private Lease(Object id, Shared connection) {
            this.id = id;
            this.connection = connection;
        }

        /** The asynchronous commands of the shared connection (standalone or cluster). */
        public RedisClusterAsyncCommands<String, String> commands() {
            return connection.commands;
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

    private static final class Shared {
        final AbstractRedisClient client;
        final boolean owned;
        final StatefulConnection<String, String> connection;
        final RedisClusterAsyncCommands<String, String> commands;
        int leases;

        Shared(AbstractRedisClient client, boolean owned, StatefulConnection<String, String> connection,
               RedisClusterAsyncCommands<String, String> commands) {
            this.client = client;
            this.owned = owned;
            this.connection = connection;
            this.commands = commands;
        }

        void close() {
            connection.close();
            if (owned) {
                client.shutdown();
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
        Shared s = shared.get(uri);
        if (s == null) {
            s = connect(createClient(uri, timeout), true);
            shared.put(uri, s);
        }
        s.leases++;
        return new Lease(uri, s);
    }

    /**
     * A lease on a connection made on an application-owned client ({@link RedisClient} or
     * {@link RedisClusterClient}), which is never shut down here.
     */
    public synchronized Lease acquire(AbstractRedisClient client) {
        Shared s = shared.get(client);
        if (s == null) {
            s = connect(client, false);
            shared.put(client, s);
        }
        s.leases++;
        return new Lease(client, s);
    }

    /** Closes every connection and every client created here, and the shared client resources. */
    @Override
    public synchronized void close() {
        shared.values().forEach(Shared::close);
        shared.clear();
        if (resources != null) {
            resources.shutdown();
            resources = null;
        }
    }

    /** {@code uri} with any user name and password replaced by {@code ***}: safe to log. */
    public static String mask(String uri) {
        return uri == null ? null : USER_INFO.matcher(uri).replaceAll("***@");
    }

    private static Shared connect(AbstractRedisClient client, boolean owned) {
        if (client instanceof RedisClusterClient cluster) {
            StatefulRedisClusterConnection<String, String> c = cluster.connect(StringCodec.UTF8);
            return new Shared(client, owned, c, c.async());
        }
        if (client instanceof RedisClient standalone) {
            StatefulRedisConnection<String, String> c = standalone.connect(StringCodec.UTF8);
            return new Shared(client, owned, c, c.async());
        }
        throw new IllegalArgumentException("redisClient must be a Lettuce RedisClient or RedisClusterClient, was "
                + client.getClass().getName());
    }

    private AbstractRedisClient createClient(String uri, Duration timeout) {
        if (resources == null) {
            resources = ClientResources.builder()
                    .reconnectDelay(Delay.exponential(Duration.ofMillis(50), Duration.ofSeconds(1), 2,
                            java.util.concurrent.TimeUnit.MILLISECONDS))
                    .build();
        }
        String scheme = uri.substring(0, Math.max(0, uri.indexOf("://")));
        if (scheme.equals("redis-cluster") || scheme.equals("rediss-cluster")) {
            RedisClusterClient client = RedisClusterClient.create(resources, clusterSeeds(uri, scheme));
            // A cluster connection opens its node connections lazily, on the first command for each node:
            // rejecting commands while disconnected would reject those first commands too. Commands are
            // buffered instead, and the timeout bounds how long any of them waits.
            client.setOptions(ClusterClientOptions.builder()
                    .timeoutOptions(TimeoutOptions.enabled(timeout))
                    .topologyRefreshOptions(ClusterTopologyRefreshOptions.builder()
                            .enableAllAdaptiveRefreshTriggers().build())
                    .build());
            return client;
        }
        RedisClient client = RedisClient.create(resources, parse(uri));
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(timeout))
                .build());
        return client;
    }

    /** {@code redis-cluster://[userinfo@]h1:p1,h2:p2} to one {@code redis://[userinfo@]h:p} per seed. */
    private static List<RedisURI> clusterSeeds(String uri, String scheme) {
        String rest = uri.substring(scheme.length() + 3);
        String userInfo = "";
        int at = rest.lastIndexOf('@');
        if (at >= 0) {
            userInfo = rest.substring(0, at + 1);
            rest = rest.substring(at + 1);
        }
        String base = scheme.startsWith("rediss") ? "rediss://" : "redis://";
        List<RedisURI> seeds = new ArrayList<>();
        for (String hostPort : rest.split(",")) {
            if (!hostPort.isBlank()) {
                seeds.add(parse(base + userInfo + hostPort.trim()));
            }
        }
        if (seeds.isEmpty()) {
            throw new IllegalArgumentException("redisUri names no cluster node: " + mask(uri));
        }
        return seeds;
    }

    private static RedisURI parse(String uri) {
        try {
            return RedisURI.create(uri);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("redisUri is not a valid Redis URI: " + mask(uri), null);
        }
    }
}
