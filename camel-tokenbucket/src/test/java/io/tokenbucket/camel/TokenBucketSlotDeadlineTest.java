package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A waiter for an in-flight slot whose maxWait passes while a try of it is in Redis (Redis paused, so the try is
 * still out when its maxWait's timer fires): it leaves once, when the try answers no slot, rejected for its maxWait,
 * holding no slot, no waiting place and no ticket, and the next exchange of its key passes as soon as the slot is free.
 * One slot; the step after the endpoint holds its slot until the test opens the gate named by the exchange's body.
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketSlotDeadlineTest extends TokenBucketRedisTestSupport {

    private final TokenBucketGates gates = new TokenBucketGates();
    private final List<String> order = gates.order();

    private static String uri() {
        return "tokenbucket:deadline?keyHeader=k&limits=1 in flight&maxWait=300ms&store=redis&redisUri=" + redis.uri()
                + "&inFlightLease=5s&storeTimeout=10s";
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:deadline").to(uri()).process(gates);
            }
        };
    }

    private TokenBucketEndpoint endpoint() {
        return context.getEndpoint(uri(), TokenBucketEndpoint.class);
    }

    private Future<Exchange> send(String body) {
        gates.close(body);
        return template.asyncSend("direct:deadline", e -> {
            e.getMessage().setBody(body);
            e.getMessage().setHeader("k", "a");
        });
    }

    @Test
    void aWaiterWhoseMaxWaitPassesDuringATryLeavesOnceWhenTheTryAnswers() throws Exception {
        Future<Exchange> h = send("h");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("h"));
        Future<Exchange> w = send("w");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint().getSlotWaitingCount() == 1);
        // its next poll (every 20 ms) sends a try that Redis holds for a second, past w's maxWait (300 ms)
        redis.command("CLIENT", "PAUSE", "1000", "WRITE");
        Exchange rejected = w.get(10, TimeUnit.SECONDS);
        assertThat(rejected.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("within maxWait");
        assertThat(order).containsExactly("h");
        assertThat(endpoint().getSlotWaitingCount()).isZero();
        assertThat(endpoint().getWaitingCount()).as("waiting places").isZero();
        await().atMost(10, TimeUnit.SECONDS).until(() -> !String.valueOf(redis.command("GET", "tokenbucket:deadline:a"))
                .contains(" q ")); // its ticket withdrawn (or expired)

        gates.open("h");
        assertThat(h.get(10, TimeUnit.SECONDS).getException()).isNull();
        Future<Exchange> n = send("n");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("n"));
        gates.open("n");
        assertThat(n.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(order).containsExactly("h", "n");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint().getInFlightCount() == 0);
    }
}
