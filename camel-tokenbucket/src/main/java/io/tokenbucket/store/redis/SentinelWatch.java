package io.tokenbucket.store.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Supplier;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisReadOnlyException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.event.command.CommandFailedEvent;
import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;

/**
 * Follows the master of a {@code redis-sentinel://} URI for one {@link SharedConnection}, so that it stops writing to
 * a master the moment the Sentinels replace it instead of when Sentinel demotes it.
 *
 * <p>Why: Lettuce resolves the master through the Sentinels when it connects, and keeps the connection. After a
 * graceful failover ({@code SENTINEL FAILOVER}, a maintenance) the old master stays a master, taking writes, until
 * Sentinel turns it into a replica some 10 s later; an instance that connects meanwhile writes to the new master, and
 * a key then has two buckets. So this subscribes to {@value #CHANNEL} on every Sentinel of the URI and, on the first
 * announcement for its master name, has the connection replaced by one to the new master, resolved through the
 * Sentinel that announced it (the others may learn it up to two seconds later). A command refused with
 * {@code READONLY} (an announcement missed while no Sentinel could be reached) replaces it too, through the Sentinels
 * in the URI's order, at most once a second.
 *
 * <p>What it cannot prevent: writes that reached the old master between the replica's promotion and the
 * announcement (about a second) are lost with it, as any write not yet replicated is; at most one bucket's worth on a
 * key, since the new master answers from the state it last replicated.
 *
 * <p>Subscriptions are made in the background on the connector thread, again every second while a Sentinel cannot be
 * reached; Lettuce subscribes again after a reconnect.
 */
final class SentinelWatch implements AutoCloseable {

    /** The Sentinel channel announcing a new master: {@code <name> <old ip> <old port> <new ip> <new port>}. */
    static final String CHANNEL = "+switch-master";
    private static final long READ_ONLY_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final RedisClient client;
    private final RedisURI uri;
    private final Supplier<ScheduledExecutorService> connector;
    /** The connector, taken once at {@link #start} so that Lettuce's I/O thread never waits for its lock. */
    private volatile ScheduledExecutorService executor;
    private final BiConsumer<RedisURI, String> moveTo;
    private final List<StatefulRedisPubSubConnection<String, String>> subscriptions = new ArrayList<>(); // guarded by this
    /** The new master of the last announcement followed, {@code host:port}; null after a READONLY. Guarded by this. */
    private String following;
    /** When a READONLY may next replace the connection ({@link System#nanoTime()}). Guarded by this. */
    private long nextReadOnly = System.nanoTime();
    private boolean closed; // guarded by this

    /**
     * Registers the READONLY listener on {@code client}, which must be done before its connections are made.
     *
     * @param client    the client created for {@code uri}
     * @param uri       a URI naming a master through Sentinels ({@link #follows})
     * @param connector where subscriptions and {@code moveTo} run
     * @param moveTo    replaces the connection with one made with the given URI; the text says why, for the log
     */
    SentinelWatch(RedisClient client, RedisURI uri, Supplier<ScheduledExecutorService> connector,
                  BiConsumer<RedisURI, String> moveTo) {
        this.client = client;
        this.uri = uri;
        this.connector = connector;
        this.moveTo = moveTo;
        client.addListener(new CommandListener() {
            @Override
            public void commandFailed(CommandFailedEvent event) {
                if (isReadOnly(event.getCause())) {
                    readOnly();
                }
            }
        });
    }

    /** Whether {@code uri} names a master through Sentinels. */
    static boolean follows(RedisURI uri) {
        return uri.getSentinelMasterId() != null && !uri.getSentinels().isEmpty();
    }

    /** Subscribes to every Sentinel of the URI, in the background. */
    void start() {
        executor = connector.get();
        for (RedisURI sentinel : uri.getSentinels()) {
            run(() -> subscribe(sentinel));
        }
    }

    /** Runs {@code task} on the connector thread; nothing once the connections are closed. */
    private void run(Runnable task) {
        ScheduledExecutorService on = executor;
        try {
            if (on != null) {
                on.execute(task);
            }
        } catch (RejectedExecutionException closing) {
            // the component's connections are closing: nothing left to follow
        }
    }

    private void subscribe(RedisURI sentinel) {
        synchronized (this) {
            if (closed) {
                return;
            }
        }
        StatefulRedisPubSubConnection<String, String> pubSub;
        try {
            pubSub = client.connectPubSub(StringCodec.UTF8, sentinel);
        } catch (RuntimeException unreachable) {
            try {
                executor.schedule(() -> subscribe(sentinel), 1, TimeUnit.SECONDS);
            } catch (RejectedExecutionException closing) {
                // the component's connections are closing: nothing left to follow
            }
            return;
        }
        pubSub.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String channel, String message) {
                announced(sentinel, message);
            }
        });
        pubSub.async().subscribe(CHANNEL);
        synchronized (this) {
            if (!closed) {
                subscriptions.add(pubSub);
                return;
            }
        }
        pubSub.closeAsync();
    }

    /** A {@value #CHANNEL} message from {@code sentinel}: on Lettuce's I/O thread, so the move runs elsewhere. */
    void announced(RedisURI sentinel, String message) {
        String[] fields = message.split(" ");
        if (fields.length != 5 || !fields[0].equals(uri.getSentinelMasterId())) {
            return;
        }
        String target = fields[3] + ":" + fields[4];
        synchronized (this) {
            if (closed || target.equals(following)) {
                return; // every Sentinel announces it: the first one is followed
            }
            following = target;
        }
        RedisURI via = askingFirst(sentinel);
        String why = "the Sentinels moved master " + fields[0] + " from " + fields[1] + ":" + fields[2] + " to " + target;
        run(() -> moveTo.accept(via, why));
    }

    private void readOnly() {
        synchronized (this) {
            long now = System.nanoTime();
            if (closed || now - nextReadOnly < 0) {
                return;
            }
            nextReadOnly = now + READ_ONLY_EVERY_NANOS;
            following = null;
        }
        run(() -> moveTo.accept(uri, "a command was refused with READONLY: the master of "
                + uri.getSentinelMasterId() + " is a replica now"));
    }

    /** The URI with {@code sentinel} first among its Sentinels: the one that knows the new master already. */
    private RedisURI askingFirst(RedisURI sentinel) {
        RedisURI.Builder builder = RedisURI.builder(uri).withSentinelMasterId(uri.getSentinelMasterId())
                .withSentinel(sentinel);
        for (RedisURI other : uri.getSentinels()) {
            if (other != sentinel) {
                builder.withSentinel(other);
            }
        }
        return builder.build();
    }

    /** A refusal from a replica: {@code READONLY You can't write against a read only replica.}, or within a script's. */
    static boolean isReadOnly(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof RedisReadOnlyException
                    || t.getMessage() != null && t.getMessage().contains("You can't write against a read only")) {
                return true;
            }
        }
        return false;
    }

    /** Closes the subscriptions; no move starts after this. */
    @Override
    public void close() {
        List<StatefulRedisPubSubConnection<String, String>> open;
        synchronized (this) {
            closed = true;
            open = new ArrayList<>(subscriptions);
            subscriptions.clear();
        }
        open.forEach(StatefulRedisPubSubConnection::closeAsync);
    }
}
