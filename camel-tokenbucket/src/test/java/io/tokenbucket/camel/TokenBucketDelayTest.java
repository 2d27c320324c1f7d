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
        assertThat(waited(got.get(2))).isBetween(450L, 5_000L); // one token back after 500 ms
        assertThat(waited(got.get(3))).isBetween(950L, 5_000L);
        assertThat(elapsedMs).isGreaterThanOrEqualTo(950);
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
        template.requestBody("direct:sync", "first");
        long start = System.nanoTime();
        Exchange second = template.request("direct:sync", e -> e.getMessage().setBody("second"));
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(second.getException()).isNull();
        assertThat(elapsedMs).isGreaterThanOrEqualTo(250);
        assertThat(waited(second)).isGreaterThanOrEqualTo(250L);
    }

    private static long waited(Exchange e) {
        return e.getMessage().getHeader(TokenBucketConstants.WAITED, Long.class);
    }
}
