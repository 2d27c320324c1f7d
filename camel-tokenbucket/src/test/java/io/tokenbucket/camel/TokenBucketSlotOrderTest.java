package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Arrival order of the exchanges waiting for an in-flight slot when two routes send to one endpoint (two producers,
 * so two queues of waiters): a later exchange of a key never takes a slot before an earlier one, whichever route it
 * came through, and a route that stops abandons its own waiters only; a waiter of a key and all-of keys holds its
 * keys' freed slots for itself, before later waiters of one of them. One slot; the step after the endpoint holds its slot until the test opens the gate named by the
 * exchange's body.
 */
class TokenBucketSlotOrderTest extends TokenBucketRedisTestSupport {

    private final TokenBucketGates gates = new TokenBucketGates();
    private final List<String> order = gates.order();

    private static String uri(String store) {
        return "tokenbucket:ordered" + store + "?keyHeader=k&limits=1 in flight&maxWait=30s&store=" + store
                + (store.equals("redis") ? "&redisUri=" + redis.uri() + "&inFlightLease=5s" : "");
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                for (String store : List.of("local", "redis")) {
                    for (String route : List.of("one", "two")) {
                        from("direct:" + route + store).routeId(route + store).to(uri(store)).process(gates);
                    }
                    from("direct:full" + store).to(uri(store) + "&maxWaiting=2").process(gates);
                }
            }
        };
    }

    private TokenBucketEndpoint endpoint(String store) {
        return context.getEndpoint(uri(store), TokenBucketEndpoint.class);
    }

    /** Sends {@code body} on key a through route {@code route}, held at its gate once it has its slot. */
    private Future<Exchange> send(String route, String store, String body) {
        gates.close(body);
        return template.asyncSend("direct:" + route + store, e -> {
            e.getMessage().setBody(body);
            e.getMessage().setHeader("k", "a");
        });
    }

    /** Waits until the {@code before + 1}th exchange has its slot, checks it is {@code body}, and lets it end. */
    private void next(int before, String body, Future<Exchange> f) throws Exception {
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.size() > before);
        assertThat(order.get(before)).as("the exchange admitted after " + order.subList(0, before)).isEqualTo(body);
        gates.open(body);
        assertThat(f.get(10, TimeUnit.SECONDS).getException()).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void waitersOfOneKeyComingThroughTwoRoutesAreAdmittedInArrivalOrder(String store) throws Exception {
        Future<Exchange> h = send("one", store, "h");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("h"));
        // w1 and w3 wait in route one's producer, w2 between them in route two's
        Future<Exchange> w1 = send("one", store, "w1");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 1);
        Future<Exchange> w2 = send("two", store, "w2");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 2);
        Future<Exchange> w3 = send("one", store, "w3");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 3);

        // whichever queue a release wakes first, each slot goes to the oldest waiter
        gates.open("h");
        assertThat(h.get(10, TimeUnit.SECONDS).getException()).isNull();
        next(1, "w1", w1);
        next(2, "w2", w2);
        next(3, "w3", w3);
        assertThat(order).containsExactly("h", "w1", "w2", "w3");
        assertThat(endpoint(store).getSlotWaitingCount()).isZero();
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getInFlightCount() == 0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void aRouteThatStopsAbandonsItsOwnWaitersNotThoseOfAnotherRouteToTheEndpoint(String store) throws Exception {
        Future<Exchange> h = send("two", store, "h");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("h"));
        Future<Exchange> w1 = send("one", store, "w1");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 1);
        Future<Exchange> w2 = send("two", store, "w2");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 2);

        context.getRouteController().stopRoute("one" + store, 1, TimeUnit.SECONDS);
        assertThat(w1.get(10, TimeUnit.SECONDS).getException()).isInstanceOf(TokenBucketException.class);
        assertThat(w2.isDone()).as("route two's waiter waits on").isFalse();
        assertThat(endpoint(store).getSlotWaitingCount()).isEqualTo(1);

        gates.open("h");
        assertThat(h.get(10, TimeUnit.SECONDS).getException()).isNull();
        next(1, "w2", w2);
        assertThat(endpoint(store).getSlotWaitingCount()).isZero();
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getInFlightCount() == 0);
    }

    /** Sends {@code body} on {@code key} with the all-of keys {@code allOf} (or none) through route one. */
    private Future<Exchange> sendAllOf(String store, String body, String key, String allOf) {
        return sendAllOf("one", store, body, key, allOf);
    }

    private Future<Exchange> sendAllOf(String route, String store, String body, String key, String allOf) {
        gates.close(body);
        return template.asyncSend("direct:" + route + store, e -> {
            e.getMessage().setBody(body);
            e.getMessage().setHeader("k", key);
            if (allOf != null) {
                e.getMessage().setHeader(TokenBucketConstants.ALL_OF, allOf);
            }
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void aWaiterOfAllOfKeysGetsThemBeforeLaterWaitersOfOneOfThem(String store) throws Exception {
        Future<Exchange> ha = sendAllOf(store, "ha", "a", null);
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("ha"));
        Future<Exchange> hb = sendAllOf(store, "hb", "b", null);
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("hb"));
        Future<Exchange> a1 = sendAllOf(store, "a1", "a", null);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 1);
        Future<Exchange> ba = sendAllOf(store, "ba", "b", "a"); // needs b and a
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 2);
        Future<Exchange> b1 = sendAllOf(store, "b1", "b", null);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 3);

        // b comes free: ba, before b1, wants it (with a, which a1 waits for first), so b1 does not take it
        gates.open("hb");
        assertThat(hb.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(endpoint(store).getSlotWaitingCount()).isEqualTo(3);
        gates.open("ha");
        assertThat(ha.get(10, TimeUnit.SECONDS).getException()).isNull();
        next(2, "a1", a1);
        next(3, "ba", ba);
        next(4, "b1", b1);
        assertThat(order).containsExactly("ha", "hb", "a1", "ba", "b1");
        assertThat(endpoint(store).getSlotWaitingCount()).isZero();
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getInFlightCount() == 0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void withEveryWaitingPlaceTakenANewExchangeDoesNotTakeASlotAnEarlierWaiterHoldsOutFor(String store)
            throws Exception {
        TokenBucketEndpoint full = context.getEndpoint(uri(store) + "&maxWaiting=2", TokenBucketEndpoint.class);
        Future<Exchange> ha = sendAllOf("full", store, "ha", "a", null);
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("ha"));
        Future<Exchange> hb = sendAllOf("full", store, "hb", "b", null);
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("hb"));
        Future<Exchange> a1 = sendAllOf("full", store, "a1", "a", null);
        await().atMost(10, TimeUnit.SECONDS).until(() -> full.getSlotWaitingCount() == 1);
        Future<Exchange> ba = sendAllOf("full", store, "ba", "b", "a"); // needs b and a: both places taken now
        await().atMost(10, TimeUnit.SECONDS).until(() -> full.getSlotWaitingCount() == 2);
        gates.open("hb"); // b comes free; ba holds out for it (a1 waits for a first)
        assertThat(hb.get(10, TimeUnit.SECONDS).getException()).isNull();

        // a new exchange of b finds no waiting place: it may not take the slot ba waits for, so it is refused
        Exchange b2 = template.send("direct:full" + store, e -> {
            e.getMessage().setBody("b2");
            e.getMessage().setHeader("k", "b");
        });
        assertThat(b2.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("maxWaiting 2");
        assertThat(order).containsExactly("ha", "hb");

        gates.open("ha");
        assertThat(ha.get(10, TimeUnit.SECONDS).getException()).isNull();
        next(2, "a1", a1);
        next(3, "ba", ba);
        assertThat(order).containsExactly("ha", "hb", "a1", "ba");
        assertThat(full.getSlotWaitingCount()).isZero();
        await().atMost(10, TimeUnit.SECONDS).until(() -> full.getInFlightCount() == 0);
    }
}
