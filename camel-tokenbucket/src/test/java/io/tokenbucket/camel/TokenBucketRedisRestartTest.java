package io.tokenbucket.camel;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import io.tokenbucket.camel.producer.TokenBucketTimer;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.StoreCommand;
import io.tokenbucket.store.redis.RedisBucketStore;
import io.tokenbucket.store.redis.RedisConnections;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The same Camel context stopped and started again, with a Redis in-flight limit: a lease held after the restart is
 * still renewed, and a slot waiter still polled, although the timer that had their tasks pending stopped with them
 * (the restarted routes make their endpoints and producers anew, with nothing pending). The timer's clock is held
 * still around the stop, so those tasks are pending when the timer stops, whatever the machine's speed.
 */
class TokenBucketRedisRestartTest {

    /** A lease of 3 s, renewed every second: a renewal would have to be 2 s late for a slot to come back early. */
    private static final String OPTIONS = "store=redis&maxInFlight=1&inFlightLease=3s";

    /** The system's clock, which the test can hold still: the timer then runs nothing until it lets go. */
    static final class HeldClock implements TokenBucketTimer.Clock {
        private volatile boolean held;
        private volatile long heldAt;

        void hold() {
            heldAt = System.nanoTime();
            held = true;
        }

        void release() {
            held = false;
        }

        @Override
        public long nanoTime() {
            return held ? heldAt : System.nanoTime();
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            LockSupport.parkNanos(blocker, Math.min(nanos, TimeUnit.MILLISECONDS.toNanos(2)));
        }
    }

    private final HeldClock clock = new HeldClock();
    private RedisHandle redis;
    private DefaultCamelContext camel;
    private volatile CountDownLatch gate = new CountDownLatch(0);

    @BeforeEach
    void start() throws Exception {
        redis = RedisServers.shared();
        redis.flushAll();
        camel = new DefaultCamelContext();
        TokenBucketComponent component = new TokenBucketComponent();
        component.shared().useClocks(clock, System::nanoTime);
        camel.addComponent("tokenbucket", component);
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:renewed").to(uri("renewed", "30s")).process(e -> gate.await());
                from("direct:polled").to(uri("polled", "10s")).process(e -> gate.await());
            }
        });
        camel.start();
    }

    @AfterEach
    void stop() {
        gate.countDown();
        clock.release();
        camel.stop();
        redis.close();
    }

    private String uri(String name, String maxWait) {
        return "tokenbucket:" + name + "?" + OPTIONS + "&maxWait=" + maxWait + "&redisUri=" + redis.uri();
    }

    private TokenBucketEndpoint endpoint(String name, String maxWait) {
        return camel.getEndpoint(uri(name, maxWait), TokenBucketEndpoint.class);
    }

    private long freeSlots(String name, String maxWait) {
        return camel.createProducerTemplate().request(uri(name, maxWait),
                e -> e.getMessage().setHeader(TokenBucketConstants.OPERATION, "peek"))
                .getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class);
    }

    /** Stops and starts the context with the timer's clock held still: its pending tasks die with the timer. */
    private void restartWithTasksPending() {
        camel.stop();
        clock.release();
        camel.start();
    }

    @Test
    void aLeaseHeldAfterTheRestartIsStillRenewed() throws Exception {
        TokenBucketEndpoint endpoint = endpoint("renewed", "30s");
        gate = new CountDownLatch(1);
        CompletableFuture<Exchange> before = camel.createProducerTemplate().asyncSend("direct:renewed", e -> { });
        await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getInFlightCount() == 1); // its renewal pending
        clock.hold();
        gate.countDown();
        assertThat(before.get(10, TimeUnit.SECONDS).getException()).isNull();
        restartWithTasksPending();

        gate = new CountDownLatch(1);
        CompletableFuture<Exchange> after = camel.createProducerTemplate().asyncSend("direct:renewed", e -> { });
        TokenBucketEndpoint started = endpoint("renewed", "30s");
        await().atMost(Duration.ofSeconds(10)).until(() -> started.getInFlightCount() == 1);
        // renewed every third of its lease, the slot stays taken past the lease time while its exchange runs
        await().during(Duration.ofMillis(4500)).atMost(Duration.ofSeconds(8))
                .until(() -> freeSlots("renewed", "30s") == 0);
        gate.countDown();
        assertThat(after.get(10, TimeUnit.SECONDS).getException()).isNull();
        await().atMost(Duration.ofSeconds(10)).until(() -> freeSlots("renewed", "30s") == 1);
    }

    @Test
    void aSlotWaiterAfterTheRestartIsStillPolled() throws Exception {
        TokenBucketEndpoint endpoint = endpoint("polled", "10s");
        gate = new CountDownLatch(1);
        CompletableFuture<Exchange> holder = camel.createProducerTemplate().asyncSend("direct:polled", e -> { });
        await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getInFlightCount() == 1);
        CompletableFuture<Exchange> waiter = camel.createProducerTemplate().asyncSend("direct:polled", e -> { });
        await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getSlotWaitingCount() == 1); // its poll pending
        clock.hold();
        gate.countDown(); // the release in this instance wakes the waiter, without the timer
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(waiter.get(10, TimeUnit.SECONDS).getException()).isNull();
        restartWithTasksPending();

        // a dead instance's slot, under a lease of 1 s that nobody renews nor releases: no release is published, so
        // only the waiters' poll finds the slot free once the lease has run out
        RedisConnections connections = new RedisConnections();
        try (RedisConnections.Lease connection = connections.acquire(redis.uri(), Duration.ofSeconds(5));
             RedisBucketStore dead = new RedisBucketStore(connection::commands, false,
                     RedisBucketStore.namespace("tokenbucket:", "polled"), Duration.ofSeconds(5), false, size -> { })) {
            Outcome taken = dead.execute(new StoreCommand(List.of(""), Step.reserve(Limits.inFlightOnly(1), 1, 0),
                    new StoreCommand.Lease("dead", TimeUnit.SECONDS.toNanos(1)))).toCompletableFuture()
                    .get(5, TimeUnit.SECONDS);
            assertThat(taken.granted()).isTrue();
            Exchange late = camel.createProducerTemplate().request("direct:polled", e -> { });
            assertThat(late.getException()).as("admitted once the dead lease ran out, within maxWait 10 s").isNull();
        } finally {
            connections.close();
        }
    }
}
