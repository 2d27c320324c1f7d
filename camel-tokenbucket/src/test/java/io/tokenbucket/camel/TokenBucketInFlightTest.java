package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.seda.SedaEndpoint;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * In-flight limits through routes: never more exchanges of a key between the endpoint and the end of their exchange
 * than the limit, counted by the step after the endpoint (what the other side sees), every slot back when the
 * exchanges end however they end, waiters served in arrival order, and the refusals of each mode.
 */
class TokenBucketInFlightTest extends TokenBucketTestSupport {

    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger most = new AtomicInteger();
    private final List<String> order = new CopyOnWriteArrayList<>();
    private final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                // maxInFlight alone: no rate, at most 3 in flight per key; the work after the endpoint is counted
                from("seda:load?concurrentConsumers=20&size=100000")
                        .onException(IllegalStateException.class).handled(true).end()
                        .to("tokenbucket:alone?maxInFlight=3")
                        .process(e -> {
                            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            try {
                                Thread.sleep(ThreadLocalRandom.current().nextInt(3)); // the work, not a synchronisation
                                if (e.getMessage().getBody(Integer.class) % 7 == 0) {
                                    throw new IllegalStateException("the route fails after the endpoint");
                                }
                            } finally {
                                inside.decrementAndGet();
                            }
                        });
                from("direct:gated").to("tokenbucket:gated?limits=100/1s,1 in flight&maxWait=30s")
                        .process(e -> {
                            String body = e.getMessage().getBody(String.class);
                            order.add(body);
                            CountDownLatch gate = gates.get(body);
                            if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
                                throw new IllegalStateException("gate " + body + " never opened");
                            }
                        });
                from("direct:reject").to("tokenbucket:rejecting?maxInFlight=1&mode=reject").process(e -> {
                    CountDownLatch gate = gates.get(String.valueOf(e.getMessage().getBody()));
                    if (gate != null) {
                        gate.await(30, TimeUnit.SECONDS);
                    }
                });
                from("direct:bounded").to("tokenbucket:bounded?limits=1 in flight&maxWait=50ms").process(e -> {
                    CountDownLatch gate = gates.get(String.valueOf(e.getMessage().getBody()));
                    if (gate != null) {
                        gate.await(30, TimeUnit.SECONDS);
                    }
                });
                from("direct:start-looping").setHeader("turns", constant(0))
                        .loopDoWhile(simple("${header.turns} < 3"))
                            .removeHeader(TokenBucketConstants.OPERATION)
                            .to("tokenbucket:looping?maxInFlight=1&mode=reject")
                            .setHeader("turns", simple("${header.turns}++"))
                            .setHeader(TokenBucketConstants.OPERATION, constant("release"))
                            .to("tokenbucket:looping?maxInFlight=1&mode=reject")
                        .end();
                from("direct:keyLimits").to("tokenbucket:perKey?maxInFlight=5&keyLimits=slow=1 in flight&mode=check")
                        .process(e -> {
                            CountDownLatch gate = gates.get(String.valueOf(e.getMessage().getBody()));
                            if (gate != null) {
                                gate.await(30, TimeUnit.SECONDS);
                            }
                        });
            }
        };
    }

    /** A peek through the endpoint of {@code uri} (its limits): the tokens and slots free for {@code key}. */
    private long freeSlots(String uri, String key) {
        Exchange peek = template.request(uri, e -> {
            e.getMessage().setHeader(TokenBucketConstants.OPERATION, "peek");
            e.getMessage().setHeader(TokenBucketConstants.KEY, key);
        });
        return peek.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class);
    }

    @Test
    void neverMoreInFlightThanTheLimitAndEverySlotBackAfterFailures() throws Exception {
        int count = 3000;
        for (int i = 0; i < count; i++) {
            template.sendBody("seda:load", i);
        }
        // every exchange ends: the seda queue drains
        await().atMost(60, TimeUnit.SECONDS)
                .until(() -> context.getEndpoint("seda:load", SedaEndpoint.class)
                        .getCurrentQueueSize() == 0 && context.getInflightRepository().size() == 0);
        assertThat(most.get()).isEqualTo(3); // reached, never passed
        assertThat(freeSlots("tokenbucket:alone?maxInFlight=3", "")).isEqualTo(3);
    }

    @Test
    void waitersForASlotAreAdmittedInArrivalOrder() throws Exception {
        gates.put("a", new CountDownLatch(1));
        Future<Exchange> a = template.asyncSend("direct:gated", e -> e.getMessage().setBody("a"));
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("a"));
        List<Future<Exchange>> queued = new ArrayList<>();
        for (String body : List.of("b", "c", "d", "e")) {
            queued.add(template.asyncSend("direct:gated", e -> e.getMessage().setBody(body)));
            TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:gated?limits=100/1s,1 in flight&maxWait=30s",
                    TokenBucketEndpoint.class);
            await().atMost(10, TimeUnit.SECONDS)
                    .until(() -> endpoint.getWaitingCount() == queued.size());
        }
        assertThat(order).containsExactly("a");
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:gated?limits=100/1s,1 in flight&maxWait=30s",
                TokenBucketEndpoint.class);
        assertThat(endpoint.getInFlightCount()).isEqualTo(1);
        assertThat(endpoint.getSlotWaitingCount()).isEqualTo(4);
        gates.get("a").countDown();
        assertThat(a.get(10, TimeUnit.SECONDS).getException()).isNull();
        for (Future<Exchange> f : queued) {
            assertThat(f.get(10, TimeUnit.SECONDS).getException()).isNull();
        }
        assertThat(order).containsExactly("a", "b", "c", "d", "e");
        assertThat(endpoint.getSlotWaitingCount()).isZero();
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getInFlightCount() == 0);
    }

    @Test
    void rejectModeRefusesAtOnceNamingTheInFlightLimit() throws Exception {
        gates.put("holder", new CountDownLatch(1));
        Future<Exchange> holder = template.asyncSend("direct:reject", e -> e.getMessage().setBody("holder"));
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:rejecting?maxInFlight=1&mode=reject",
                TokenBucketEndpoint.class);
        await().atMost(10, TimeUnit.SECONDS).until(() -> freeSlots("tokenbucket:rejecting?maxInFlight=1&mode=reject", "") == 0);
        Exchange refused = template.request("direct:reject", e -> e.getMessage().setBody("other"));
        assertThat(refused.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("tokenbucket:rejecting").hasMessageContaining("no in-flight slot free")
                .hasMessageContaining("1 in flight");
        gates.get("holder").countDown();
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(freeSlots("tokenbucket:rejecting?maxInFlight=1&mode=reject", "")).isEqualTo(1);
        assertThat(endpoint.getWaitingCount()).isZero();
    }

    @Test
    void aWaiterWhoseMaxWaitPassesIsRejectedAndTakesNoSlot() throws Exception {
        gates.put("holder", new CountDownLatch(1));
        Future<Exchange> holder = template.asyncSend("direct:bounded", e -> e.getMessage().setBody("holder"));
        await().atMost(10, TimeUnit.SECONDS).until(() -> freeSlots("tokenbucket:bounded?limits=1 in flight&maxWait=50ms", "") == 0);
        Exchange late = template.request("direct:bounded", e -> e.getMessage().setBody("late"));
        assertThat(late.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("no in-flight slot came free within maxWait 50 ms");
        gates.get("holder").countDown();
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(freeSlots("tokenbucket:bounded?limits=1 in flight&maxWait=50ms", "")).isEqualTo(1);
        assertThat(template.request("direct:bounded", e -> e.getMessage().setBody("after")).getException()).isNull();
    }

    @Test
    void keyLimitsNameTheirOwnInFlightLimitAndCheckModeSaysWhenNoneIsFree() throws Exception {
        gates.put("hold", new CountDownLatch(1));
        Future<Exchange> holder = template.asyncSend("direct:keyLimits", e -> {
            e.getMessage().setBody("hold");
            e.getMessage().setHeader(TokenBucketConstants.KEY, "slow");
        });
        await().atMost(10, TimeUnit.SECONDS).until(() -> freeSlots("tokenbucket:perKey?maxInFlight=5&keyLimits=slow=1 in flight&mode=check", "slow") == 0);
        Exchange told = template.request("direct:keyLimits", e -> e.getMessage().setHeader(TokenBucketConstants.KEY,
                "slow"));
        assertThat(told.getMessage().getHeader(TokenBucketConstants.ALLOWED, Boolean.class)).isFalse();
        assertThat(freeSlots("tokenbucket:perKey?maxInFlight=5&keyLimits=slow=1 in flight&mode=check", "other")).isEqualTo(5); // maxInFlight for the keys keyLimits leave out
        gates.get("hold").countDown();
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(freeSlots("tokenbucket:perKey?maxInFlight=5&keyLimits=slow=1 in flight&mode=check", "slow")).isEqualTo(1);
    }

    @Test
    void anExchangeSentStraightToTheEndpointGivesItsSlotBackWhenItEnds() {
        String uri = "tokenbucket:straight?maxInFlight=1&mode=reject";
        for (int i = 0; i < 5; i++) { // no route around it: the producer template's unit of work ends it
            assertThat(template.request(uri, e -> e.getMessage().setBody(1)).getException()).isNull();
        }
        assertThat(freeSlots(uri, "")).isEqualTo(1);
    }

    @Test
    void stoppingTheRouteFailsTheExchangesWaitingForASlotAndGivesEverySlotBack() throws Exception {
        gates.put("a", new CountDownLatch(1));
        String uri = "tokenbucket:gated?limits=100/1s,1 in flight&maxWait=30s";
        Future<Exchange> a = template.asyncSend("direct:gated", e -> e.getMessage().setBody("a"));
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("a"));
        Future<Exchange> b = template.asyncSend("direct:gated", e -> e.getMessage().setBody("b"));
        TokenBucketEndpoint endpoint = context.getEndpoint(uri, TokenBucketEndpoint.class);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getWaitingCount() == 1);
        String route = context.getRoutes().stream()
                .filter(r -> r.getEndpoint().getEndpointUri().equals("direct://gated")).findFirst().orElseThrow()
                .getRouteId();
        Thread stop = new Thread(() -> {
            try {
                context.getRouteController().stopRoute(route, 5, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        stop.start();
        gates.get("a").countDown(); // the one in flight ends, so the graceful stop can go on
        stop.join(30_000);
        assertThat(a.get(10, TimeUnit.SECONDS).getException()).isNull();
        Exchange waited = b.get(10, TimeUnit.SECONDS);
        // b either got the slot a gave back before the producer stopped, or was abandoned: never lost
        assertThat(order.contains("b") || waited.getException() instanceof TokenBucketException).isTrue();
        assertThat(endpoint.getWaitingCount()).isZero();
        assertThat(freeSlots(uri, "")).isEqualTo(1);
    }

    @Test
    void releaseGivesTheSlotsBackBeforeTheExchangeEndsAndOnlyOnce() throws Exception {
        String uri = "tokenbucket:looping?maxInFlight=1&mode=reject";
        // one exchange that acquires in a loop, giving back after each turn: never refused by its own earlier slot
        Exchange looped = template.request("direct:start-looping", e -> { });
        assertThat(looped.getException()).isNull();
        assertThat(looped.getMessage().getHeader("turns", Integer.class)).isEqualTo(3);
        assertThat(freeSlots(uri, "")).isEqualTo(1);
        TokenBucketEndpoint endpoint = context.getEndpoint(uri, TokenBucketEndpoint.class);
        assertThat(endpoint.getInFlightCount()).isZero();
        // an exchange that holds none passes a release unchanged, without a key
        Exchange none = template.request(uri, e -> e.getMessage().setHeader(TokenBucketConstants.OPERATION,
                "release"));
        assertThat(none.getException()).isNull();
        assertThat(freeSlots(uri, "")).isEqualTo(1);
    }

    @Test
    void badInFlightLimitsFailTheStartNamingOptionAndValue() throws Exception {
        assertThat(messages(startFailure("tokenbucket:bad?maxInFlight=-1"))).contains("maxInFlight")
                .contains("was -1");
        assertThat(messages(startFailure("tokenbucket:bad?limits=0 in flight"))).contains("limits")
                .contains("was 0");
        assertThat(messages(startFailure("tokenbucket:bad?limits=10/1s,2 in flight,3 in flight")))
                .contains("in-flight limit twice");
        assertThat(messages(startFailure("tokenbucket:bad?limits=99999999999999999999 in flight")))
                .contains("was 99999999999999999999");
    }
}
