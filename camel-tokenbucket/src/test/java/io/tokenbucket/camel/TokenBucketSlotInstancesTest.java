package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Two Camel instances on one Redis, a waiter of candidates tried only on part of them: instance A's waiter of {a, b},
 * behind A's waiter of a, is tried on b alone, and those tries keep renewing its ticket on b (well past the ticket's
 * half-second life), so b's freed slot goes to it and not to a later waiter of b in instance B; a's freed slot goes
 * to A's waiter of a. One slot per key; the step after the endpoint holds its slot until the test opens the gate
 * named by the exchange's body.
 */
class TokenBucketSlotInstancesTest {

    private RedisHandle redis;
    private final List<CamelContext> instances = new ArrayList<>();
    private final TokenBucketGates gates = new TokenBucketGates();
    private final List<String> order = gates.order();

    private String uri() {
        return "tokenbucket:cross?store=redis&redisUri=" + redis.uri()
                + "&keyHeader=k&limits=1 in flight&maxWait=30s&inFlightLease=5s";
    }

    @BeforeEach
    void startInstances() throws Exception {
        redis = RedisServers.shared();
        redis.flushAll();
        for (int i = 0; i < 2; i++) {
            CamelContext camel = new DefaultCamelContext();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:gated").to(uri()).process(gates);
                }
            });
            camel.start();
            instances.add(camel);
        }
    }

    @AfterEach
    void stopInstances() {
        gates.openAll();
        instances.forEach(CamelContext::stop);
        redis.close();
    }

    private TokenBucketEndpoint endpoint(int instance) {
        return instances.get(instance).getEndpoint(uri(), TokenBucketEndpoint.class);
    }

    /** Sends {@code body} in {@code instance} on {@code key} (a list: candidates), held at its gate once admitted. */
    private Future<Exchange> send(int instance, String body, Object key) {
        gates.close(body);
        return instances.get(instance).createProducerTemplate().asyncSend("direct:gated", e -> {
            e.getMessage().setBody(body);
            e.getMessage().setHeader(key instanceof List ? TokenBucketConstants.CANDIDATES : "k", key);
        });
    }

    /** The tickets in b's queue in Redis: lease id, expiry (µs of the Redis clock), in turn. */
    private List<String> ticketsOfB() {
        Object value = redis.command("GET", "tokenbucket:cross:b");
        String state = value == null ? "" : value.toString();
        int q = (" " + state + " ").indexOf(" q ");
        return q < 0 ? List.of() : List.of(state.substring(q + 2).trim().split(" "));
    }

    private void admitted(int nth, String body, Future<Exchange> f) throws Exception {
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.size() > nth);
        assertThat(order.get(nth)).as("admitted after " + order.subList(0, nth)).isEqualTo(body);
        gates.open(body);
        assertThat(f.get(10, TimeUnit.SECONDS).getException()).isNull();
    }

    @Test
    void aWaiterTriedOnPartOfItsCandidatesKeepsItsTurnOnThemAgainstAnotherInstance() throws Exception {
        Future<Exchange> ha = send(0, "ha", "a");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("ha"));
        Future<Exchange> hb = send(0, "hb", "b");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("hb"));
        Future<Exchange> a1 = send(0, "a1", "a");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(0).getSlotWaitingCount() == 1);
        Future<Exchange> ab = send(0, "ab", List.of("a", "b"));
        // ab, held up on a by a1, is tried on b alone: its ticket there is the first
        await().atMost(10, TimeUnit.SECONDS).until(() -> ticketsOfB().size() == 2);
        String abTicket = ticketsOfB().get(0);
        long firstExpiry = Long.parseLong(ticketsOfB().get(1));
        Future<Exchange> b1 = send(1, "b1", "b");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(1).getSlotWaitingCount() == 1);
        // its tries renew it past the half second a ticket lives after its last try
        await().atMost(10, TimeUnit.SECONDS).until(() -> {
            List<String> t = ticketsOfB();
            return t.size() >= 2 && t.get(0).equals(abTicket) && Long.parseLong(t.get(1)) > firstExpiry + 600_000;
        });
        assertThat(ticketsOfB()).hasSize(4); // ab's, then b1's

        gates.open("hb");
        assertThat(hb.get(10, TimeUnit.SECONDS).getException()).isNull();
        admitted(2, "ab", ab);
        assertThat(ab.get().getMessage().getHeader("k")).isEqualTo("b");
        admitted(3, "b1", b1);
        gates.open("ha");
        assertThat(ha.get(10, TimeUnit.SECONDS).getException()).isNull();
        admitted(4, "a1", a1);
        assertThat(endpoint(0).getSlotWaitingCount() + endpoint(1).getSlotWaitingCount()).isZero();
    }
}
