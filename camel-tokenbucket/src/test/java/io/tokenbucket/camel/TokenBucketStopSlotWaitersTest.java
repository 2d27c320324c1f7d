package io.tokenbucket.camel;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Camel context stops while exchanges of an endpoint with an in-flight limit are still in flight: one that begins
 * to wait for a slot after {@code stopTimeout} has passed fails at once, as one already waiting did then, instead of
 * holding the stop up until its maxWait or the slot comes free.
 */
class TokenBucketStopSlotWaitersTest extends TokenBucketTestSupport {

    private static final String SLOTS = "tokenbucket:slots?maxInFlight=1&maxWait=60s&stopTimeout=0";

    private final CountDownLatch holding = new CountDownLatch(1);
    private final CountDownLatch letGo = new CountDownLatch(1);
    private final CountDownLatch lateArrived = new CountDownLatch(1);
    private final CountDownLatch lateGoOn = new CountDownLatch(1);
    private final ExecutorService senders = Executors.newCachedThreadPool();

    @AfterEach
    void stopSenders() {
        letGo.countDown();
        lateGoOn.countDown();
        senders.shutdownNow();
    }

    /** Sends one exchange to {@code uri} on a thread of its own (direct: runs the route on the sender). */
    private CompletableFuture<Exchange> send(String uri) {
        return CompletableFuture.supplyAsync(() -> template.send(uri, e -> { }), senders);
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:hold").routeId("hold").to(SLOTS).process(e -> {
                    holding.countDown();
                    letGo.await();
                });
                // an exchange still in flight when the stop begins, that reaches the endpoint only later
                from("direct:late").routeId("late").process(e -> {
                    lateArrived.countDown();
                    lateGoOn.await();
                }).to(SLOTS);
            }
        };
    }

    @Test
    @Timeout(120)
    void aSlotWaiterArrivingAfterStopTimeoutFailsAtOnce() throws Exception {
        CompletableFuture<Exchange> holder = send("direct:hold");
        assertThat(holding.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<Exchange> late = send("direct:late");
        assertThat(lateArrived.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<Exchange> early = send("direct:hold"); // waits for the slot the holder has
        TokenBucketEndpoint endpoint = context.getEndpoint(SLOTS, TokenBucketEndpoint.class);
        org.awaitility.Awaitility.await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getWaitingCount() == 1);

        context.getShutdownStrategy().setTimeout(60);
        Thread stopper = new Thread(context::stop, "test-stopper");
        stopper.start();
        try {
            // stopTimeout 0: the waiter there when the stop began is abandoned at once
            assertThat(early.get(10, TimeUnit.SECONDS).getException()).as("the earlier waiter abandoned")
                    .isInstanceOf(TokenBucketException.class);

            lateGoOn.countDown(); // reaches the endpoint now, the slot still held, stopTimeout long passed
            assertThat(late.get(10, TimeUnit.SECONDS).getException()).as("the late waiter failed at once")
                    .isInstanceOf(TokenBucketException.class).hasMessageContaining("stopTimeout");
            assertThat(holder).as("the holder still runs").isNotDone();
        } finally {
            letGo.countDown();
            stopper.join(30_000);
        }
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(endpoint.getWaitingCount()).isZero();
    }
}
