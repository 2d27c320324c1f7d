package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.AsyncProducer;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * redis-server killed while 20 exchanges wait for the in-flight slot one exchange holds, and 20 more for their
 * tokens, under each {@code onStoreError}; then started again. Every exchange completes exactly once (the slot
 * waiters as the policy says), nothing is left held or waiting, and a new exchange gets the slot.
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketRedisKillWhileWaitingTest extends TokenBucketRedisTestSupport {

    private static final int WAITERS = 20;
    private final CountDownLatch letGo = new CountDownLatch(1);
    private final ExecutorService senders = Executors.newCachedThreadPool();

    private static String slots(String policy) {
        return "tokenbucket:kill" + policy + "?store=redis&maxInFlight=1&maxWait=60s&storeTimeout=300ms&onStoreError="
                + policy + "&redisUri=" + redis.uri();
    }

    private static String tokens(String policy) {
        return "tokenbucket:killTokens" + policy + "?store=redis&capacity=1&refillPeriod=100ms&maxWait=60s"
                + "&maxWaiting=100&storeTimeout=300ms&onStoreError=" + policy + "&redisUri=" + redis.uri();
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                for (String p : List.of("fail", "allow", "local")) {
                    from("direct:hold-" + p).to(slots(p)).process(e -> letGo.await());
                    from("direct:wait-" + p).to(slots(p));
                    from("direct:tokens-" + p).to(tokens(p));
                }
            }
        };
    }

    @AfterEach
    void cleanUp() {
        letGo.countDown();
        senders.shutdownNow();
        if (!redis.isRunning()) {
            redis.start();
        }
    }

    private record One(Exchange exchange, AtomicInteger calls, CountDownLatch done) {
    }

    private List<One> send(String uri, int count) throws Exception {
        AsyncProducer producer = context.getEndpoint(uri).createAsyncProducer();
        producer.start();
        List<One> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            One one = new One(new DefaultExchange(context), new AtomicInteger(), new CountDownLatch(1));
            sent.add(one);
            producer.process(one.exchange(), doneSync -> {
                one.calls().incrementAndGet();
                one.done().countDown();
            });
        }
        return sent;
    }

    @ParameterizedTest
    @ValueSource(strings = {"fail", "allow", "local"})
    void everyWaiterCompletesOnceAcrossTheOutage(String policy) throws Exception {
        TokenBucketEndpoint endpoint = context.getEndpoint(slots(policy), TokenBucketEndpoint.class);
        TokenBucketEndpoint rate = context.getEndpoint(tokens(policy), TokenBucketEndpoint.class);
        CompletableFuture<Exchange> holder = CompletableFuture.supplyAsync(
                () -> template.send("direct:hold-" + policy, e -> { }), senders);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getInFlightCount() == 1);
        List<One> waiting = send("direct:wait-" + policy, WAITERS);
        List<One> timed = send("direct:tokens-" + policy, WAITERS + 1);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getSlotWaitingCount() == WAITERS);

        redis.stop();
        for (One one : waiting) {
            assertThat(one.done().await(30, TimeUnit.SECONDS)).as("a slot waiter completed").isTrue();
        }
        redis.start();
        letGo.countDown();
        assertThat(holder.get(30, TimeUnit.SECONDS).getException()).isNull();
        for (One one : timed) {
            assertThat(one.done().await(30, TimeUnit.SECONDS)).as("a token waiter completed").isTrue();
        }

        List<One> all = new ArrayList<>(waiting);
        all.addAll(timed);
        assertThat(all).allSatisfy(one -> assertThat(one.calls().get()).isEqualTo(1));
        assertThat(timed).allSatisfy(one -> assertThat(one.exchange().getException()).isNull());
        if (policy.equals("fail")) {
            assertThat(waiting).allSatisfy(one -> assertThat(one.exchange().getException())
                    .isInstanceOf(TokenBucketStoreException.class));
        } else {
            assertThat(waiting).allSatisfy(one -> assertThat(one.exchange().getException()).isNull());
        }
        await().atMost(20, TimeUnit.SECONDS).untilAsserted(() -> {
            assertThat(endpoint.getInFlightCount()).isZero();
            assertThat(endpoint.getWaitingCount()).isZero();
            assertThat(rate.getWaitingCount()).isZero();
        });
        // the slot is free again on Redis, for a new exchange, within the lease time of a dead holder at most
        Exchange next = template.request("direct:wait-" + policy, e -> { });
        assertThat(next.getException()).isNull();
    }
}
