package io.tokenbucket.testsupport.redis;

import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * A Redis Sentinel setup of real {@code redis-server} processes on loopback, from {@link RedisServers#sentinel}: two
 * data nodes (a master and its replica) and three Sentinels ({@code redis-server --sentinel}, the same binary) that
 * monitor them as {@value #MASTER_NAME} with a quorum of 2, {@code down-after-milliseconds} {@value #DOWN_AFTER_MILLIS}
 * and {@code failover-timeout} {@value #FAILOVER_TIMEOUT_MILLIS}, so a killed master is replaced within a few seconds.
 *
 * <p>Which data node is the master changes with a failover: {@link #master()} asks the Sentinels. A graceful failover
 * ({@link #failover()}) promotes the replica at once, but Sentinel turns the old master into a replica only some 8 to
 * 10 seconds later (it waits four of its publish periods before it converts a master it no longer names); until then
 * the old master still takes writes. {@link #awaitReplicated()} waits for that conversion.
 *
 * <p>{@link #close()} kills every process and deletes their directories.
 */
public final class RedisSentinelHandle implements AutoCloseable {

    /** The name the Sentinels monitor the master by: the {@code #masterName} of {@link #uri()}. */
    public static final String MASTER_NAME = "tbmaster";
    /** How long a master must not answer before a Sentinel thinks it down, in milliseconds. */
    public static final int DOWN_AFTER_MILLIS = 1000;
    /** Sentinel's {@code failover-timeout}, in milliseconds. */
    public static final int FAILOVER_TIMEOUT_MILLIS = 4000;
    /** How long the setup may take to settle (a replica in sync, every Sentinel knowing it and the others). */
    public static final Duration SETTLE_TIMEOUT = Duration.ofSeconds(30);

    private final List<RedisHandle> dataNodes;
    private final List<RedisHandle> sentinels;
    private final String password;

    RedisSentinelHandle(List<RedisHandle> dataNodes, List<RedisHandle> sentinels, String password) {
        this.dataNodes = List.copyOf(dataNodes);
        this.sentinels = List.copyOf(sentinels);
        this.password = password;
    }

    /** @return the two data nodes, the first master at the start */
    public List<RedisHandle> dataNodes() {
        return dataNodes;
    }

    /** @return the three Sentinels */
    public List<RedisHandle> sentinels() {
        return sentinels;
    }

    /** @return {@code redis-sentinel://127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3#tbmaster}, without credentials */
    public String uri() {
        return "redis-sentinel://" + hosts() + "#" + MASTER_NAME;
    }

    /**
     * @return {@link #uri()} with the data nodes' password ({@code redis-sentinel://:PASSWORD@...#tbmaster}) when they
     *         have one; the Sentinels themselves need none
     */
    public String authenticatedUri() {
        return password == null ? uri()
                : "redis-sentinel://:" + URLEncoder.encode(password, StandardCharsets.UTF_8) + "@" + hosts() + "#"
                        + MASTER_NAME;
    }

    /** @return the data nodes' {@code requirepass}, or null */
    public String password() {
        return password;
    }

    /**
     * The data node the first Sentinel that answers names as master ({@code SENTINEL get-master-addr-by-name}).
     *
     * @throws IllegalStateException when no Sentinel answers or the one named is not a data node of this setup
     */
    public RedisHandle master() {
        RuntimeException last = null;
        for (RedisHandle sentinel : sentinels) {
            if (!sentinel.isRunning()) {
                continue;
            }
            try {
                return named(sentinel);
            } catch (UncheckedIOException | RedisServers.RedisErrorReply e) {
                last = e;
            }
        }
        throw new IllegalStateException("no Sentinel names a master of " + MASTER_NAME, last);
    }

    /** @return the data node that is not {@code node} */
    public RedisHandle other(RedisHandle node) {
        return dataNodes.get(0) == node ? dataNodes.get(1) : dataNodes.get(0);
    }

    /**
     * Starts a graceful failover ({@code SENTINEL FAILOVER tbmaster} on the first Sentinel) and returns the master it
     * replaces, without waiting: {@link #awaitMaster} waits for the Sentinels to name the new one.
     *
     * @return the master before the failover
     */
    public RedisHandle failover() {
        RedisHandle before = master();
        sentinels.get(0).command("SENTINEL", "FAILOVER", MASTER_NAME);
        return before;
    }

    /**
     * Waits until every running Sentinel names {@code node} as the master, polling with a deadline of
     * {@link #SETTLE_TIMEOUT}.
     *
     * @param node a data node
     * @throws IllegalStateException when the deadline passes, with what each Sentinel names
     */
    public void awaitMaster(RedisHandle node) {
        await("every Sentinel naming " + node.uri() + " as master", () -> {
            for (RedisHandle sentinel : sentinels) {
                if (sentinel.isRunning()) {
                    RedisHandle named;
                    try {
                        named = named(sentinel);
                    } catch (RuntimeException e) {
                        return "Sentinel " + sentinel.uri() + ": " + e;
                    }
                    if (named != node) {
                        return "Sentinel " + sentinel.uri() + " names " + named.uri();
                    }
                }
            }
            return null;
        });
    }

    /**
     * Waits until the setup is whole: the master named by the Sentinels has the other data node as a replica in
     * sync ({@code master_link_status:up}), and every Sentinel knows one replica and two other Sentinels.
     *
     * @throws IllegalStateException when the deadline {@link #SETTLE_TIMEOUT} passes, with the last answer that was not
     *                               whole
     */
    public void awaitReplicated() {
        await("a replica in sync and every Sentinel knowing it and the others", () -> {
            RedisHandle master;
            try {
                master = master();
            } catch (RuntimeException e) {
                return e.toString();
            }
            RedisHandle replica = other(master);
            String info = answer(replica, "INFO", "replication");
            if (!info.contains("role:slave\r\n") || !info.contains("master_port:" + master.port() + "\r\n")
                    || !info.contains("master_link_status:up\r\n")) {
                return replica.uri() + " INFO replication:\n" + info;
            }
            for (RedisHandle sentinel : sentinels) {
                String fields = answer(sentinel, "SENTINEL", "MASTER", MASTER_NAME);
                if (!fields.contains("num-slaves, 1,") || !fields.contains("num-other-sentinels, 2,")
                        || !fields.contains("ip, " + RedisServers.HOST + ", port, " + master.port() + ",")) {
                    return "Sentinel " + sentinel.uri() + " SENTINEL MASTER: " + fields;
                }
            }
            return null;
        });
    }

    /** Kills every process and deletes their directories; idempotent. */
    @Override
    public void close() {
        sentinels.forEach(RedisHandle::close);
        dataNodes.forEach(RedisHandle::close);
    }

    @Override
    public String toString() {
        return "redis sentinel setup " + uri() + " over " + dataNodes.stream().map(RedisHandle::uri)
                .collect(Collectors.toList());
    }

    // ---------------------------------------------------------------- internals

    private String hosts() {
        return sentinels.stream().map(s -> RedisServers.HOST + ":" + s.port()).collect(Collectors.joining(","));
    }

    private RedisHandle named(RedisHandle sentinel) {
        Object reply = sentinel.command("SENTINEL", "get-master-addr-by-name", MASTER_NAME);
        if (reply instanceof List<?> address && address.size() == 2) {
            int port = Integer.parseInt(String.valueOf(address.get(1)));
            for (RedisHandle node : dataNodes) {
                if (node.port() == port) {
                    return node;
                }
            }
        }
        throw new IllegalStateException("Sentinel " + sentinel.uri() + " names " + reply + ", not a data node");
    }

    private static String answer(RedisHandle node, String... command) {
        try {
            return String.valueOf(node.command(command));
        } catch (UncheckedIOException | RedisServers.RedisErrorReply e) {
            return e.toString();
        }
    }

    /** Polls {@code notYet} (null once the condition holds, else what is not there yet) until the deadline. */
    private static void await(String what, Supplier<String> notYet) {
        long deadline = System.nanoTime() + SETTLE_TIMEOUT.toNanos();
        while (true) {
            String missing = notYet.get();
            if (missing == null) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no " + what + " within " + SETTLE_TIMEOUT + "; " + missing);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + what, e);
            }
        }
    }

    /** The Sentinels' settings for the master at {@code port}. */
    static List<String> sentinelSettings(int masterPort, String password) {
        List<String> settings = new ArrayList<>(List.of(
                "sentinel monitor " + MASTER_NAME + " " + RedisServers.HOST + " " + masterPort + " 2",
                "sentinel down-after-milliseconds " + MASTER_NAME + " " + DOWN_AFTER_MILLIS,
                "sentinel failover-timeout " + MASTER_NAME + " " + FAILOVER_TIMEOUT_MILLIS,
                "sentinel parallel-syncs " + MASTER_NAME + " 1"));
        if (password != null) {
            settings.add("sentinel auth-pass " + MASTER_NAME + " " + password);
        }
        return settings;
    }
}
