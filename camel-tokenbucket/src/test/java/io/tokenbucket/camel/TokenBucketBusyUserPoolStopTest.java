package io.tokenbucket.camel;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.camel.AsyncProducer;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.support.DefaultExchange;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The application's worker pool, busy with its own work while the Camel context stops: an exchange that got its
 * in-flight slot just before, its tokens still to come, continues on that pool only after the component has stopped.
 * It must still complete (failed, its tokens refunded), not be lost.
 */
class TokenBucketBusyUserPoolStopTest extends TokenBucketTestSupport {

    /** One token every 10 s and one slot: the second exchange, once it has the slot, waits for its token. */
    private static final String URI = "tokenbucket:busy?capacity=1&refillPeriod=10s&maxInFlight=1&maxWait=60s";

    private final ExecutorService pool = Executors.newFixedThreadPool(1, r -> new Thread(r, "userWorker"));
    private final ExecutorService senders = Executors.newCachedThreadPool();
    private final CountDownLatch letGo = new CountDownLatch(1);
    private final CountDownLatch poolFree = new CountDownLatch(1);

    @Override
    protected RoutesBuilder createRouteBuilder() {
        component().setWorkerPool(pool);
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:in").to(URI).process(e -> {
                    if (e.getMessage().getHeader("hold") != null) {
                        letGo.await();
                    }
                });
            }
        };
    }

    @AfterEach
    void stopPools() {
        letGo.countDown();
        poolFree.countDown();
        pool.shutdownNow();
        senders.shutdownNow();
    }

    /** Sends one exchange on a thread of its own; completes with it when its callback is called. */
    private CompletableFuture<Exchange> send(AsyncProducer producer, boolean hold) {
        CompletableFuture<Exchange> done = new CompletableFuture<>();
        Exchange exchange = new DefaultExchange(context);
        if (hold) {
            exchange.getMessage().setHeader("hold", "yes");
        }
        senders.execute(() -> producer.process(exchange, doneSync -> {
            if (!done.complete(exchange)) {
                throw new AssertionError("a second callback");
            }
        }));
        return done;
    }

    @Test
    @Timeout(120)
    void anExchangeThatContinuesOnTheUsersPoolAfterTheComponentStoppedStillCompletes() throws Exception {
        TokenBucketEndpoint endpoint = context.getEndpoint(URI, TokenBucketEndpoint.class);
        AsyncProducer producer = context.getEndpoint("direct:in").createAsyncProducer();
        producer.start();
        CompletableFuture<Exchange> holder = send(producer, true);
        Awaitility.await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getInFlightCount() == 1);
        CompletableFuture<Exchange> waiter = send(producer, false); // waits for the slot
        Awaitility.await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getWaitingCount() == 1);
        pool.execute(() -> {
            try {
                poolFree.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });

        letGo.countDown(); // the holder ends: the waiter gets the slot, and its continuation queues on the busy pool
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
        context.getShutdownStrategy().setTimeout(1);
        context.stop(); // the waiter is in flight: the graceful stop gives up on it after 1 s
        poolFree.countDown();

        Exchange waited = waiter.get(10, TimeUnit.SECONDS);
        assertThat(waited.getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("tokens were refunded");
    }
}
