package io.tokenbucket.store.redis;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.netty.channel.ConnectTimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection of {@link RedisConnections} and its lease count: opened at once, or, when Redis cannot be reached
 * (refused, no route, connect timeout, or an outage reply such as {@code LOADING} or {@code ERR max number of clients
 * reached}: {@link RedisRefusals}), in the background with a backoff from 50 ms to one second, until it opens
 * or the last lease is given back. Any other failure (a wrong password, TLS, a bad URI) fails {@link #open} at once.
 */
final class SharedConnection {

    private static final Logger LOG = LoggerFactory.getLogger(RedisConnections.class);
    private static final long FIRST_RETRY_MILLIS = 50;
    private static final long MAX_RETRY_MILLIS = 1000;
    /** The longest a {@link #close()} waits for the connection to close and an owned client to shut down. */
    static final long CLOSE_TIMEOUT_MILLIS = 5000;
    /** How long a client's shutdown gives its threads, Lettuce's own default (after a quiet period of 0). */
    private static final long SHUTDOWN_TIMEOUT_SECONDS = 2;

    final AbstractRedisClient client;
    final boolean owned;
    final String where;
    final RedisUriText text;
    /** Whether Redis answers: a script call of {@code TIME} alone, the commands a store sends anyway. */
    final RedisProbe probe = new RedisProbe(() -> {
        RedisClusterAsyncCommands<String, String> c = this.commands;
        return c == null ? null : BucketScript.run(c, new String[0], "probe", "1", "-1");
    }, () -> this.lastFailure);
    volatile StatefulConnection<String, String> connection;
    volatile RedisClusterAsyncCommands<String, String> commands;
    volatile Throwable lastFailure;
    int leases;
    private boolean closed;
    private int attempts;
    /** What {@link RedisConnections} synchronizes on: a lease's close and a background retry exclude each other. */
    private final Object lock;
    private final Supplier<ScheduledExecutorService> connector;

    /**
     * @param client    the client to connect with
     * @param owned     whether it was created by {@link RedisConnections} (then shut down with the connection)
     * @param text      what may be shown of its URI, null for an application's client
     * @param lock      what {@link RedisConnections} synchronizes on
     * @param connector the scheduler of background connects, created on first use
     */
    SharedConnection(AbstractRedisClient client, boolean owned, RedisUriText text, Object lock,
                     Supplier<ScheduledExecutorService> connector) {
        this.lock = lock;
        this.connector = connector;
        this.client = client;
        this.owned = owned;
        this.text = text;
        this.where = text == null ? "the application's Redis client" : text.described();
    }

    /** Connects now; on a failure that waiting may mend, keeps trying in the background instead. */
    void open() {
        try {
            opened(connectNow(client));
        } catch (RuntimeException e) {
            if (!isUnreachable(e)) {
                throw e;
            }
            lastFailure = e;
            LOG.warn("Redis at {} cannot be reached ({}); connecting in the background", where,
                    rootMessage(e, text));
            retryLater();
        }
    }

    private synchronized void opened(StatefulConnection<String, String> c) {
        connection = c;
        commands = c instanceof StatefulRedisClusterConnection<String, String> cluster ? cluster.async()
                : ((StatefulRedisConnection<String, String>) c).async();
    }

    private void retryLater() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            long delay = Math.min(MAX_RETRY_MILLIS, FIRST_RETRY_MILLIS << Math.min(attempts++, 10));
            connector.get().schedule(this::retry, delay, TimeUnit.MILLISECONDS);
        }
    }

    private void retry() {
        synchronized (lock) {
            if (closed) {
                return;
            }
        }
        try {
            StatefulConnection<String, String> c = connectNow(client);
            synchronized (lock) {
                if (closed) {
                    c.close();
                    return;
                }
                opened(c);
            }
            LOG.info("Connected to Redis at {} after {} attempts", where, attempts + 1);
        } catch (RuntimeException e) {
            lastFailure = e;
            retryLater();
        }
    }

    /**
     * Closes the connection, and shuts the client down when it was created here, waiting at most
     * {@link #CLOSE_TIMEOUT_MILLIS} for both: Lettuce's own {@code close()} and {@code shutdown()} wait without a
     * limit, and wait forever when the client's I/O thread died (seen under Quarkus with Vert.x), which would hang
     * the stop of the Camel context. Past the limit it logs and goes on; the client's threads are daemons.
     */
    void close() {
        close(CLOSE_TIMEOUT_MILLIS);
    }

    /** {@link #close()} with another limit, for tests. */
    void close(long timeoutMillis) {
        closed = true;
        CompletableFuture<Void> closing = connection != null ? connection.closeAsync()
                : CompletableFuture.completedFuture(null);
        if (owned) {
            closing = closing.handle((done, failed) -> null)
                    .thenCompose(ignored -> client.shutdownAsync(0, SHUTDOWN_TIMEOUT_SECONDS, TimeUnit.SECONDS));
        }
        try {
            closing.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            LOG.warn("Redis client of {} did not close within {} ms; going on without waiting for it", where,
                    timeoutMillis);
        } catch (ExecutionException e) {
            LOG.warn("Redis client of {} failed to close: {}", where, rootMessage(e, text));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static StatefulConnection<String, String> connectNow(AbstractRedisClient client) {
        if (client instanceof RedisClusterClient cluster) {
            return cluster.connect(StringCodec.UTF8);
        }
        if (client instanceof RedisClient standalone) {
            return standalone.connect(StringCodec.UTF8);
        }
        throw new IllegalArgumentException("redisClient must be a Lettuce RedisClient or RedisClusterClient, was "
                + client.getClass().getName());
    }

    /**
     * Redis is down or not up yet (refused, no route, connect timeout, an outage reply to the handshake): worth trying
     * again, unlike a bad password.
     */
    static boolean isUnreachable(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof ConnectException || t instanceof NoRouteToHostException
                    || t instanceof ConnectTimeoutException || RedisRefusals.isOutageReply(t)) {
                return true;
            }
            for (Throwable suppressed : t.getSuppressed()) {
                if (isUnreachable(suppressed)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static String rootMessage(Throwable failure, RedisUriText text) {
        Throwable root = failure;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = root.getMessage() != null ? root.getMessage() : root.getClass().getSimpleName();
        return text == null ? message : text.redact(message);
    }
}
