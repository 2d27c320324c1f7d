package io.tokenbucket.camel;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.tokenbucket.testsupport.random.TestSeed;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.seda.SedaEndpoint;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.CamelEvent;
import org.apache.camel.support.EventNotifierSupport;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * No slot leaks: many exchanges through an in-flight limit, with failures after the endpoint, waits that run out,
 * and the route stopped and started again while exchanges wait and run; afterwards nothing is held and nothing
 * waits, and every slot is free again. The count is checked on the store (a peek), not only by the endpoint's
 * counters; meanwhile the step after the endpoint never sees more exchanges than the limit. Which exchanges fail or
 * linger comes from a seed ({@link TestSeed}).
 */
class TokenBucketInFlightLeakTest {

    @ParameterizedTest(name = "{0}: {1} exchanges")
    @CsvSource({"local, 100000", "redis, 10000"})
    void everySlotComesBackWhateverBecomesOfTheExchanges(String store, int count) throws Exception {
        RedisHandle redis = store.equals("redis") ? RedisServers.shared() : null;
        if (redis != null) {
            redis.flushAll();
        }
        long seed = TestSeed.seed("TokenBucketInFlightLeakTest " + store, 20261204L);
        String uri = "tokenbucket:leak?maxInFlight=2&maxWait=5ms&store=" + store
                + (redis == null ? "" : "&redisUri=" + redis.uri() + "&inFlightLease=5s");
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger ended = new AtomicInteger();
        AtomicReference<TokenBucketEndpoint> endpoint = new AtomicReference<>();
        CamelContext camel = new DefaultCamelContext();
        try {
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    onException(Exception.class).handled(true);
                    from("seda:leak?concurrentConsumers=8&size=200000").routeId("leak").to(uri).process(e -> {
                        most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        try {
                            // each exchange's fate from the seed and its number: the same exchanges fail or
                            // linger in a rerun (the threads' interleaving is the machine's)
                            int body = e.getMessage().getBody(Integer.class);
                            SplittableRandom random = new SplittableRandom(seed + body);
                            int roll = random.nextInt(200);
                            if (body == count / 10 || body == count / 10 + 1) {
                                // both slots held at once until a waiter's maxWait ran out: whatever the random
                                // lingering below did, some waits run out (a wait that ran out here is one too)
                                await().atMost(30, TimeUnit.SECONDS).until(() -> endpoint.get().getRejectedCount() > 0);
                            } else if (roll == 0) {
                                Thread.sleep(1 + random.nextInt(10)); // long enough for waiters' maxWait to run out
                            } else if (roll < 30) {
                                throw new IllegalStateException("fails after the endpoint");
                            }
                        } finally {
                            inside.decrementAndGet();
                        }
                    });
                }
            });
            // every exchange of the route ends completed or failed, also one failed while the route is forced to stop
            camel.getManagementStrategy().addEventNotifier(new EventNotifierSupport() {
                @Override
                public void notify(CamelEvent event) {
                    Exchange exchange = ((CamelEvent.ExchangeEvent) event).getExchange();
                    if ("leak".equals(exchange.getFromRouteId())) {
                        ended.incrementAndGet();
                    }
                }

                @Override
                public boolean isEnabled(CamelEvent event) {
                    return event instanceof CamelEvent.ExchangeCompletedEvent
                            || event instanceof CamelEvent.ExchangeFailedEvent;
                }
            });
            camel.start();
            endpoint.set(camel.getEndpoint(uri, TokenBucketEndpoint.class));
            ProducerTemplate template = camel.createProducerTemplate();
            for (int i = 0; i < count; i++) {
                template.sendBody("seda:leak", i);
                if (i == count / 2) { // a stop while exchanges wait and run, then on again
                    camel.getRouteController().stopRoute("leak", 1, TimeUnit.SECONDS);
                    camel.getRouteController().startRoute("leak");
                }
            }
            SedaEndpoint seda = camel.getEndpoint("seda:leak", SedaEndpoint.class);
            await().atMost(120, TimeUnit.SECONDS).alias("all ended").conditionEvaluationListener(c -> {
                if (!c.isSatisfied() && c.getRemainingTimeInMS() < 1000) { // what is left, on a failure
                    System.out.printf("%s: queued %d, in flight %d (%s), ended %d of %d; endpoint: in flight %d,"
                            + " waiting for a slot %d, for tokens %d%n", store, seda.getCurrentQueueSize(),
                            camel.getInflightRepository().size(), camel.getInflightRepository().browse("leak", 5, true)
                                    .stream().map(i -> i.getExchange().getMessage().getBody() + " at "
                                            + i.getNodeId() + " for " + i.getElapsed() + " ms").toList(),
                            ended.get(), count, endpoint.get().getInFlightCount(), endpoint.get().getSlotWaitingCount(),
                            endpoint.get().getWaitingCount());
                }
            }).until(() -> seda.getCurrentQueueSize() == 0 && camel.getInflightRepository().size() == 0
                    && ended.get() == count);
            assertThat(most.get()).isLessThanOrEqualTo(2);
            assertThat(ended.get()).as("every exchange ended, admitted or refused").isEqualTo(count);
            assertThat(endpoint.get().getRejectedCount()).as("some waits ran out").isPositive();
            await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.get().getInFlightCount() == 0);
            assertThat(endpoint.get().getSlotWaitingCount()).isZero();
            assertThat(endpoint.get().getWaitingCount()).isZero();
            // every slot free on the store: asked until it says so (a peek may meet the store timeout on a loaded
            // machine; the releases of the last exchanges are asynchronous)
            await().atMost(30, TimeUnit.SECONDS).until(() -> {
                Exchange peek = template.request(uri, e -> e.getMessage().setHeader(TokenBucketConstants.OPERATION,
                        "peek"));
                return peek.getException() == null
                        && Long.valueOf(2).equals(peek.getMessage().getHeader(TokenBucketConstants.REMAINING));
            });
        } finally {
            camel.stop();
            if (redis != null) {
                redis.close();
            }
        }
    }
}
