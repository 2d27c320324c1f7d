package io.tokenbucket.store.redis;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.FallbackBucketStore;
import io.tokenbucket.store.StoreRefusedException;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

/**
 * What the store layer calls a refusal: an error reply waiting will not mend, from a real Redis whose ACL user lacks
 * a command, is a {@link StoreRefusedException} naming it, which {@link FallbackBucketStore} never answers with its
 * fallback nor follows with a bypass; the error replies of a failover or a busy server stay outages.
 */
class RedisRefusalsTest {

    private static final long MS = 1_000_000;
    private static final String ADMIN = "admin-Pa55word";
    private static RedisHandle redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.standalone("requirepass " + ADMIN);
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @ParameterizedTest
    @ValueSource(strings = {"BUSY Redis is busy running a script.", "LOADING Redis is loading the dataset in memory",
            "READONLY You can't write against a read only replica.", "MASTERDOWN Link with MASTER is down",
            "TRYAGAIN Multiple keys request during rehashing of slot", "CLUSTERDOWN The cluster is down",
            "ERR Error running script (call to f_1): @user_script:170: @user_script: 170: -READONLY You can't write"
                    + " against a read only replica.",
            "OOM command not allowed when used memory > 'maxmemory'.",
            "MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.",
            "ERR max number of clients reached",
            "ERR Error running script (call to f_1): @user_script:130: Script killed by user with SCRIPT KILL...",
            "ERR Script killed by user with SCRIPT KILL... script: 1, on @user_script:130."})
    void theRepliesOfAFailoverOrABusyServerAreOutages(String reply) {
        RedisCommandExecutionException e = new RedisCommandExecutionException(reply);
        assertThat(RedisRefusals.classify(e)).isSameAs(e);
    }

    @ParameterizedTest
    @ValueSource(strings = {"NOPERM this user has no permissions to run the 'evalsha' command or its subcommand",
            "ERR Error running script (call to f_1): @user_script:1: @user_script: 1: The user executing the script"
                    + " can't run this command or subcommand", "NOSCRIPT No matching script. Please use EVAL.",
            "ERR unknown command `EVALSHA`, with args beginning with: ", "WRONGTYPE Operation against a key holding"
                    + " the wrong kind of value"})
    void anErrorReplyThatWaitingWillNotMendIsARefusal(String reply) {
        RedisCommandExecutionException e = new RedisCommandExecutionException(reply);
        assertThat(RedisRefusals.classify(e)).isInstanceOf(StoreRefusedException.class).hasCause(e)
                .hasMessage("Redis refused: " + reply);
    }

    @Test
    void aRefusedCallFailsEveryTimeAndNeverReachesTheFallback() throws Exception {
        redis.command("ACL", "SETUSER", "nogo", "reset", "on", ">pw", "~*", "+hello", "+eval", "+time", "+get",
                "+set", "+del");
        RedisClient client = RedisClient.create(RedisURI.create("redis://nogo:pw@127.0.0.1:" + redis.port()));
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisBucketStore redisStore = new RedisBucketStore(connection::async, false, "refusals:",
                    Duration.ofSeconds(2), true, size -> { });
            List<Throwable> seen = new CopyOnWriteArrayList<>();
            FallbackBucketStore store = new FallbackBucketStore(redisStore, FallbackBucketStore.ALLOW_ALL,
                    System::nanoTime, new FallbackBucketStore.Watcher() {
                        @Override
                        public void failed(Throwable cause) {
                            seen.add(cause);
                        }

                        @Override
                        public void answered() {
                        }
                    });
            Limits limits = Limits.of(Limit.of(10, 10, 1000 * MS));
            for (int i = 0; i < 3; i++) {
                CompletableFuture<Outcome> answer = store.reserve("k", limits, 1, 0).toCompletableFuture();
                Throwable failure = catchThrowable(() -> answer.get(10, TimeUnit.SECONDS));
                assertThat(failure).isInstanceOf(ExecutionException.class).cause()
                        .isInstanceOf(StoreRefusedException.class).hasMessageContaining("'evalsha'");
                assertThat(store.isBypassing()).isFalse();
            }
            assertThat(store.fallbacks()).isZero();
            assertThat(store.failures()).isZero();
            assertThat(store.refusals()).isEqualTo(3);
            assertThat(seen).hasSize(3).allMatch(StoreRefusedException.class::isInstance);
            assertThat(redisStore.probeNow(Duration.ofSeconds(2), false)).isInstanceOf(StoreRefusedException.class)
                    .hasMessageContaining("'evalsha'");
        } finally {
            client.shutdown();
        }
    }

    /**
     * A Redis that cannot write its snapshot (a full or lost disk, with save points and the default
     * {@code stop-writes-on-bgsave-error yes}) answers every write {@code MISCONF} until a snapshot succeeds again:
     * an outage an operator mends, like {@code OOM}, which the policy answers.
     */
    @Test
    void aRedisThatCannotPersistIsAnOutage() throws Exception {
        Path dir = Files.createTempDirectory("tokenbucket-misconf");
        try (RedisHandle full = RedisServers.standalone("save 3600 1", "dir " + dir)) {
            Files.delete(dir); // the snapshot cannot be written: MISCONF
            full.command("BGSAVE");
            await().atMost(Duration.ofSeconds(10)).until(() -> ((String) full.command("INFO", "persistence"))
                    .contains("rdb_last_bgsave_status:err"));
            RedisClient client = RedisClient.create(RedisURI.create(full.uri()));
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                Throwable reply = catchThrowable(() -> connection.sync().set("x", "1"));
                assertThat(reply).isInstanceOf(RedisCommandExecutionException.class).hasMessageStartingWith("MISCONF");
                RedisBucketStore redisStore = new RedisBucketStore(connection::async, false, "misconf:",
                        Duration.ofSeconds(2), true, size -> { });
                FallbackBucketStore store = new FallbackBucketStore(redisStore, FallbackBucketStore.ALLOW_ALL,
                        System::nanoTime);
                Outcome outcome = store.reserve("k", Limits.of(Limit.of(10, 10, 1000 * MS)), 1, 0)
                        .toCompletableFuture().get(10, TimeUnit.SECONDS);
                assertThat(outcome.granted()).isTrue();
                assertThat(store.fallbacks()).isEqualTo(1);
                assertThat(store.refusals()).isZero();
                assertThat(redisStore.probeNow(Duration.ofSeconds(2), false))
                        .isNotInstanceOf(StoreRefusedException.class).hasMessageContaining("MISCONF");
            } finally {
                client.shutdown();
            }
        } finally {
            Files.deleteIfExists(dir);
        }
    }

    /**
     * An ACL that grants a limiter its own keys and channels ({@code ~<keyPrefix><name>:*}), not the whole prefix, lets
     * the probe run: it asks for nothing outside the namespace. A bucket whose key is the probe's own is left as it
     * was, value and TTL.
     */
    @Test
    void theProbeStaysInTheLimitersNamespaceAndLeavesABucketThereAsItWas() throws Exception {
        redis.command("ACL", "SETUSER", "own", "reset", "on", ">pw", "~own:*", "resetchannels", "&own:*", "+hello",
                "+evalsha", "+eval", "+time", "+get", "+set", "+del", "+publish");
        RedisClient client = RedisClient.create(RedisURI.create("redis://own:pw@127.0.0.1:" + redis.port()));
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            RedisBucketStore store = new RedisBucketStore(connection.async(), "own:", Duration.ofSeconds(2));
            assertThat(store.probeNow(Duration.ofSeconds(2), true)).isNull();
            assertThat(redis.command("KEYS", "own*")).isEqualTo(List.of());

            String key = store.probeKey().substring("own:".length()); // a bucket key that the probe's key is
            Limits limits = Limits.of(Limit.of(10, 10, 1000 * MS));
            assertThat(store.reserve(key, limits, 4, 0).toCompletableFuture().get(10, TimeUnit.SECONDS).granted())
                    .isTrue();
            Object state = redis.command("GET", store.probeKey());
            assertThat(state).isNotNull();
            assertThat(store.probeNow(Duration.ofSeconds(2), true)).isNull();
            assertThat(redis.command("GET", store.probeKey())).isEqualTo(state);
            assertThat((Long) redis.command("PTTL", store.probeKey())).isPositive();
        } finally {
            redis.command("DEL", "own:%probe"); // the bucket of this test, for the others on this server
            client.shutdown();
        }
    }

    @Test
    void theProbeNamesTheCommandRefusedInsideTheScriptAndLeavesNothingBehind() {
        redis.command("ACL", "SETUSER", "nodel", "reset", "on", ">pw", "~*", "&*", "+hello", "+evalsha", "+eval",
                "+time", "+get", "+set", "+publish");
        redis.command("ACL", "SETUSER", "all", "reset", "on", ">pw", "~*", "&*", "+@all");
        RedisClient nodel = RedisClient.create(RedisURI.create("redis://nodel:pw@127.0.0.1:" + redis.port()));
        RedisClient all = RedisClient.create(RedisURI.create("redis://all:pw@127.0.0.1:" + redis.port()));
        try (StatefulRedisConnection<String, String> refused = nodel.connect();
             StatefulRedisConnection<String, String> allowed = all.connect()) {
            RedisBucketStore store = new RedisBucketStore(refused.async(), "probed:", Duration.ofSeconds(2));
            assertThat(store.probeNow(Duration.ofSeconds(2), true)).isInstanceOf(StoreRefusedException.class)
                    .hasMessageContaining("(DEL in the probe of bucket.lua)");
            redis.command("DEL", store.probeKey()); // what the refused DEL left, expiring within a second
            RedisBucketStore full = new RedisBucketStore(allowed.async(), "probed:", Duration.ofSeconds(2));
            assertThat(full.probeNow(Duration.ofSeconds(2), true)).isNull();
            assertThat(full.probeKey()).isEqualTo("probed:%probe");
            assertThat(redis.command("KEYS", "*")).isEqualTo(List.of());
        } finally {
            nodel.shutdown();
            all.shutdown();
        }
    }
}
