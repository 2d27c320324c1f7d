package io.tokenbucket.camel;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.main.Main;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * Exchanges waiting for their tokens hold up the Camel context's stop for {@code stopTimeout} at most, whatever
 * the graceful shutdown's own timeout: those whose tokens come later fail at once with {@link TokenBucketException}
 * (their tokens refunded), reaching the route's error handler, and the others go on. Thousands of waiters, booked
 * up to minutes ahead, with the shutdown strategy's timeout at 60 s: without the bound the stop would take 60 s.
 */
class TokenBucketStopTimeoutTest extends TokenBucketTestSupport {

    private static final int EXCHANGES = 3_000;
    /** 10 tokens a second: the last of 3,000 exchanges would wait about 300 s. */
    private static final String LIMITED = "tokenbucket:stop?capacity=10&refillPeriod=1s&maxWaiting=10000";

    @Override
    protected RouteBuilder createRouteBuilder() {
        return routes(LIMITED + "&stopTimeout=2s");
    }

    private static RouteBuilder routes(String tokenbucket) {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(deadLetterChannel("mock:failed"));
                from("direct:in").routeId("in").to(tokenbucket).to("mock:passed");
            }
        };
    }

    @Test
    void theStopWaitsStopTimeoutAtMostAndEveryExchangeCompletes() throws Exception {
        context.getShutdownStrategy().setTimeout(60);
        long began = System.nanoTime();
        Sent sent = sendAsync("direct:in", EXCHANGES, Map.of());
        TokenBucketEndpoint endpoint = context.getEndpoint(LIMITED + "&stopTimeout=2s", TokenBucketEndpoint.class);
        Awaitility.await().atMost(Duration.ofSeconds(30))
                .until(() -> endpoint.getWaitingCount() + endpoint.getAdmittedCount() == EXCHANGES);
        MockEndpoint passed = getMockEndpoint("mock:passed");
        MockEndpoint failed = getMockEndpoint("mock:failed");

        long start = System.nanoTime();
        context.stop();
        long stopMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        System.out.printf("stop with %d exchanges waiting, stopTimeout 2 s: %d ms; %d passed, %d failed%n",
                EXCHANGES, stopMillis, passed.getReceivedCounter(), failed.getReceivedCounter());
        // 2 s, plus the shutdown strategy's one-second polls and a noisy machine: far below its 60 s
        assertThat(stopMillis).isLessThan(10_000);
        assertThat(sent.done().await(10, TimeUnit.SECONDS)).as("every exchange completed").isTrue();
        assertThat(passed.getReceivedCounter() + failed.getReceivedCounter()).isEqualTo(EXCHANGES);
        // the bucket's 10 tokens, and those whose tokens came before the stop ended (10 a second): a bound from the
        // time the test really took, not from a guess at how fast the machine sends
        long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began);
        assertThat(passed.getReceivedCounter()).isBetween(10, 10 + (int) (tookMillis / 100) + 1);
        assertAbandoned(failed.getReceivedExchanges());
        assertThat(endpoint.getAbandonedCount()).isEqualTo(failed.getReceivedCounter());
    }

    @Test
    void stopTimeoutZeroFailsEveryWaiterAtOnceInCamelMain() throws Exception {
        // no token comes back within the test: the 10 admitted at once are all that pass
        String hourly = "tokenbucket:stop?capacity=10&refillPeriod=1h&maxWaiting=10000&stopTimeout=0";
        Main main = new Main();
        main.configure().addRoutesBuilder(routes(hourly));
        main.configure().withShutdownTimeout(60);
        main.configure().withJmxEnabled(false);
        main.start();
        try {
            CamelContext camel = main.getCamelContext();
            Sent sent = sendAsync(camel, "direct:in", EXCHANGES, Map.of());
            TokenBucketEndpoint endpoint = camel.getEndpoint(hourly, TokenBucketEndpoint.class);
            Awaitility.await().atMost(Duration.ofSeconds(30))
                    .until(() -> endpoint.getWaitingCount() + endpoint.getAdmittedCount() == EXCHANGES);
            assertThat(endpoint.getAdmittedCount()).isEqualTo(10);
            MockEndpoint passed = camel.getEndpoint("mock:passed", MockEndpoint.class);
            MockEndpoint failed = camel.getEndpoint("mock:failed", MockEndpoint.class);

            long start = System.nanoTime();
            main.stop();
            long stopMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

            System.out.printf("Camel Main stop with %d exchanges waiting, stopTimeout 0: %d ms%n", EXCHANGES,
                    stopMillis);
            assertThat(stopMillis).isLessThan(8_000);
            assertThat(sent.done().await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(passed.getReceivedCounter()).isEqualTo(10);
            assertThat(failed.getReceivedCounter()).isEqualTo(EXCHANGES - 10);
            assertAbandoned(failed.getReceivedExchanges());
        } finally {
            main.stop();
        }
    }

    @Test
    void aNegativeStopTimeoutIsRefusedNamingIt() throws Exception {
        assertThat(startFailure("tokenbucket:neg?stopTimeout=-1")).hasMessageContaining("stopTimeout");
    }

    private static void assertAbandoned(List<Exchange> failed) {
        assertThat(failed).allSatisfy(e -> assertThat(e.getProperty(Exchange.EXCEPTION_CAUGHT, Exception.class))
                .isInstanceOf(TokenBucketException.class).hasMessageContaining("stopTimeout")
                .hasMessageContaining("tokens were refunded"));
    }
}
