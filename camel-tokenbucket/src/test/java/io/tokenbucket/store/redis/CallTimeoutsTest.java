package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The store timeout on the Lettuce client's timer ({@link CallTimeouts}): a Redis that does not answer fails the call
 * with a {@link TimeoutException} naming the timeout, long before it answers again.
 */
class CallTimeoutsTest {

    private static final long MS = 1_000_000;
    private static final Limits ONE_A_MS = Limits.of(Limit.of(1_000, 1, MS));

    private RedisHandle redis;
    private RedisConnections connections;
    private RedisConnections.Lease lease;

    @BeforeEach
    void start() {
        redis = RedisServers.standalone();
        connections = new RedisConnections();
        lease = connections.acquire(redis.uri(), Duration.ofSeconds(5));
    }

    @AfterEach
    void stop() {
        connections.close();
        redis.close();
    }

    @Test
    void aRedisThatDoesNotAnswerFailsTheCallAfterTheTimeoutNotWhenItAnswersAgain() throws Exception {
        for (boolean batching : new boolean[] {false, true}) {
            RedisBucketStore store = new RedisBucketStore(lease::commands, false, "timeouts:", Duration.ofMillis(200),
                    batching, size -> { });
            store.reserve("warm", ONE_A_MS, 1, 0).toCompletableFuture().get(5, TimeUnit.SECONDS);
            redis.command("CLIENT", "PAUSE", "4000", "ALL"); // the server holds every client's commands 4 s
            long start = System.nanoTime();
            CompletableFuture<Outcome> call = store.reserve("k", ONE_A_MS, 1, 0).toCompletableFuture();
            assertThatThrownBy(() -> call.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(TimeoutException.class).hasMessageContaining("200 ms");
            long tookMillis = (System.nanoTime() - start) / MS;
            // at the timeout or a wheel tick (100 ms) after it; well before the pause ends (generous: a loaded machine)
            assertThat(tookMillis).as("ms until the call failed, batching " + batching).isBetween(200L, 3000L);
            redis.command("CLIENT", "UNPAUSE");
        }
    }
}
