package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.FallbackBucketStore;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Redis misbehaving the way production Redis does, from outside, against the store on a connection configured as
 * the component configures it ({@code REJECT_COMMANDS}): what Redis really did is read back from Redis itself
 * ({@code GET}, {@code INFO commandstats}).
 */
class RedisMisbehaviourTest {

    private static final long T_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** C = 2, one token back every 100 ms. */
    private static final Limits LIMITS = Limits.of(Limit.of(2, 1, T_NANOS));
    private static final long MAX_WAIT = TimeUnit.SECONDS.toNanos(5);

    private static RedisHandle redis;
    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.standalone();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @BeforeEach
    void connect() {
        redis.flushAll();
        client = RedisClient.create(RedisURI.create(redis.uri()));
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build());
        connection = client.connect();
    }

    @AfterEach
    void disconnect() {
        redis.command("CLIENT", "UNPAUSE");
        connection.close();
        client.shutdown();
    }

    private RedisBucketStore store(String namespace, Duration timeout, boolean batching) {
        return new RedisBucketStore(connection::async, false, namespace, timeout, batching, size -> { });
    }

    private static Outcome reserve(RedisBucketStore store, String key) throws Exception {
        return store.reserve(key, LIMITS, 1, MAX_WAIT).toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    /** How many times Redis ran {@code command} since the last {@code CONFIG RESETSTAT}. */
    private static long calls(String command) {
        String stats = (String) redis.command("INFO", "commandstats");
        for (String line : stats.split("\r?\n")) {
            if (line.startsWith("cmdstat_" + command + ":calls=")) {
                return Long.parseLong(line.substring(line.indexOf('=') + 1, line.indexOf(',')));
            }
        }
        return 0;
    }

    @Test
    void aScriptFlushBeforeEveryCallReloadsTheScriptAndChargesEachReservationOnce() throws Exception {
        for (boolean batching : new boolean[] {false, true}) {
            RedisBucketStore store = store("flush" + batching + ":", Duration.ofSeconds(5), batching);
            redis.command("CONFIG", "RESETSTAT");
            List<Outcome> outcomes = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                redis.command("SCRIPT", "FLUSH");
                outcomes.add(reserve(store, "k"));
            }
            // each call met NOSCRIPT once and ran its EVAL once: six reservations, six runs of the script
            assertThat(calls("evalsha")).isEqualTo(6);
            assertThat(calls("eval")).isEqualTo(6);
            // charged once each: 2 free, then one slot every T for the next four (the tat is 4 T ahead)
            assertThat(outcomes).allSatisfy(o -> assertThat(o.granted()).isTrue());
            assertThat(outcomes.get(5).waitTicks()).isBetween(3 * T_NANOS, 4 * T_NANOS);
        }
    }

    @Test
    void aFlushForgetsTheSlotsWaitersBookedSoTheBucketStartsFullBesideThem() throws Exception {
        RedisBucketStore store = store("booked:", Duration.ofSeconds(5), true);
        List<Outcome> before = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            before.add(reserve(store, "k"));
        }
        // C at once, then ten waiters booked one slot every T: the last one ~1 s ahead
        assertThat(before).allSatisfy(o -> assertThat(o.granted()).isTrue());
        assertThat(before.get(11).waitTicks()).isBetween(9 * T_NANOS, 10 * T_NANOS);

        redis.command("FLUSHALL");

        // the bucket starts full as documented; the ten booked slots still run as booked (each waiter was told its
        // slot and goes at it): within the second after the flush 10 + C + 10 are admitted, against C + r t = 12
        // when nothing is lost. The loss adds C plus what waiters had booked, at most r maxWait
        List<Outcome> after = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            after.add(reserve(store, "k"));
        }
        assertThat(after.get(0).waitTicks()).isZero();
        assertThat(after.get(1).waitTicks()).isZero();
        assertThat(after.get(2).waitTicks()).isBetween(1L, T_NANOS);
    }

    @Test
    void aCallPausedPastTheStoreTimeoutFailsHereAndStillSpendsItsTokensThere() throws Exception {
        RedisBucketStore store = store("paused:", Duration.ofMillis(300), true);
        redis.command("CONFIG", "RESETSTAT");
        // scripts wait while writes are paused; GET and INFO (reads) still answer
        redis.command("CLIENT", "PAUSE", "3000", "WRITE");
        Limits slow = Limits.of(Limit.of(2, 1, TimeUnit.SECONDS.toNanos(60)));
        CompletableFuture<Outcome> call = store.reserve("k", slow, 2, MAX_WAIT).toCompletableFuture();
        assertThatThrownBy(() -> call.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(TimeoutException.class);
        assertThat(redis.command("GET", "paused:k")).isNull();
        redis.command("CLIENT", "UNPAUSE");
        // Redis runs the call it already holds, after the caller gave up on it: its two tokens stay spent
        await().atMost(Duration.ofSeconds(10)).until(() -> redis.command("GET", "paused:k") != null);
        assertThat(calls("evalsha")).isEqualTo(1);
        assertThat(store.reserve("k", slow, 1, 0).toCompletableFuture().get(10, TimeUnit.SECONDS).granted())
                .isFalse();
    }

    @Test
    void aConnectionKilledWhileItsCallWaitsInRedisIsRefusedAndChargesNothing() throws Exception {
        RedisBucketStore store = store("killed:", Duration.ofSeconds(5), true);
        reserve(store, "warm"); // the script is loaded and the connection open
        redis.command("CONFIG", "RESETSTAT");
        redis.command("CLIENT", "PAUSE", "5000", "WRITE");
        CompletableFuture<Outcome> call = store.reserve("k", LIMITS, 1, MAX_WAIT).toCompletableFuture();
        // the call is in Redis, held by the pause, when its connection is killed: its answer can never come
        await().atMost(Duration.ofSeconds(5)).until(() -> ((String) redis.command("INFO", "clients"))
                .contains("blocked_clients:1"));
        redis.command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
        assertThatThrownBy(() -> call.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class);
        redis.command("CLIENT", "UNPAUSE");
        // after reconnecting, the next call is the only one Redis runs: the lost one was not sent again
        await().atMost(Duration.ofSeconds(10)).until(() -> connection.isOpen());
        Outcome next = reserve(store, "k");
        assertThat(next.granted()).isTrue();
        assertThat(next.waitTicks()).isZero();
        assertThat(calls("evalsha")).isEqualTo(1);
        assertThat(next.remaining()).isEqualTo(1);
    }

    @Test
    void aScriptKilledByAnOperatorIsAnOutageForThePolicyNotARefusal() throws Exception {
        // a state Redis takes long to read (someone wrote a huge value): the script outlasts lua-time-limit
        redis.command("EVAL", "local t = {} for i = 1, tonumber(ARGV[1]) do t[i] = 'x 1' end "
                + "redis.call('SET', KEYS[1], '0 s ' .. table.concat(t, ' ')) return 1", "1", "slow:k", "1500000");
        String limit = (String) ((List<?>) redis.command("CONFIG", "GET", "lua-time-limit")).get(1);
        redis.command("CONFIG", "SET", "lua-time-limit", "10");
        try {
            FallbackBucketStore store = new FallbackBucketStore(store("slow:", Duration.ofSeconds(30), true),
                    FallbackBucketStore.ALLOW_ALL, System::nanoTime);
            reserve(store("warm:", Duration.ofSeconds(5), false), "k"); // the script is loaded: no EVAL below
            CompletableFuture<Outcome> call = store.reserve("k", LIMITS, 1, 0).toCompletableFuture();
            // SCRIPT KILL answers NOTBUSY until the script runs; once it has run past the limit, OK
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(5)).ignoreExceptions()
                    .until(() -> "OK".equals(redis.command("SCRIPT", "KILL")));
            Outcome outcome = call.get(20, TimeUnit.SECONDS);
            // an operator's SCRIPT KILL ends one slow call, as BUSY does the calls behind it: the next call may run,
            // so the policy answers (here allow) instead of failing the exchange as for an ACL that refuses
            assertThat(store.refusals()).isZero();
            assertThat(store.failures()).isEqualTo(1);
            assertThat(store.fallbacks()).isEqualTo(1);
            assertThat(outcome.granted()).isTrue();
        } finally {
            redis.command("CONFIG", "SET", "lua-time-limit", limit);
        }
    }

    @Test
    void aBucketEvictedByVolatileTtlComesBackFull() throws Exception {
        RedisBucketStore store = store("evicted:", Duration.ofSeconds(5), true);
        Limits slow = Limits.of(Limit.of(2, 1, TimeUnit.SECONDS.toNanos(60))); // its key lives two minutes
        store.reserve("k", slow, 2, 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertThat((Long) redis.command("PTTL", "evicted:k")).as("the bucket has a TTL, so volatile-ttl may evict it").isPositive();
        long used = Long.parseLong(((String) redis.command("INFO", "memory")).lines()
                .filter(l -> l.startsWith("used_memory:")).findFirst().orElseThrow().substring(12).trim());
        // volatile-ttl evicts only keys with a TTL: the bucket (it has one), not the keys written to fill memory
        redis.command("CONFIG", "SET", "maxmemory-policy", "volatile-ttl");
        redis.command("CONFIG", "SET", "maxmemory", Long.toString(used + 512 * 1024));
        try {
            String filler = "x".repeat(1024);
            // until Redis is full: evicting the bucket frees too little, and the write that needed it is refused
            for (int i = 0; ; i++) {
                assertThat(i).as("Redis fills up").isLessThan(10_000);
                try {
                    redis.command("SET", "filler:" + i, filler);
                } catch (RedisServers.RedisErrorReply full) {
                    break;
                }
            }
            assertThat(redis.command("EXISTS", "evicted:k")).isEqualTo(0L);
            assertThat((String) redis.command("INFO", "stats")).doesNotContain("evicted_keys:0\r");
            redis.command("EVAL", "for _, k in ipairs(redis.call('KEYS', 'filler:*')) do redis.call('DEL', k) end",
                    "0");
            // the bucket comes back full: the documented C more
            Outcome after = store.reserve("k", slow, 2, 0).toCompletableFuture().get(10, TimeUnit.SECONDS);
            assertThat(after.granted()).isTrue();
            assertThat(after.waitTicks()).isZero();
        } finally {
            redis.command("CONFIG", "SET", "maxmemory", "0");
            redis.command("CONFIG", "SET", "maxmemory-policy", "noeviction");
        }
    }

    @Test
    void keysAndNamesWithHashTagsColonsAndPercentsNeverShareABucket() throws Exception {
        String[][] pairs = {
                {"a", "b:c"}, {"a:b", "c"}, {"a%3Ab", "c"}, {"{a}", "b"}, {"{a", "}b"}, {"a", "%probe"},
                {"a", "{x}:y"}, {"a%", "25:c"}, {"a", "%25:c"},
        };
        List<String> redisKeys = new ArrayList<>();
        for (String[] pair : pairs) {
            RedisBucketStore store = store(RedisBucketStore.namespace("tb:", pair[0]), Duration.ofSeconds(5), true);
            Outcome first = reserve(store, pair[1]);
            // every pair finds its own full bucket: none was charged by another pair
            assertThat(first.waitTicks()).as("limiter %s key %s", pair[0], pair[1]).isZero();
            assertThat(first.remaining()).as("limiter %s key %s", pair[0], pair[1]).isEqualTo(1);
            redisKeys.add(store.redisKey(pair[1]));
        }
        assertThat(redisKeys).doesNotHaveDuplicates();
        for (String key : redisKeys) {
            assertThat(redis.command("GET", key)).as(key).isNotNull();
        }
    }
}
