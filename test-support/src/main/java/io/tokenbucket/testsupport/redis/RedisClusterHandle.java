package io.tokenbucket.testsupport.redis;

import java.io.UncheckedIOException;
import java.util.List;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * A Redis Cluster of real {@code redis-server} masters (no replicas) on loopback, from {@link RedisServers#cluster()}.
 * Node {@code i} of {@code n} owns slots {@code [i * 16384 / n, (i + 1) * 16384 / n)}.
 *
 * <p>{@link #close()} kills every node and deletes their directories ({@code redis.conf}, {@code nodes.conf},
 * logs); a JVM shutdown hook does the same for a cluster left open. A single node can be {@link RedisHandle#stop()
 * stopped} and {@link RedisHandle#start() started} again through {@link #nodes()}: it keeps its {@code nodes.conf},
 * rejoins with its slots and no data; {@link #awaitClusterOk()} then waits for the cluster to heal.
 */
public final class RedisClusterHandle implements AutoCloseable {

    private final List<RedisHandle> nodes;

    RedisClusterHandle(List<RedisHandle> nodes) {
        this.nodes = List.copyOf(nodes);
    }

    /** @return the nodes, all masters, in slot order */
    public List<RedisHandle> nodes() {
        return nodes;
    }

    /** @return the nodes' ports, in slot order */
    public List<Integer> ports() {
        return nodes.stream().map(RedisHandle::port).collect(Collectors.toUnmodifiableList());
    }

    /** @return {@code redis://127.0.0.1:PORT} of every node, in slot order */
    public List<String> uris() {
        return nodes.stream().map(RedisHandle::uri).collect(Collectors.toUnmodifiableList());
    }

    /** @return the first node's URI, enough for {@code RedisClusterClient.create(seedUri())} to find the others */
    public String seedUri() {
        return nodes.get(0).uri();
    }

    /**
     * The node that was given {@code slot} when the cluster formed (e.g. with Lettuce's
     * {@code SlotHash.getSlot(key)}), for a test that stops the master of a given key.
     *
     * @param slot 0 to 16383
     * @return its master
     */
    public RedisHandle nodeForSlot(int slot) {
        if (slot < 0 || slot >= RedisServers.CLUSTER_SLOTS) {
            throw new IllegalArgumentException("slot " + slot);
        }
        int n = nodes.size();
        for (int i = 0; i < n; i++) {
            if (slot < (i + 1) * RedisServers.CLUSTER_SLOTS / n) {
                return nodes.get(i);
            }
        }
        throw new AssertionError(slot);
    }

    /**
     * Waits until every node reports {@code cluster_state:ok} and knows all the others, polling {@code CLUSTER INFO}
     * with a deadline of {@link RedisServers#CLUSTER_TIMEOUT}.
     *
     * @throws IllegalStateException when a node is stopped or the deadline passes (with the last CLUSTER INFO)
     */
    public void awaitClusterOk() {
        String knowsAll = "cluster_known_nodes:" + nodes.size() + "\r\n";
        awaitEveryNode("cluster_state:ok", info -> info.contains("cluster_state:ok\r\n") && info.contains(knowsAll),
                "CLUSTER", "INFO");
    }

    private void awaitEveryNode(String what, Predicate<String> ok, String... command) {
        long deadline = System.nanoTime() + RedisServers.CLUSTER_TIMEOUT.toNanos();
        while (true) {
            String notOk = null;
            for (RedisHandle node : nodes) {
                if (!node.isRunning()) {
                    throw new IllegalStateException("cluster node " + node.uri() + " is not running");
                }
                String reply;
                try {
                    reply = String.valueOf(node.command(command));
                } catch (UncheckedIOException | RedisServers.RedisErrorReply e) {
                    reply = e.toString();
                }
                if (!ok.test(reply)) {
                    notOk = node.uri() + " " + String.join(" ", command) + ":\n" + reply;
                    break;
                }
            }
            if (notOk == null) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no " + what + " within " + RedisServers.CLUSTER_TIMEOUT + "; "
                        + notOk);
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for " + what, e);
            }
        }
    }

    /** {@code FLUSHALL} on every node, e.g. between tests sharing one cluster. */
    public void flushAll() {
        nodes.forEach(RedisHandle::flushAll);
    }

    /** Kills every node and deletes their directories; idempotent. */
    @Override
    public void close() {
        nodes.forEach(RedisHandle::close);
    }

    @Override
    public String toString() {
        return "redis cluster " + uris();
    }
}
