package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;

import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** store=redis through Camel: waits continue on the worker pool, endpoints share a connection, keys stay apart. */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketRedisTest extends TokenBucketRedisTestSupport {

    private static String redisOptions() {
        return "store=redis&redisUri=" + redis.uri();
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler()); // the stopped route fails its waiters on purpose
                from("direct:delay")
                        .to("tokenbucket:delay?" + redisOptions() + "&capacity=2&refillPeriod=1s&keyHeader=proxyId")
                        .process(e -> e.getMessage().setHeader("thread", Thread.currentThread().getName()))
                        // read right after a token was taken: the bucket is not full, so its key must be in Redis
                        // (a full bucket's key expires, a second after the last exchange here)
                        .process(e -> e.getMessage().setHeader("keys", redis.command("EXISTS",
                                "tokenbucket:delay:p1")))
                        .to("mock:delay");
                from("direct:hourly").routeId("hourly")
                        .to("tokenbucket:hourly?" + redisOptions() + "&capacity=1&refillPeriod=1h");
                from("direct:reject").to("tokenbucket:reject?" + redisOptions() + "&capacity=1&refillPeriod=1h"
                        + "&mode=reject");
            }
        };
    }

    @Test
    void exchangesWaitForRedisTokensAndContinueOnTheWorkerPool() throws Exception {
        MockEndpoint mock = getMockEndpoint("mock:delay");
        mock.expectedMessageCount(3);
        sendAsync("direct:delay", 3, Map.of("proxyId", "p1"));
        mock.assertIsSatisfied(10_000);
        List<Exchange> got = mock.getReceivedExchanges();
        assertThat(got).extracting(e -> e.getMessage().getHeader(TokenBucketConstants.WAITED, Long.class))
                .satisfies(w -> {
                    assertThat(w.get(0)).isLessThan(400);
                    assertThat(w.get(2)).isBetween(300L, 5_000L);
                });
        // Lettuce answers on its Netty event loop: the route continues on the worker pool (or on the caller's
        // thread, when the answer was already there), never on Lettuce's threads nor on the timer
        assertThat(got).allSatisfy(e -> assertThat(e.getMessage().getHeader("thread", String.class))
                .doesNotContainIgnoringCase("lettuce").doesNotContain("TokenBucketTimer"));
        assertThat(got.get(2).getMessage().getHeader("thread", String.class)).contains("TokenBucketWorker");
        assertThat(got).allSatisfy(e -> assertThat(e.getMessage().getHeader("keys", Long.class)).isEqualTo(1L));
    }

    @Test
    void aRefusalFromRedisFailsTheExchange() {
        assertThat(template.request("direct:reject", e -> { }).getException()).isNull();
        assertThat(template.request("direct:reject", e -> { }).getException())
                .isInstanceOf(TokenBucketRejectedException.class).hasMessageContaining("tokenbucket:reject");
    }

    @Test
    void endpointsWithTheSameUriShareOneConnectionClosedWithTheLast() throws Exception {
        Endpoint a = context.getEndpoint("tokenbucket:shareA?" + redisOptions());
        Endpoint b = context.getEndpoint("tokenbucket:shareB?" + redisOptions() + "&capacity=5");
        a.start();
        b.start();
        // this test's routes and the two endpoints above: one connection, plus the one asking
        assertThat(clients()).isEqualTo(2);
        context.removeEndpoint(a);
        assertThat(clients()).isEqualTo(2);
        context.removeEndpoint(b);
        context.getRouteController().stopAllRoutes();
        context.removeEndpoints("tokenbucket:*");
        await().atMost(java.time.Duration.ofSeconds(10)).until(() -> clients() == 1);
    }

    @Test
    void limiterNamesAndKeysCannotCollide() throws Exception {
        Endpoint ab = context.getEndpoint("tokenbucket:a:b?" + redisOptions() + "&capacity=1&refillPeriod=1h&mode=reject");
        Endpoint a = context.getEndpoint("tokenbucket:a?" + redisOptions() + "&capacity=1&refillPeriod=1h&mode=reject");
        assertThat(template.request(ab, e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "c")).getException())
                .isNull();
        assertThat(template.request(a, e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "b:c"))
                .getException()).isNull();
        assertThat((Long) redis.command("EXISTS", "tokenbucket:a%3Ab:c", "tokenbucket:a:b:c")).isEqualTo(2L);
    }

    @Test
    void theOnlyApplicationClientInTheRegistryIsUsedAndNotShutDown() throws Exception {
        io.lettuce.core.RedisClient client = io.lettuce.core.RedisClient.create(redis.uri());
        try {
            context.getRegistry().bind("myRedis", client);
            Endpoint endpoint = context.getEndpoint("tokenbucket:autowired?store=redis&capacity=1&refillPeriod=1h"
                    + "&mode=reject");
            assertThat(((TokenBucketEndpoint) endpoint).getStoreDescription())
                    .isEqualTo("redis at the application's Redis client");
            assertThat(template.request(endpoint, e -> { }).getException()).isNull();
            assertThat((Long) redis.command("EXISTS", "tokenbucket:autowired:")).isEqualTo(1L);
            context.removeEndpoint(endpoint);
            // the application's client still works: the component closed only its own connection
            try (var connection = client.connect()) {
                assertThat(connection.sync().ping()).isEqualTo("PONG");
            }
        } finally {
            client.shutdown();
        }
    }

    @Test
    void aHugeKeyBecomesAShortRedisKey() {
        String huge = "k".repeat(1 << 20);
        assertThat(template.request("direct:reject", e -> e.getMessage().setHeader(TokenBucketConstants.KEY, huge))
                .getException()).isNull();
        String key = "tokenbucket:reject:" + io.tokenbucket.store.BucketKeys.bound(huge);
        assertThat(key).hasSizeLessThan(100);
        assertThat((Long) redis.command("EXISTS", key)).isEqualTo(1L);
    }

    @Test
    void thousandsWaitingOnRedisHoldNoThreadsAndFailCleanlyWhenTheRouteStops() throws Exception {
        int waiters = 2_000;
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        template.sendBody("direct:hourly", "takes the only token");
        int before = threads.getThreadCount();
        Sent sent = sendAsync("direct:hourly", waiters, Map.of());
        // every reservation is in Redis once the bucket owes an hour per waiter
        await().atMost(java.time.Duration.ofSeconds(20)).until(() -> {
            long now = RedisServers.micros((List<?>) redis.command("TIME"));
            String tat = (String) redis.command("GET", "tokenbucket:hourly:");
            return tat != null && Long.parseLong(tat) - now > (waiters - 1) * 3_600_000_000L;
        });
        int during = threads.getThreadCount();
        System.out.printf("redis store: %d threads before, %d with %d exchanges waiting%n", before, during, waiters);
        assertThat(sent.done().getCount()).isEqualTo(waiters);
        // at most the worker pool, which handed the answers from Lettuce to the timer, was started
        assertThat(during - before).isLessThanOrEqualTo(Math.max(10, Runtime.getRuntime().availableProcessors()) + 2);

        context.getShutdownStrategy().setTimeout(1);
        context.getRouteController().stopRoute("hourly");
        assertThat(sent.done().await(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        assertThat(sent.exchanges()).allSatisfy(e -> assertThat(e.getException())
                .isInstanceOf(TokenBucketException.class).hasMessageContaining("refunded"));
    }

    @Test
    void operationsThroughRedisSetTheirHeaders() {
        Endpoint fleet = context.getEndpoint("tokenbucket:fleet?" + redisOptions() + "&capacity=1&refillPeriod=1h"
                + "&keyHeader=proxyId&mode=reject");
        template.request(fleet, e -> e.getMessage().setHeader("proxyId", "p1"));
        Exchange chosen = template.request(fleet, e -> e.getMessage().setHeader(TokenBucketConstants.CANDIDATES,
                "p1,p2"));
        assertThat(chosen.getException()).isNull();
        assertThat(chosen.getMessage().getHeader("proxyId")).isEqualTo("p2");
        Exchange penalized = template.request(fleet, e -> {
            e.getMessage().setHeader("proxyId", "p3");
            e.getMessage().setHeader(TokenBucketConstants.OPERATION, "penalize");
            e.getMessage().setHeader(TokenBucketConstants.PENALTY, "90s");
        });
        assertThat(penalized.getMessage().getHeader(TokenBucketConstants.WAIT_ESTIMATE, Long.class))
                .isBetween(89_000L, 90_000L);
        long pttl = (Long) redis.command("PTTL", "tokenbucket:fleet:p3");
        // with capacity 1 the bucket is full again (one token) as the penalty ends: the key expires then
        assertThat(pttl).isBetween(89_000L, 90_000L);
    }

    /** Connections Redis sees now, the one this call opens included. */
    private static long clients() {
        String list = (String) redis.command("CLIENT", "LIST");
        return list.lines().filter(l -> !l.isBlank()).count();
    }
}
