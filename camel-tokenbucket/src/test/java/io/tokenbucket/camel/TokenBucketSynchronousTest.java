package io.tokenbucket.camel;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.camel.AsyncProducer;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * With {@code synchronous=true}, and for a transacted exchange whatever the option, the thread that sends an exchange
 * waits for it and continues the route itself: after a wait for tokens, after a Redis answer, after a wait for an
 * in-flight slot. maxWait and a stop still end the wait. The thread is what a JMS transaction is bound to
 * ({@link TokenBucketTransactedJmsTest} shows the duplicates otherwise).
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketSynchronousTest extends TokenBucketRedisTestSupport {

    private final CountDownLatch gate = new CountDownLatch(1);

    private static String store(String store) {
        return "redis".equals(store) ? "&store=redis&redisUri=" + redis.uri() : "";
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                for (String store : new String[] {"local", "redis"}) {
                    from("direct:sync-" + store)
                            .to("tokenbucket:sync-" + store + "?capacity=1&refillPeriod=300ms&synchronous=true"
                                    + store(store))
                            .process(e -> e.getMessage().setHeader("thread", Thread.currentThread().getName()))
                            .to("mock:sync-" + store);
                    from("direct:async-" + store)
                            .to("tokenbucket:async-" + store + "?capacity=1&refillPeriod=300ms" + store(store))
                            .process(e -> e.getMessage().setHeader("thread", Thread.currentThread().getName()))
                            .to("mock:async-" + store);
                }
                // the unit of work marked transacted, as Camel's transacted() policy does
                from("direct:transacted")
                        .process(e -> e.getUnitOfWork().beginTransactedBy("test"))
                        .to("tokenbucket:transacted?capacity=1&refillPeriod=300ms")
                        .process(e -> e.getMessage().setHeader("thread", Thread.currentThread().getName()))
                        .process(e -> e.getUnitOfWork().endTransactedBy("test"))
                        .to("mock:transacted");
                from("direct:slot")
                        .to("tokenbucket:slot?maxInFlight=1&maxWait=300ms&synchronous=true")
                        .process(e -> {
                            if (e.getMessage().getHeader("hold") != null) {
                                gate.await(30, TimeUnit.SECONDS);
                            }
                        });
                from("direct:hourly").routeId("hourly")
                        .to("tokenbucket:hourly?capacity=1&refillPeriod=1h&synchronous=true");
            }
        };
    }

    /**
     * Sends 3 exchanges from this thread, one after the other, and answers the threads that ran the step after those
     * that waited for their token: the second and third wait most of 300 ms each, unless this thread stalled as long
     * before sending one (a loaded machine); at least one must have waited.
     */
    private List<String> threadsAfterAWait(String route) throws InterruptedException {
        MockEndpoint mock = getMockEndpoint("mock:" + route);
        mock.expectedMessageCount(3);
        for (int i = 0; i < 3; i++) {
            template.sendBody("direct:" + route, i);
        }
        mock.assertIsSatisfied(10_000);
        List<Exchange> waited = mock.getReceivedExchanges().stream()
                .filter(e -> e.getMessage().getHeader(TokenBucketConstants.WAITED, Long.class) > 0).toList();
        assertThat(waited).as("exchanges that waited for their token").isNotEmpty();
        return waited.stream().map(e -> e.getMessage().getHeader("thread", String.class)).toList();
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void synchronousExchangesContinueOnTheirCaller(String store) throws Exception {
        String caller = Thread.currentThread().getName();
        assertThat(threadsAfterAWait("sync-" + store)).containsOnly(caller);
        // the control: without it, the route goes on on the worker pool after a wait (and after any Redis answer)
        assertThat(threadsAfterAWait("async-" + store)).allMatch(t -> t.contains("TokenBucketWorker"));
    }

    @Test
    void theCallbackIsCalledOnceOnTheCallingThreadAfterTheWait() throws Exception {
        AsyncProducer producer = context.getEndpoint("tokenbucket:once?capacity=1&refillPeriod=1s"
                + "&synchronous=true").createAsyncProducer();
        producer.start();
        for (int i = 0; i < 2; i++) { // the second waits for its token, unless this thread stalled a second
            Exchange exchange = new DefaultExchange(context);
            List<String> calls = new CopyOnWriteArrayList<>();
            boolean sync = producer.process(exchange, doneSync -> calls.add(doneSync + " on "
                    + Thread.currentThread().getName()));
            assertThat(sync).isTrue();
            assertThat(calls).containsExactly("true on " + Thread.currentThread().getName());
            assertThat(exchange.getException()).isNull();
            if (i == 1) {
                assertThat(exchange.getMessage().getHeader(TokenBucketConstants.WAITED, Long.class)).isPositive();
            }
        }
        producer.stop();
    }

    @Test
    void aTransactedExchangeContinuesOnItsCallerWithoutTheOption() throws Exception {
        assertThat(threadsAfterAWait("transacted")).containsOnly(Thread.currentThread().getName());
    }

    @Test
    void aCallerWaitingForASlotGivesUpAtMaxWait() throws Exception {
        CompletableFuture<Exchange> holder = template.asyncSend("direct:slot", e -> e.getMessage().setHeader("hold",
                true));
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:slot?maxInFlight=1&maxWait=300ms"
                + "&synchronous=true", TokenBucketEndpoint.class);
        await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getInFlightCount() == 1);
        long start = System.nanoTime();
        Exchange late = template.send("direct:slot", e -> { });
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(late.getException()).isInstanceOf(TokenBucketRejectedException.class);
        assertThat(waitedMillis).isBetween(250L, 10_000L);
        gate.countDown();
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(endpoint.getWaitingCount()).isZero();
    }

    @Test
    void aCallerWhoseRedisDoesNotAnswerGivesUpAtStoreTimeout() {
        String uri = "tokenbucket:paused?capacity=5&store=redis&storeTimeout=300ms&synchronous=true&redisUri="
                + redis.uri();
        assertThat(template.send(uri, e -> { }).getException()).isNull(); // connected, script loaded
        redis.command("CLIENT", "PAUSE", "5000", "WRITE");
        try {
            long start = System.nanoTime();
            Exchange unanswered = template.send(uri, e -> { });
            long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(unanswered.getException()).isInstanceOf(TokenBucketStoreException.class);
            assertThat(waitedMillis).as("the store timeout, not the pause").isBetween(250L, 4_000L);
        } finally {
            redis.command("CLIENT", "UNPAUSE"); // the next test's Redis answers
        }
    }

    @Test
    void aStopReleasesACallerWaitingForItsTokens() throws Exception {
        assertThat(template.send("direct:hourly", e -> { }).getException()).isNull();
        CompletableFuture<Exchange> waiting = CompletableFuture.supplyAsync(
                () -> template.send("direct:hourly", e -> { }));
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:hourly?capacity=1&refillPeriod=1h"
                + "&synchronous=true", TokenBucketEndpoint.class);
        await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getWaitingCount() == 1);
        context.getShutdownStrategy().setTimeout(1);
        context.getRouteController().stopRoute("hourly");
        assertThat(waiting.get(30, TimeUnit.SECONDS).getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("refunded");
        assertThat(endpoint.getWaitingCount()).isZero();
    }
}
