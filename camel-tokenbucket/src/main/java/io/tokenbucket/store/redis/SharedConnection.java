package io.tokenbucket.store.redis;

import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.netty.channel.ConnectTimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection of {@link RedisConnections} and its lease count: opened at once, or, when Redis cannot be reached
 * (refused, no route, connect timeout, an outage reply such as {@code LOADING} or {@code ERR max number of clients
 * reached}: {@link RedisRefusals}, or a connection closed before its answer could be read,
 * {@value #LOST_ANSWER_ATTEMPTS} times in a row), in the background with a backoff from 50 ms to one second, until it
 * opens or the last lease is given back. Any other failure (a wrong password, TLS, a bad URI) fails {@link #open} at
 * once.
 *
 * <p>A connection to the master of a {@code redis-sentinel://} URI follows it ({@link SentinelWatch}): when the
 * Sentinels announce a new master, or a command is refused with {@code READONLY}, a connection to the new master
 * replaces this one, and the old one is closed (calls still out on it fail: the store policy decides).
 */
final class SharedConnection {

    private static final Logger LOG = LoggerFactory.getLogger(RedisConnections.class);
    private static final long FIRST_RETRY_MILLIS = 50;
    private static final long MAX_RETRY_MILLIS = 1000;
    /** The longest a {@link #close()} waits for the connection to close and an owned client to shut down. */
    static final long CLOSE_TIMEOUT_MILLIS = 5000;
    /** How long a client's shutdown gives its threads, Lettuce's own default (after a quiet period of 0). */
    private static final long SHUTDOWN_TIMEOUT_SECONDS = 2;
    /**
     * How many connects in a row may lose the server's answer before the server counts as not serving. Lettuce reads
     * the handshake's answer through a handler it looks up once the TCP connect completes; a server that answers and
     * closes at once (Redis at {@code maxclients} writes its error and closes, as does a TLS port given plain text) can
     * close the channel first, and Lettuce then fails the connect with {@value #LOST_ANSWER} instead of the answer
     * (up to one connect in four here, with Redis 6.2 and 7.0 alike). Connecting again at once gets the answer.
     */
    static final int LOST_ANSWER_ATTEMPTS = 5;
    /** Lettuce's message when the channel closed before its handshake handler could be found. */
    private static final String LOST_ANSWER = "RedisHandshakeHandler not registered";

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
    /** Follows the master named through Sentinels; null for any other URI and for an application's client. */
    private final SentinelWatch sentinels;
    /** The URI of the last move (through the Sentinels, the announcing one first); null: the client's own. */
    private volatile RedisURI movedWith;
    /** What runs after each move: the publish/subscribe connections made on this one's client follow it. */
    private final List<Runnable> movedListeners = new CopyOnWriteArrayList<>();

    /**
     * @param client    the client to connect with
     * @param owned     whether it was created by {@link RedisConnections} (then shut down with the connection)
     * @param text      what may be shown of its URI, null for an application's client
     * @param lock      what {@link RedisConnections} synchronizes on
     * @param connector the scheduler of background connects, created on first use
     * @param sentinels the URI the client was created with, when it names a master through Sentinels; else null
     */
    SharedConnection(AbstractRedisClient client, boolean owned, RedisUriText text, Object lock,
                     Supplier<ScheduledExecutorService> connector, RedisURI sentinels) {
        this.lock = lock;
        this.connector = connector;
        this.client = client;
        this.owned = owned;
        this.text = text;
        this.where = text == null ? "the application's Redis client" : text.described();
        this.sentinels = sentinels == null || !(client instanceof RedisClient standalone) ? null
                : new SentinelWatch(standalone, sentinels, connector, this::moveTo);
    }

    /** Connects now; on a failure that waiting may mend, keeps trying in the background instead. */
    void open() {
        if (sentinels != null) {
            sentinels.start();
        }
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
     * Replaces the connection with one made with {@code via} (the new master, found through the Sentinels), then
     * closes the old one; keeps the old one when the new one cannot be made (a demoted master's {@code READONLY}
     * asks again). Nothing to do before the first connection opened: that one asks the Sentinels itself.
     */
    private void moveTo(RedisURI via, String why) {
        synchronized (lock) {
            if (closed || connection == null) {
                return;
            }
        }
        StatefulConnection<String, String> moved;
        try {
            moved = ((RedisClient) client).connect(StringCodec.UTF8, via);
        } catch (RuntimeException e) {
            LOG.warn("Redis at {}: {}; cannot connect to the new master ({}), staying on the old one", where, why,
                    rootMessage(e, text));
            return;
        }
        StatefulConnection<String, String> old;
        synchronized (lock) {
            if (closed) {
                moved.closeAsync();
                return;
            }
            old = connection;
            opened(moved);
        }
        movedWith = via;
        old.closeAsync();
        LOG.warn("Redis at {}: {}; connected to the new master", where, why);
        movedListeners.forEach(Runnable::run);
    }

    /** A publish/subscribe connection on this connection's client, to the server this one is connected to. */
    StatefulRedisPubSubConnection<String, String> connectPubSub() {
        RedisURI via = movedWith;
        if (client instanceof RedisClusterClient cluster) {
            return cluster.connectPubSub();
        }
        return via == null ? ((RedisClient) client).connectPubSub()
                : ((RedisClient) client).connectPubSub(StringCodec.UTF8, via);
    }

    /** Runs {@code onMoved} on the connector thread after each move to a new master, until the answer is closed. */
    AutoCloseable whenMoved(Runnable onMoved) {
        movedListeners.add(onMoved);
        return () -> movedListeners.remove(onMoved);
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
        if (sentinels != null) {
            sentinels.close();
        }
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

    /** Connects, again at once while the server's answer is lost ({@link #LOST_ANSWER_ATTEMPTS} at most). */
    private static StatefulConnection<String, String> connectNow(AbstractRedisClient client) {
        for (int attempt = 1; ; attempt++) {
            try {
                return connectOnce(client);
            } catch (RuntimeException e) {
                if (attempt >= LOST_ANSWER_ATTEMPTS || !lostAnswer(e)) {
                    throw e;
                }
            }
        }
    }

    private static StatefulConnection<String, String> connectOnce(AbstractRedisClient client) {
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
     * Redis is down or not up yet (refused, no route, connect timeout, an outage reply to the handshake, a connection
     * closed before its answer could be read after {@link #connectNow} tried again): worth trying again, unlike a bad
     * password.
     */
    static boolean isUnreachable(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof ConnectException || t instanceof NoRouteToHostException
                    || t instanceof ConnectTimeoutException || RedisRefusals.isOutageReply(t) || isLostAnswer(t)) {
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

    /** Whether {@code failure} is a connect whose answer Lettuce lost ({@link #LOST_ANSWER_ATTEMPTS}). */
    private static boolean lostAnswer(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (isLostAnswer(t)) {
                return true;
            }
        }
        return false;
    }

    private static boolean isLostAnswer(Throwable t) {
        return t instanceof IllegalStateException && LOST_ANSWER.equals(t.getMessage());
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
