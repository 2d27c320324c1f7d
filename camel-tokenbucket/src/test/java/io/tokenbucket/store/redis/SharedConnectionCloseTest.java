package io.tokenbucket.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.resource.ClientResources;
import org.junit.jupiter.api.Test;

/**
 * Closing a shared connection whose client never finishes shutting down (as when its I/O thread died) returns after
 * the limit instead of hanging the stop of the Camel context: Lettuce's own {@code shutdown()} waits without one.
 */
class SharedConnectionCloseTest {

    @Test
    void aClientThatNeverShutsDownDoesNotHangTheClose() {
        ClientResources resources = ClientResources.create();
        AtomicBoolean asked = new AtomicBoolean();
        RedisClient stuck = new RedisClient(resources, RedisURI.create("redis://127.0.0.1:1")) {
            @Override
            public CompletableFuture<Void> shutdownAsync(long quietPeriod, long timeout, TimeUnit unit) {
                asked.set(true);
                return new CompletableFuture<>(); // never completes
            }
        };
        try {
            SharedConnection connection = new SharedConnection(stuck, true, RedisConnections.describe(
                    "redis://127.0.0.1:1"), new Object(), () -> null, null);
            assertTimeoutPreemptively(Duration.ofSeconds(10), () -> connection.close(200));
            assertThat(asked).as("the owned client was asked to shut down").isTrue();
        } finally {
            resources.shutdown(0, 1, TimeUnit.SECONDS);
        }
    }
}
