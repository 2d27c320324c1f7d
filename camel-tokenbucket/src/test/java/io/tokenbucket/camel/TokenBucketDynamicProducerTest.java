package io.tokenbucket.camel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.AsyncProducer;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * An endpoint reached through {@code toD}, its route running on: waiting exchanges are released, not abandoned, when
 * Camel stops their producer without stopping the route: one not cached ({@code cacheSize=-1}, stopped once its
 * exchange is done with it), or one the cache evicts for another endpoint's while its exchanges wait.
 */
class TokenBucketDynamicProducerTest extends TokenBucketTestSupport {

    private volatile CountDownLatch gate = new CountDownLatch(0);

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:dyn").toD("tokenbucket:${header.name}?capacity=1&refillPeriod=50ms&maxWait=10s", -1)
                        .to("mock:passed");
                from("direct:small").toD("tokenbucket:${header.name}?capacity=1&refillPeriod=50ms&maxWait=10s", 1)
                        .to("mock:passed");
                from("direct:slots").toD("tokenbucket:${header.name}?maxInFlight=1&maxWait=1h", 1)
                        .process(e -> gate.await());
                from("direct:evicted").routeId("evicted")
                        .toD("tokenbucket:${header.name}?capacity=1&refillPeriod=10m&maxWait=1h", 1).to("mock:passed");
            }
        };
    }

    @Test
    void waitersOfAnUncachedDynamicProducerAreReleased() throws Exception {
        Sent sent = sendAsync("direct:dyn", 10, Map.of("name", "dyn"));
        assertThat(sent.done().await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(sent.exchanges()).allSatisfy(e -> assertThat(e.getException()).isNull());
        assertThat(getMockEndpoint("mock:passed").getReceivedCounter()).isEqualTo(10);
    }

    @Test
    void waitersOfAProducerEvictedFromTheDynamicCacheAreReleased() throws Exception {
        Sent first = sendAsync("direct:small", 10, Map.of("name", "first"));
        Sent second = sendAsync("direct:small", 10, Map.of("name", "second")); // the cache holds one producer
        assertThat(first.done().await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(second.done().await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(first.exchanges()).allSatisfy(e -> assertThat(e.getException()).isNull());
        assertThat(second.exchanges()).allSatisfy(e -> assertThat(e.getException()).isNull());
    }

    /**
     * Waiters of a producer the cache evicted wait on with their route; when the route stops they are abandoned as
     * those of a producer stopping with it are: failed once each, their tokens refunded.
     */
    @Test
    void waitersOfAnEvictedProducerAreAbandonedWhenTheirRouteStops() throws Exception {
        context.getShutdownStrategy().setTimeout(1);
        List<Exchange> first = new ArrayList<>();
        Map<Exchange, AtomicInteger> calls = new ConcurrentHashMap<>();
        AsyncProducer producer = context.getEndpoint("direct:evicted").createAsyncProducer();
        producer.start();
        for (int i = 0; i < 3; i++) { // one passes, two wait 10 and 20 minutes
            Exchange e = new DefaultExchange(context);
            e.getMessage().setHeader("name", "first");
            first.add(e);
            calls.put(e, new AtomicInteger());
            producer.process(e, doneSync -> calls.get(e).incrementAndGet());
        }
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:first?capacity=1&refillPeriod=10m&maxWait=1h",
                TokenBucketEndpoint.class);
        await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getWaitingCount() == 2);
        // another endpoint's producer takes the cache's one place: the first one's is stopped, its route runs on
        assertThat(template.request("direct:evicted", e -> e.getMessage().setHeader("name", "second"))
                .getException()).isNull();
        assertThat(endpoint.getWaitingCount()).isEqualTo(2);

        context.getRouteController().stopRoute("evicted");
        await().atMost(Duration.ofSeconds(20)).until(() -> calls.values().stream().allMatch(c -> c.get() > 0));
        assertThat(first.get(0).getException()).isNull();
        assertThat(first.subList(1, 3)).allSatisfy(e -> assertThat(e.getException())
                .isInstanceOf(TokenBucketException.class).hasMessageContaining("refunded"));
        assertThat(calls.values()).allSatisfy(c -> assertThat(c).hasValue(1));
        assertThat(endpoint.getAbandonedCount()).isEqualTo(2);
        // refunded: the next exchange would wait one interval (10 min), not the three the waiters had booked
        Exchange peek = template.request("tokenbucket:first?capacity=1&refillPeriod=10m&maxWait=1h",
                e -> e.getMessage().setHeader(TokenBucketConstants.OPERATION, "peek"));
        assertThat(peek.getMessage().getHeader(TokenBucketConstants.WAIT_ESTIMATE, Long.class))
                .isLessThanOrEqualTo(TimeUnit.MINUTES.toMillis(10));
    }

    /**
     * Camel stops the endpoint of a producer its cache evicts: an exchange waiting there for a slot is still woken
     * when the slot's holder releases it, as its route runs on.
     */
    @Test
    void aSlotWaiterOfAnEvictedEndpointIsWokenByTheRelease() throws Exception {
        gate = new CountDownLatch(1);
        // made first: the toD then finds it, rather than making one of its own at the same time
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:first?maxInFlight=1&maxWait=1h",
                TokenBucketEndpoint.class);
        // the holder and the other endpoint's exchange go on at once, into the gate: not on this thread
        CompletableFuture<Exchange> holder = template.asyncSend("direct:slots", e -> e.getMessage().setHeader("name",
                "first"));
        await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getInFlightCount() == 1);
        Sent waiter = sendAsync("direct:slots", 1, Map.of("name", "first"));
        await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getSlotWaitingCount() == 1);
        CompletableFuture<Exchange> other = template.asyncSend("direct:slots", e -> e.getMessage().setHeader("name",
                "second")); // evicts the first endpoint's producer, and Camel stops that endpoint
        await().atMost(Duration.ofSeconds(10)).until(endpoint::isStopped);
        gate.countDown();
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(waiter.done().await(10, TimeUnit.SECONDS)).as("woken by the release, not by its maxWait of 1 h")
                .isTrue();
        assertThat(other.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(waiter.exchanges().get(0).getException()).isNull();
    }
}
