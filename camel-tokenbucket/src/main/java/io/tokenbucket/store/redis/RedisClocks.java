package io.tokenbucket.store.redis;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;

/**
 * The {@link RedisClockOffset} of each Redis server a store's calls run on: one for a standalone (or Sentinel)
 * Redis, one per master node on a Redis Cluster, whose nodes each keep a clock of their own. A script call runs on
 * the master that owns its key's hash slot, so its reply teaches, and its wait is mapped with, that node's estimate.
 *
 * <p>A slot can move to another node while a call is in flight (resharding, a failover); Lettuce then follows the
 * redirect and the reply carries the new node's clock. Such a reply must not teach the old node's estimate (its
 * clock may be ahead, which would map later slots early), so the caller asks {@link #still} after the reply: a call
 * whose key changed node is neither sampled nor mapped, and waits from the reply as Redis said (late, never early).
 *
 * <p>Bounded: the estimates are those of the masters in Lettuce's current view of the cluster; one for a node that
 * left is dropped when a new node is first seen.
 */
final class RedisClocks {

    private final Supplier<RedisClusterAsyncCommands<String, String>> commands;
    /** The standalone server's estimate; null on a cluster. */
    private final RedisClockOffset single;
    /** Each cluster master's estimate, by node id; unused on a standalone server. */
    private final ConcurrentHashMap<String, RedisClockOffset> nodes = new ConcurrentHashMap<>();

    /**
     * @param commands the store's connection, as it gives it (null while not open)
     * @param cluster  whether it is a Redis Cluster connection
     */
    RedisClocks(Supplier<RedisClusterAsyncCommands<String, String>> commands, boolean cluster) {
        this.commands = commands;
        this.single = cluster ? null : new RedisClockOffset();
    }

    /**
     * The estimate of the server that runs a call on {@code redisKey} now, or null when that is not known (a
     * cluster connection not open yet, a slot no master owns in Lettuce's view).
     */
    RedisClockOffset of(String redisKey) {
        if (single != null) {
            return single;
        }
        String nodeId = nodeOf(redisKey);
        if (nodeId == null) {
            return null;
        }
        RedisClockOffset clock = nodes.get(nodeId);
        return clock != null ? clock : newNode(nodeId);
    }

    /**
     * {@code clock} if the server that runs calls on {@code redisKey} is still the one it estimates (always so on a
     * standalone server), else null: the reply may come from another node.
     */
    RedisClockOffset still(RedisClockOffset clock, String redisKey) {
        return clock == null || clock == single || clock == of(redisKey) ? clock : null;
    }

    /** Forgets every estimate: the connection is down, and the servers may be others when it is back. */
    void resetAll() {
        if (single != null) {
            single.reset();
        }
        nodes.values().forEach(RedisClockOffset::reset);
    }

    /** How many nodes have an estimate (0 on a standalone server), for the tests. */
    int nodeCount() {
        return nodes.size();
    }

    private RedisClockOffset newNode(String nodeId) {
        // a new node: drop the estimates of nodes that left the cluster, so the map holds its current nodes only
        if (commands.get() instanceof RedisAdvancedClusterAsyncCommands<String, String> cluster) {
            Partitions partitions = cluster.getStatefulConnection().getPartitions();
            nodes.keySet().removeIf(id -> partitions.getPartitionByNodeId(id) == null);
        }
        return nodes.computeIfAbsent(nodeId, id -> new RedisClockOffset());
    }

    private String nodeOf(String redisKey) {
        if (!(commands.get() instanceof RedisAdvancedClusterAsyncCommands<String, String> cluster)) {
            return null;
        }
        RedisClusterNode node = cluster.getStatefulConnection().getPartitions()
                .getMasterBySlot(SlotHash.getSlot(redisKey));
        return node == null ? null : node.getNodeId();
    }
}
