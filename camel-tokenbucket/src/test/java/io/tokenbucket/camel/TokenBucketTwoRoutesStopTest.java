package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.AsyncProducer;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Two routes send to one endpoint and 100 exchanges of each wait for their tokens (one an hour); one route stops,
 * then is removed. Its waiters fail once each, their tokens refunded (the bucket's wait is the other route's alone);
 * the other route's waiters go on waiting, and fail once each when the context stops.
 */
class TokenBucketTwoRoutesStopTest extends TokenBucketRedisTestSupport {

    private static final int EACH = 100;

    private static String uri(String store) {
        return "tokenbucket:two" + store + "?capacity=1&refillPeriod=1h&maxWait=1000h&maxWaiting=1000&stopTimeout=0"
                + "&store=" + store + ("redis".equals(store) ? "&redisUri=" + redis.uri() : "");
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                for (String s : List.of("local", "redis")) {
                    from("direct:a-" + s).routeId("a-" + s).to(uri(s));
                    from("direct:b-" + s).routeId("b-" + s).to(uri(s));
                }
            }
        };
    }

    private record Sent(List<Exchange> exchanges, List<AtomicInteger> calls, CountDownLatch done) {
    }

    private Sent send(String uri, int count) throws Exception {
        AsyncProducer producer = context.getEndpoint(uri).createAsyncProducer();
        producer.start();
        List<Exchange> exchanges = new java.util.ArrayList<>();
        List<AtomicInteger> calls = new java.util.ArrayList<>();
        CountDownLatch done = new CountDownLatch(count);
        for (int i = 0; i < count; i++) {
            Exchange exchange = new DefaultExchange(context);
            AtomicInteger called = new AtomicInteger();
            exchanges.add(exchange);
            calls.add(called);
            producer.process(exchange, doneSync -> {
                called.incrementAndGet();
                done.countDown();
            });
        }
        return new Sent(exchanges, calls, done);
    }

    private long waitEstimateHours(String store) {
        Exchange peek = template.request(uri(store),
                e -> e.getMessage().setHeader(TokenBucketConstants.OPERATION, "peek"));
        return Math.round(peek.getMessage().getHeader(TokenBucketConstants.WAIT_ESTIMATE, Long.class) / 3_600_000.0);
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void theStoppedRoutesWaitersFailOnceRefundedAndTheOthersWaitOn(String store) throws Exception {
        TokenBucketEndpoint endpoint = context.getEndpoint(uri(store), TokenBucketEndpoint.class);
        Sent a = send("direct:a-" + store, EACH + 1); // the first passes with the bucket's one token
        Sent b = send("direct:b-" + store, EACH);
        await().atMost(30, TimeUnit.SECONDS).until(() -> endpoint.getWaitingCount() == 2 * EACH);
        assertThat(waitEstimateHours(store)).isEqualTo(2 * EACH + 1); // a peek asks for one more

        context.getRouteController().stopRoute("a-" + store, 1, TimeUnit.SECONDS);
        assertThat(a.done().await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(a.exchanges().subList(1, EACH + 1)).allSatisfy(e -> assertThat(e.getException())
                .isInstanceOf(TokenBucketException.class).hasMessageContaining("refunded"));
        assertThat(endpoint.getWaitingCount()).isEqualTo(EACH);
        assertThat(b.done().getCount()).isEqualTo(EACH);
        // the refunds give back the stopped route's reservations, wherever they were in the line
        await().atMost(10, TimeUnit.SECONDS).until(() -> waitEstimateHours(store) == EACH + 1);
        context.removeRoute("a-" + store);
        assertThat(endpoint.getWaitingCount()).isEqualTo(EACH);

        context.stop();
        assertThat(b.done().await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(b.exchanges()).allSatisfy(e -> assertThat(e.getException())
                .isInstanceOf(TokenBucketException.class));
        assertThat(a.calls()).allSatisfy(c -> assertThat(c.get()).isEqualTo(1));
        assertThat(b.calls()).allSatisfy(c -> assertThat(c.get()).isEqualTo(1));
        assertThat(endpoint.getWaitingCount()).isZero();
    }
}
