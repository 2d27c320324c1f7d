package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import io.lettuce.core.cluster.SlotHash;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.BucketStoreContract;
import io.tokenbucket.store.Reservations;
import io.tokenbucket.testsupport.redis.RedisClusterHandle;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store contract against a real 3-master Redis Cluster, named by a {@code redis-cluster://} URI: each bucket
 * is one key, so buckets spread over the masters and every script call runs on the master of its key.
 */
class RedisClusterBucketStoreContractTest extends BucketStoreContract {

    private static RedisClusterHandle cluster;
    private static RedisConnections connections;
    private static RedisConnections.Lease lease;

    @BeforeAll
    static void startCluster() {
        cluster = RedisServers.sharedCluster();
        cluster.flushAll();
        connections = new RedisConnections();
        String seeds = String.join(",", cluster.uris()).replace("redis://", "");
        lease = connections.acquire("redis-cluster://" + seeds, Duration.ofSeconds(5));
    }

    @AfterAll
    static void stopCluster() {
        if (connections != null) {
            connections.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Override
    protected BucketStore newStore(String namespace) {
        RedisConnections.Lease current = lease;
        return new RedisBucketStore(current::commands, true, namespace, Duration.ofSeconds(5), batching(),
                size -> { });
    }

    /** Whether the store batches reservations queued behind a call in flight; the batched subclass says true. */
    boolean batching() {
        return false;
    }

    @Test
    void bucketsSpreadOverEveryMaster() {
        RedisBucketStore redisStore = (RedisBucketStore) store;
        Limit one = Limit.of(1, 1, HOUR);
        Set<Integer> masters = new HashSet<>();
        for (int k = 0; k < 30; k++) {
            assertThat(reserve("spread-" + k, one, 1, 0).granted()).isTrue();
            assertThat(reserve("spread-" + k, one, 1, 0).granted()).isFalse();
            masters.add(cluster.nodeForSlot(SlotHash.getSlot(redisStore.redisKey("spread-" + k))).port());
        }
        assertThat(masters).hasSize(3);
    }

    @Test
    void everyMasterGetsAClockEstimateOfItsOwn() {
        RedisBucketStore redisStore = (RedisBucketStore) store;
        Limit one = Limit.of(1, 1, HOUR);
        for (int k = 0; k < 30; k++) {
            assertThat(reserve("clocked-" + k, one, 1, 0).granted()).isTrue();
        }
        assertThat(redisStore.clockedNodes()).isEqualTo(3);
    }

    /**
     * A reply handled late (its I/O thread held up, here by the callback of the reply before it) waits from its
     * slot on its node's clock, not for Redis's whole wait from when it was handled: each node's clock is mapped.
     * The hold needs the first reply to arrive after its callback is registered (the callback then runs on the I/O
     * thread): the node that owns the key holds both calls ({@code CLIENT PAUSE}) until it is; the cluster is this
     * test's own, since the shared one refuses pauses. The node's estimate must still hold the sample taken just
     * before, which it keeps for at least one {@link RedisClockOffset#WINDOW_NANOS window}; a loaded machine may
     * deschedule this thread for longer, so the scenario is tried again on a fresh key until the late reply came
     * within that window.
     */
    @Test
    void aReplyHandledLateWaitsFromItsSlotOnItsNodesClock() throws Exception {
        Limit oneASecond = Limit.of(1, 1, TimeUnit.SECONDS.toNanos(1));
        long second = TimeUnit.SECONDS.toNanos(1);
        long heldNanos = Duration.ofMillis(120).toNanos();
        long withinNanos = RedisClockOffset.WINDOW_NANOS - Duration.ofMillis(10).toNanos();
        try (RedisClusterHandle own = RedisServers.cluster(); RedisConnections owned = new RedisConnections()) {
            String seeds = String.join(",", own.uris()).replace("redis://", "");
            RedisConnections.Lease ownLease = owned.acquire("redis-cluster://" + seeds, Duration.ofSeconds(5));
            RedisBucketStore late = new RedisBucketStore(ownLease::commands, true, "late:", Duration.ofSeconds(5),
                    batching(), size -> { });
            for (int attempt = 0; attempt < 10; attempt++) {
                String key = "late-" + attempt;
                RedisHandle node = own.nodeForSlot(SlotHash.getSlot(late.redisKey(key)));
                long sampled = System.nanoTime(); // before the sample: the estimate holds it until a window after
                assertThat(late.reserve(key, Limits.of(oneASecond), 1, 0).toCompletableFuture()
                        .get(10, TimeUnit.SECONDS).granted()).isTrue();
                node.command("CLIENT", "PAUSE", "10000", "WRITE"); // scripts wait: no reply before the UNPAUSE
                CompletableFuture<Outcome> first;
                CompletableFuture<Outcome> next;
                CompletableFuture<Long> handled;
                try {
                    first = late.reserve(key, Limits.of(oneASecond), 1, Long.MAX_VALUE).toCompletableFuture();
                    next = late.reserve(key, Limits.of(oneASecond), 1, Long.MAX_VALUE).toCompletableFuture();
                    // on the I/O thread, which then handles the next reply: holding it is the fault injected
                    first.thenRun(() -> LockSupport.parkNanos(heldNanos));
                    handled = next.thenApply(r -> System.nanoTime());
                    assertThat(first).isNotDone();
                } finally {
                    node.command("CLIENT", "UNPAUSE");
                }
                Outcome lateReply = next.get(10, TimeUnit.SECONDS);
                if (handled.get(10, TimeUnit.SECONDS) - sampled > withinNanos) {
                    continue; // the estimate may have moved past the sample: what it maps the late reply by is unknown
                }
                Outcome firstReply = first.get();
                assertThat(firstReply.waitTicks()).isBetween(second - withinNanos, second);
                // Redis put the next slot 1 s after the first; its reply was handled the hold or more later, so it
                // waits that much less than 1 s longer (Redis's wait from when it was handled: 1 s longer), give or
                // take the estimate's own error, a few ms on a loaded machine (seen: 7)
                assertThat(lateReply.waitTicks() - firstReply.waitTicks())
                        .isBetween(second - withinNanos - Duration.ofMillis(5).toNanos(),
                                second - heldNanos + Duration.ofMillis(30).toNanos());
                return;
            }
        }
        throw new AssertionError("in 10 tries the late reply never came within " + withinNanos / 1_000_000
                + " ms of the node's sample (this thread descheduled for longer each time)");
    }

    @Test
    void candidatesInDifferentSlotsFailClearly() {
        Limits one = Limits.of(Limit.of(1, 1, HOUR));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Reservations.reserveFreest(store,
                        java.util.List.of("a", "b", "c"),
                        java.util.List.of(one, one, one), 1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("different Redis Cluster hash slots").hasMessageContaining("keyPrefix={tb}:");
    }

    @Test
    void allOfKeysInDifferentSlotsFailClearlyNamingThem() {
        Limits one = Limits.of(Limit.of(1, 1, HOUR));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Reservations.reserveAll(store,
                        java.util.List.of("proxy-a"),
                        java.util.List.of(one), java.util.List.of("host-b"), java.util.List.of(one), 1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("different Redis Cluster hash slots").hasMessageContaining("proxy-a")
                .hasMessageContaining("host-b").hasMessageContaining("keyPrefix={tb}:");
    }

    @Test
    void aGroupKeyInAnotherSlotFailsClearlyNamingIt() {
        Limits one = Limits.of(Limit.of(1, 1, HOUR));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Reservations.reserveAll(store,
                        java.util.List.of("{tb}p1"),
                        java.util.List.of(one), java.util.List.of(java.util.List.of("pair-p1")),
                        java.util.List.of(java.util.List.of(one)), java.util.List.of("{tb}host"),
                        java.util.List.of(one), 1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("different Redis Cluster hash slots").hasMessageContaining("pair-p1");
    }
}
