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
     * The hold works only when the first reply arrives after its callback is registered (the callback then runs on
     * the I/O thread), and the node's estimate must still hold its first sample when the late reply comes (two
     * 250 ms windows); a loaded machine may deschedule this thread for longer than either, so the scenario is tried
     * again on a fresh key until both hold.
     */
    @Test
    void aReplyHandledLateWaitsFromItsSlotOnItsNodesClock() throws Exception {
        Limit oneASecond = Limit.of(1, 1, TimeUnit.SECONDS.toNanos(1));
        long heldNanos = Duration.ofMillis(200).toNanos(); // within the estimate's two windows
        for (int attempt = 0; attempt < 10; attempt++) {
            String key = "late-" + attempt;
            assertThat(reserve(key, oneASecond, 1, 0).granted()).isTrue(); // the node's first sample
            long sampled = System.nanoTime();
            CompletableFuture<Outcome> first = store.reserve(key, Limits.of(oneASecond), 1, Long.MAX_VALUE)
                    .toCompletableFuture();
            CompletableFuture<Outcome> second = store.reserve(key, Limits.of(oneASecond), 1, Long.MAX_VALUE)
                    .toCompletableFuture();
            Thread test = Thread.currentThread();
            CompletableFuture<Boolean> held = first.thenApply(r -> {
                if (Thread.currentThread() == test) {
                    return false; // the reply came before the callback: nothing is held
                }
                LockSupport.parkNanos(heldNanos); // holds the thread that handles the second reply, a fault injected
                return true;
            });
            Outcome late = second.get(10, TimeUnit.SECONDS);
            boolean stale = System.nanoTime() - sampled > 2 * RedisClockOffset.WINDOW_NANOS - Duration.ofMillis(20)
                    .toNanos();
            if (!held.get(10, TimeUnit.SECONDS) || stale) {
                continue;
            }
            assertThat(first.get().waitTicks()).isBetween(Duration.ofMillis(700).toNanos(),
                    Duration.ofSeconds(1).toNanos());
            // Redis said about 2 s from its now; the reply was handled about 0.2 s after that now
            assertThat(late.waitTicks()).isBetween(Duration.ofMillis(1500).toNanos(),
                    Duration.ofMillis(1900).toNanos());
            return;
        }
        throw new AssertionError("in 10 tries the first reply never came after its callback was registered while"
                + " the node's estimate still held its first sample");
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
