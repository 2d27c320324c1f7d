package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
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
 * The queue of exchanges waiting for an in-flight slot, with waiters of several keys mixed, on the local store and
 * on Redis: a slot freed on one key goes at once to that key's first waiter however many waiters of another key are
 * held up before it; a waiter of candidates between waiters of single keys takes a freed slot of a candidate nobody
 * before it waits for; arrival order is kept per key; and waiters abandoned when their route stops leave nothing that
 * makes later exchanges of their keys queue. One slot per key; the step after the endpoint holds its slot until the
 * test opens the gate named by the exchange's body.
 */
class TokenBucketSlotWaitersTest extends TokenBucketRedisTestSupport {

    private final TokenBucketGates gates = new TokenBucketGates();
    private final List<String> order = gates.order();

    private static String uri(String store) {
        return "tokenbucket:waiters" + store + "?keyHeader=k&limits=1 in flight&maxWait=30s&store=" + store
                + (store.equals("redis") ? "&redisUri=" + redis.uri() + "&inFlightLease=5s" : "");
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                for (String store : List.of("local", "redis")) {
                    from("direct:" + store).routeId(store).to(uri(store)).process(gates);
                }
            }
        };
    }

    private TokenBucketEndpoint endpoint(String store) {
        return context.getEndpoint(uri(store), TokenBucketEndpoint.class);
    }

    /** Sends {@code body} on key {@code key} (a list: candidates) without waiting for it. */
    private Future<Exchange> send(String store, String body, Object key) {
        return template.asyncSend("direct:" + store, e -> {
            e.getMessage().setBody(body);
            e.getMessage().setHeader(key instanceof List ? TokenBucketConstants.CANDIDATES : "k", key);
        });
    }

    /** Sends {@code body} on {@code key} held at its gate, and waits until it holds its slot. */
    private Future<Exchange> hold(String store, String body, String key) {
        gates.close(body);
        Future<Exchange> f = send(store, body, key);
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains(body));
        return f;
    }

    /** Sends {@code body} on {@code key} and waits until it waits for a slot, the {@code nth} waiter. */
    private Future<Exchange> queue(String store, String body, Object key, int nth) {
        Future<Exchange> f = send(store, body, key);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == nth);
        return f;
    }

    private static void assertOk(Future<Exchange> f) throws Exception {
        assertThat(f.get(10, TimeUnit.SECONDS).getException()).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void aSlotFreedOnOneKeyGoesAtOnceToItsWaiterBehindManyWaitersOfAnotherKey(String store) throws Exception {
        Future<Exchange> ha = hold(store, "ha", "a");
        Future<Exchange> hb = hold(store, "hb", "b");
        List<Future<Exchange>> waiters = new ArrayList<>();
        List<String> aOrder = new ArrayList<>();
        for (int i = 1; i <= 20; i++) {
            aOrder.add("a" + i);
            waiters.add(queue(store, "a" + i, "a", i));
        }
        gates.close("b1");
        Future<Exchange> b1 = queue(store, "b1", "b", 21);
        Future<Exchange> b2 = queue(store, "b2", "b", 22);
        aOrder.add("a21");
        waiters.add(queue(store, "a21", "a", 23));

        gates.open("hb");
        assertOk(hb);
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("b1"));
        assertThat(order).containsExactly("ha", "hb", "b1"); // b2 waits behind b1, every a behind ha
        assertThat(endpoint(store).getSlotWaitingCount()).isEqualTo(22);

        gates.open("b1");
        assertOk(b1);
        assertOk(b2);
        assertThat(order).containsExactly("ha", "hb", "b1", "b2");

        gates.open("ha");
        assertOk(ha);
        for (Future<Exchange> f : waiters) {
            assertOk(f);
        }
        assertThat(order.subList(4, order.size())).containsExactlyElementsOf(aOrder);
        assertThat(endpoint(store).getSlotWaitingCount()).isZero();
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getInFlightCount() == 0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void aWaiterOfCandidatesTakesAFreedSlotOfACandidateNoEarlierWaiterWaitsFor(String store) throws Exception {
        Future<Exchange> ha = hold(store, "ha", "a");
        Future<Exchange> hb = hold(store, "hb", "b");
        Future<Exchange> a1 = queue(store, "a1", "a", 1);
        gates.close("ab");
        Future<Exchange> ab = queue(store, "ab", List.of("a", "b"), 2);
        Future<Exchange> b1 = queue(store, "b1", "b", 3);

        // b's slot comes free: a1 cannot use it, so the candidates' waiter after it takes it, b1 stays behind it
        gates.open("hb");
        assertOk(hb);
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("ab"));
        assertThat(order).containsExactly("ha", "hb", "ab");
        Exchange chosen = ab.isDone() ? ab.get() : null;
        assertThat(chosen).as("ab holds its slot until its gate opens").isNull();
        assertThat(endpoint(store).getSlotWaitingCount()).isEqualTo(2);

        gates.open("ab");
        assertThat(ab.get(10, TimeUnit.SECONDS).getMessage().getHeader("k")).isEqualTo("b");
        assertOk(b1);
        assertThat(order).containsExactly("ha", "hb", "ab", "b1");

        gates.open("ha");
        assertOk(ha);
        assertOk(a1);
        assertThat(order).containsExactly("ha", "hb", "ab", "b1", "a1");
        assertThat(endpoint(store).getSlotWaitingCount()).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void waitersAbandonedWhenTheRouteStopsLeaveNothingThatQueuesLaterExchanges(String store) throws Exception {
        Future<Exchange> ha = hold(store, "ha", "a");
        Future<Exchange> hb = hold(store, "hb", "b");
        List<Future<Exchange>> waiters = new ArrayList<>();
        waiters.add(queue(store, "a1", "a", 1));
        waiters.add(queue(store, "ab", List.of("a", "b"), 2));
        waiters.add(queue(store, "a2", "a", 3));
        Thread stop = new Thread(() -> {
            try {
                context.getRouteController().stopRoute(store, 1, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        stop.start();
        // the graceful stop waits for the exchanges in flight, waiters included, 1 s, then the producer stops
        await().atMost(10, TimeUnit.SECONDS).until(() -> waiters.stream().allMatch(Future::isDone));
        for (Future<Exchange> f : waiters) {
            assertThat(f.get().getException()).isInstanceOf(TokenBucketException.class);
        }
        gates.open("ha");
        gates.open("hb");
        stop.join(30_000);
        ha.get(10, TimeUnit.SECONDS); // ended by the forced stop: what becomes of them is not this test's
        hb.get(10, TimeUnit.SECONDS);

        assertThat(endpoint(store).getSlotWaitingCount()).isZero();

        // started again, an exchange of each key passes at once: no waiter counted for a or b is left to queue behind
        context.getRouteController().startRoute(store);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getInFlightCount() == 0);
        for (String key : List.of("a", "b")) {
            gates.close("again-" + key);
            Future<Exchange> again = send(store, "again-" + key, key);
            await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("again-" + key));
            assertThat(endpoint(store).getSlotWaitingCount()).isZero();
            // and a second one of the key waits for the first, then passes: the queue still works
            Future<Exchange> next = queue(store, "next-" + key, key, 1);
            gates.open("again-" + key);
            assertOk(again);
            assertOk(next);
        }
        assertThat(endpoint(store).getSlotWaitingCount()).isZero();
        assertThat(order).endsWith("again-b", "next-b");
    }
}
