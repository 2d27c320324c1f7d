package io.tokenbucket.camel;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.store.FallbackBucketStore;
import org.apache.camel.AsyncProducer;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * In-flight slots across a Redis outage with {@code onStoreError=local}: a slot comes back to the store that gave it,
 * so a slot the local fallback gave is not kept there for ever when Redis is back before its exchange ends, and a
 * slot Redis gave is not taken off the fallback's count (another exchange's slot) when Redis is down at its end.
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketRedisInFlightOutageTest extends TokenBucketRedisTestSupport {

    private final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();

    private String uri() {
        return "tokenbucket:outage?store=redis&redisUri=" + redis.uri()
                + "&maxInFlight=1&mode=reject&onStoreError=local&storeTimeout=300ms";
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:gated").to(uri()).process(e -> {
                    CountDownLatch gate = gates.get(e.getMessage().getBody(String.class));
                    if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("gate never opened");
                    }
                });
            }
        };
    }

    private Exchange tryOne() {
        return template.request(uri(), e -> e.getMessage().setHeader(TokenBucketConstants.KEY, ""));
    }

    private void awaitRedisAnswers() {
        // the policy's bypass (1 s) and the reconnect: until a reservation is answered by Redis again
        await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(50)).until(() -> {
            template.request("tokenbucket:probe?store=redis&redisUri=" + redis.uri()
                    + "&capacity=1000&onStoreError=fail", e -> { });
            return Long.valueOf(1).equals(redis.command("EXISTS", "tokenbucket:probe:"));
        });
    }

    @Test
    void aSlotTheFallbackGaveComesBackToItWhenRedisReturnedMeanwhile() throws Exception {
        gates.put("a", new CountDownLatch(1));
        redis.stop();
        try {
            Future<Exchange> a = template.asyncSend("direct:gated", e -> e.getMessage().setBody("a"));
            TokenBucketEndpoint endpoint = context.getEndpoint(uri(), TokenBucketEndpoint.class);
            await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getInFlightCount() == 1);
            redis.start();
            redis.command("DEL", "tokenbucket:probe:");
            awaitRedisAnswers();
            FallbackBucketStore store = (FallbackBucketStore) endpoint.store();
            await().atMost(Duration.ofSeconds(10)).until(() -> !store.isBypassing());
            gates.get("a").countDown(); // a ends with Redis up: its local slot must still come back
            assertThat(a.get(10, TimeUnit.SECONDS).getException()).isNull();
            await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getInFlightCount() == 0);
            redis.stop();
            // the reservation goes to the local fallback again: its one slot is free
            assertThat(tryOne().getException()).as("the fallback's slot came back").isNull();
        } finally {
            redis.start();
        }
    }

    @Test
    void aSlotRedisGaveIsNotTakenOffTheFallbacksCountWhenRedisIsDownAtItsEnd() throws Exception {
        gates.put("a", new CountDownLatch(1));
        gates.put("b", new CountDownLatch(1));
        try {
            Future<Exchange> a = template.asyncSend("direct:gated", e -> e.getMessage().setBody("a"));
            TokenBucketEndpoint endpoint = context.getEndpoint(uri(), TokenBucketEndpoint.class);
            await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getInFlightCount() == 1);
            assertThat(redis.command("GET", "tokenbucket:outage:").toString()).contains(" ");
            redis.stop();
            // b takes the fallback's one slot while a holds Redis's
            Future<Exchange> b = null;
            for (int i = 0; i < 100 && endpoint.getInFlightCount() < 2; i++) {
                b = template.asyncSend("direct:gated", e -> e.getMessage().setBody("b"));
                Future<Exchange> tried = b;
                await().atMost(Duration.ofSeconds(10)).until(() -> tried.isDone() || endpoint.getInFlightCount() == 2);
            }
            assertThat(endpoint.getInFlightCount()).isEqualTo(2);
            gates.get("a").countDown(); // a ends with Redis down: its release must not free b's local slot
            assertThat(a.get(10, TimeUnit.SECONDS).getException()).isNull();
            await().atMost(Duration.ofSeconds(10)).until(() -> endpoint.getInFlightCount() == 1);
            assertThat(tryOne().getException()).as("b still holds the fallback's only slot")
                    .isInstanceOf(TokenBucketRejectedException.class);
            gates.get("b").countDown();
            assertThat(b.get(10, TimeUnit.SECONDS).getException()).isNull();
        } finally {
            redis.start();
        }
    }

    @Test
    void anExchangeRefusedASlotAfterItsProducerStoppedIsAbandonedNotLeftWaiting() throws Exception {
        // a store timeout far beyond the pause: a loaded machine must not turn the late answer into a timeout
        String waiting = "tokenbucket:stopping?store=redis&redisUri=" + redis.uri()
                + "&maxInFlight=1&maxWait=60s&storeTimeout=10s";
        AsyncProducer producer = context.getEndpoint(waiting).createAsyncProducer();
        producer.start();
        CountDownLatch first = new CountDownLatch(1);
        producer.process(new DefaultExchange(context), done -> first.countDown()); // takes the key's one slot
        assertThat(first.await(10, TimeUnit.SECONDS)).isTrue();
        // Redis answers the second reservation only after the producer has stopped: every slot is taken
        redis.command("CLIENT", "PAUSE", "150");
        Exchange second = new DefaultExchange(context);
        CountDownLatch answered = new CountDownLatch(1);
        assertThat(producer.process(second, done -> answered.countDown())).isFalse();
        producer.stop();
        assertThat(answered.await(10, TimeUnit.SECONDS)).as("called back well before its maxWait").isTrue();
        assertThat(second.getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("stopped");
        assertThat(context.getEndpoint(waiting, TokenBucketEndpoint.class).getSlotWaitingCount()).isZero();
    }

    @Test
    void aReservationThatTimedOutButRanLateGivesItsSlotBackAtOnce() throws Exception {
        String timed = "tokenbucket:late?store=redis&redisUri=" + redis.uri() + "&maxInFlight=1&mode=reject";
        // connected, and its script loaded: the reservation below is sent at once
        assertThat(template.request(timed, e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "warm"))
                .getException()).isNull();
        // Redis runs the reservation after the store timeout (300 ms): the exchange failed, yet its slot was taken
        redis.command("CLIENT", "PAUSE", "700");
        Exchange failed = template.request(timed, e -> { });
        assertThat(failed.getException()).isInstanceOf(TokenBucketStoreException.class);
        redis.command("PING"); // answered once the pause is over, after the late reservation
        FallbackBucketStore store = (FallbackBucketStore) context.getEndpoint(timed, TokenBucketEndpoint.class).store();
        await().atMost(Duration.ofSeconds(10)).until(() -> !store.isBypassing());
        // not held for the lease time (30 s) by an exchange that ended long ago
        assertThat(template.request(timed, e -> { }).getException()).isNull();
    }

    @Test
    void aWaiterRefusedForItsTokensWhenItsSlotCameLeavesNoTicketBehind() throws Exception {
        String uri = "tokenbucket:tickets?store=redis&redisUri=" + redis.uri()
                + "&keyHeader=k&maxInFlight=1&maxWait=5s&keyLimits=rate-*=1/1h";
        String slotKey = "tokenbucket:tickets:slot";
        gates.put("holder", new CountDownLatch(1));
        context.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:tickets").to(uri).process(e -> {
                    CountDownLatch gate = gates.get(e.getMessage().getBody(String.class));
                    if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("gate never opened");
                    }
                });
            }
        });
        // the all-of key's one token is gone for an hour; the slot key's one slot is held
        assertThat(template.request(uri, e -> e.getMessage().setHeader("k", "rate-1")).getException()).isNull();
        Future<Exchange> holder = template.asyncSend("direct:tickets", e -> {
            e.getMessage().setBody("holder");
            e.getMessage().setHeader("k", "slot");
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> redis.command("GET", slotKey) != null);
        // the waiter needs the slot and the all-of key's token: it waits for the slot, its ticket in the key
        Future<Exchange> waiter = template.asyncSend("direct:tickets", e -> {
            e.getMessage().setBody("waiter");
            e.getMessage().setHeader("k", "slot");
            e.getMessage().setHeader(TokenBucketConstants.ALL_OF, "rate-1");
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> String.valueOf(redis.command("GET", slotKey))
                .contains(" q "));
        gates.get("holder").countDown(); // the slot comes free; the token not for an hour: the waiter is refused
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(waiter.get(10, TimeUnit.SECONDS).getException()).isInstanceOf(TokenBucketRejectedException.class);
        // nobody waits for the slot any more: it is free for the next exchange, not kept for a ticket of nobody's
        Exchange next = template.request(uri + "&mode=reject", e -> e.getMessage().setHeader("k", "slot"));
        assertThat(next.getException()).isNull();
    }
}
