package io.tokenbucket.camel;

import java.time.Duration;
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
 * Redis failing while exchanges wait for an in-flight slot ({@code onStoreError=fail}): the drain that tries them
 * meets the failure on its first waiter and goes on with the next, so each fails with the store's error long before
 * its maxWait instead of hanging behind the first; and once Redis answers again the queue works (no drain is left
 * half done, which would keep every later waiter from being tried). One slot; the step after the endpoint holds its
 * slot until the test opens the gate named by the exchange's body.
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketSlotStoreFailureTest extends TokenBucketRedisTestSupport {

    private final TokenBucketGates gates = new TokenBucketGates();
    private final List<String> order = gates.order();

    private static String uri() {
        return "tokenbucket:failing?keyHeader=k&limits=1 in flight&maxWait=60s&store=redis&redisUri=" + redis.uri()
                + "&inFlightLease=5s&onStoreError=fail&storeTimeout=300ms";
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:failing").to(uri()).process(gates);
            }
        };
    }

    private TokenBucketEndpoint endpoint() {
        return context.getEndpoint(uri(), TokenBucketEndpoint.class);
    }

    private Future<Exchange> send(String body) {
        gates.close(body);
        return template.asyncSend("direct:failing", e -> {
            e.getMessage().setBody(body);
            e.getMessage().setHeader("k", "a");
        });
    }

    @Test
    void waitersTriedWhileRedisFailsEachFailWithItsErrorAndTheQueueWorksWhenRedisIsBack() throws Exception {
        Future<Exchange> h = send("h");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("h"));
        Future<Exchange> w1 = send("w1");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint().getSlotWaitingCount() == 1);
        Future<Exchange> w2 = send("w2");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint().getSlotWaitingCount() == 2);

        redis.stop();
        try {
            // the waiters' poll tries them: each fails with the store's error, well before its maxWait (60 s)
            for (Future<Exchange> w : List.of(w1, w2)) {
                assertThat(w.get(20, TimeUnit.SECONDS).getException()).isInstanceOf(TokenBucketStoreException.class);
            }
            assertThat(endpoint().getSlotWaitingCount()).isZero();
            assertThat(endpoint().getWaitingCount()).as("waiting places").isZero();
        } finally {
            redis.start(); // a new redis-server: the slot h held is forgotten with the rest
        }
        gates.open("h");
        h.get(10, TimeUnit.SECONDS);

        // Redis answers again: one exchange passes, the next waits for it and passes after it
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100)).until(() -> {
            Exchange probe = template.request(uri(), e -> {
                e.getMessage().setHeader(TokenBucketConstants.OPERATION, "peek");
                e.getMessage().setHeader("k", "a");
            });
            return probe.getException() == null;
        });
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint().getInFlightCount() == 0);
        Future<Exchange> n1 = send("n1");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("n1"));
        Future<Exchange> n2 = send("n2");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint().getSlotWaitingCount() == 1);
        gates.open("n1");
        assertThat(n1.get(10, TimeUnit.SECONDS).getException()).isNull();
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("n2"));
        gates.open("n2");
        assertThat(n2.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(order).containsExactly("h", "n1", "n2");
        assertThat(endpoint().getSlotWaitingCount()).isZero();
    }
}
