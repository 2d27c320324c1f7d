package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

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
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Failures that waiting mends are never taken for refusals, on a real redis-server under batched load: a
 * {@code SCRIPT FLUSH} between batches (NOSCRIPT, cured by one EVAL: not even an outage), and connections killed
 * with calls in flight (an outage the policy answers).
 */
class RedisTransientFailuresTest {

    private static final Limits LIMITS = Limits.of(Limit.of(1_000_000, 1_000_000, TimeUnit.SECONDS.toNanos(1)));
    private static RedisHandle redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.standalone();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    /** Sends {@code rounds} rounds of 200 batched reservations, running {@code between} after each round is sent. */
    private static List<CompletableFuture<Outcome>> load(FallbackBucketStore store, int rounds, Runnable between) {
        List<CompletableFuture<Outcome>> sent = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            for (int i = 0; i < 200; i++) {
                sent.add(store.reserve("k" + (i % 17), LIMITS, 1, 0).toCompletableFuture());
            }
            between.run();
        }
        return sent;
    }

    @Test
    void aScriptFlushBetweenBatchesIsNeitherARefusalNorAnOutage() throws Exception {
        RedisClient client = RedisClient.create(RedisURI.create(redis.uri()));
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            FallbackBucketStore store = new FallbackBucketStore(new RedisBucketStore(connection::async, false,
                    "flushed:", Duration.ofSeconds(5), true, size -> { }), FallbackBucketStore.ALLOW_ALL,
                    System::nanoTime);
            redis.command("CONFIG", "RESETSTAT");
            List<CompletableFuture<Outcome>> sent = load(store, 10, () -> redis.command("SCRIPT", "FLUSH"));
            CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
            assertThat(sent).allSatisfy(f -> assertThat(f.join().granted()).isTrue());
            assertThat(store.refusals()).isZero();
            assertThat(store.failures()).isZero();
            assertThat(store.fallbacks()).isZero();
            // calls did meet NOSCRIPT, and EVAL loaded the script again
            assertThat((String) redis.command("INFO", "commandstats")).contains("cmdstat_eval:");
        } finally {
            client.shutdown();
        }
    }

    @Test
    void aConnectionKilledWithCallsInFlightIsAnOutage() throws Exception {
        RedisClient client = RedisClient.create(RedisURI.create(redis.uri()));
        client.setOptions(ClientOptions.builder()
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS).build());
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
            FallbackBucketStore store = new FallbackBucketStore(new RedisBucketStore(connection::async, false,
                    "killed:", Duration.ofSeconds(5), true, size -> { }), FallbackBucketStore.ALLOW_ALL,
                    System::nanoTime);
            List<CompletableFuture<Outcome>> sent = load(store, 10,
                    () -> redis.command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"));
            CompletableFuture.allOf(sent.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
            assertThat(sent).allSatisfy(f -> assertThat(f.join().granted()).isTrue()); // by Redis or the policy
            assertThat(store.refusals()).isZero();
            System.out.printf("connections killed under load: %d calls failed, %d answered by the policy%n",
                    store.failures(), store.fallbacks());
        } finally {
            client.shutdown();
        }
    }
}
