package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Delay mode in real time: the burst passes at once, the rest waits its turn on a worker thread. */
class TokenBucketDelayTest extends TokenBucketTestSupport {

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:burst").to("tokenbucket:burst?capacity=2&refillPeriod=1s&keyHeader=proxyId")
                        .process(e -> e.getMessage().setHeader("thread", Thread.currentThread().getName()))
                        .process(e -> e.getMessage().setHeader("releasedNanos", System.nanoTime()))
                        .to("mock:burst");
                from("direct:sync").to("tokenbucket:sync?capacity=1&refillPeriod=300ms").to("mock:sync");
            }
        };
    }

    @Test
    void theBurstPassesAtOnceAndTheRestWaitsOnAWorkerThread() throws Exception {
        MockEndpoint mock = getMockEndpoint("mock:burst");
        mock.expectedMessageCount(4);
        long start = System.nanoTime();
        sendAsync("direct:burst", 4, Map.of("proxyId", "p1"));
        mock.assertIsSatisfied(10_000);
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        List<Exchange> got = mock.getReceivedExchanges();
        assertThat(got).extracting(e -> e.getMessage().getBody(Integer.class)).containsExactly(0, 1, 2, 3);
        assertThat(got).extracting(e -> e.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class))
                .containsExactly(1L, 0L, 0L, 0L);
        assertThat(waited(got.get(0))).isZero();
        assertThat(waited(got.get(1))).isZero();
        // one token back 500 ms after the burst was taken, which was after start: bounds no delay in sending can cross
        assertThat(waited(got.get(2))).isBetween(1L, 5_000L);
        assertThat(waited(got.get(3))).isBetween(1L, 5_000L);
        assertThat(releasedMs(got.get(2), start)).isGreaterThanOrEqualTo(500);
        assertThat(releasedMs(got.get(3), start)).isGreaterThanOrEqualTo(1000);
        assertThat(elapsedMs).isGreaterThanOrEqualTo(1000);
        assertThat(got.get(3).getMessage().getHeader("thread", String.class)).contains("TokenBucketWorker");
    }

    @Test
    void anotherKeyDoesNotWait() throws Exception {
        MockEndpoint mock = getMockEndpoint("mock:burst");
        mock.expectedMessageCount(4);
        sendAsync("direct:burst", 2, Map.of("proxyId", "a"));
        sendAsync("direct:burst", 2, Map.of("proxyId", "b"));
        mock.assertIsSatisfied(5_000);
        assertThat(mock.getReceivedExchanges()).allSatisfy(e -> assertThat(waited(e)).isZero());
    }

    @Test
    void aSynchronousCallerBlocksUntilReleased() {
        // from before the first token was taken: the second is back 300 ms after it, however the calls are scheduled
        long start = System.nanoTime();
        template.requestBody("direct:sync", "first");
        Exchange second = template.request("direct:sync", e -> e.getMessage().setBody("second"));
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(second.getException()).isNull();
        assertThat(elapsedMs).isGreaterThanOrEqualTo(300);
        assertThat(waited(second)).isPositive().isLessThanOrEqualTo(elapsedMs);
    }

    /** Milliseconds from {@code start} until the exchange passed the endpoint. */
    private static long releasedMs(Exchange e, long start) {
        return TimeUnit.NANOSECONDS.toMillis(e.getMessage().getHeader("releasedNanos", Long.class) - start);
    }

    private static long waited(Exchange e) {
        return e.getMessage().getHeader(TokenBucketConstants.WAITED, Long.class);
    }
}
