package io.tokenbucket.camel.springboot.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.TokenBucketEndpoint;
import io.tokenbucket.camel.TokenBucketException;
import org.apache.camel.AsyncProducer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.support.DefaultExchange;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Closing a Spring Boot application (what SIGTERM does) with thousands of exchanges waiting for their tokens takes
 * {@code camel.component.tokenbucket.stop-timeout} at most, not Camel's graceful shutdown timeout (here 60 s); each
 * waiting exchange fails with {@link TokenBucketException} through the route's error handler.
 */
class TokenBucketStarterStopTest {

    private static final int EXCHANGES = 2_000;

    @Test
    void closingTheApplicationWaitsStopTimeoutAtMost() throws Exception {
        ConfigurableApplicationContext application = new SpringApplicationBuilder(TokenBucketTestApplication.class)
                .run("--camel.component.tokenbucket.stop-timeout=1s", "--camel.main.shutdown-timeout=60",
                        "--camel.main.jmx-enabled=false");
        CamelContext camel = application.getBean(CamelContext.class);
        AsyncProducer producer = camel.getEndpoint("direct:slow").createAsyncProducer();
        producer.start();
        CountDownLatch done = new CountDownLatch(EXCHANGES);
        List<Exchange> sent = new ArrayList<>();
        for (int i = 0; i < EXCHANGES; i++) {
            Exchange exchange = new DefaultExchange(camel);
            sent.add(exchange);
            producer.process(exchange, doneSync -> done.countDown());
        }
        TokenBucketEndpoint endpoint = (TokenBucketEndpoint) camel.getEndpoints().stream()
                .filter(e -> e instanceof TokenBucketEndpoint t && t.getName().equals("slow")).findFirst()
                .orElseThrow();
        assertThat(endpoint.getConfiguration().getStopTimeout()).isEqualTo(1000);
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> endpoint.getWaitingCount() == EXCHANGES - 1);
        MockEndpoint passed = camel.getEndpoint("mock:passed", MockEndpoint.class);
        MockEndpoint failed = camel.getEndpoint("mock:failed", MockEndpoint.class);

        long start = System.nanoTime();
        application.close();
        long closeMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        System.out.printf("Spring Boot close with %d exchanges waiting, stop-timeout 1s: %d ms%n", EXCHANGES - 1,
                closeMillis);
        assertThat(closeMillis).isLessThan(10_000);
        assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(passed.getReceivedCounter()).isEqualTo(1);
        assertThat(failed.getReceivedCounter()).isEqualTo(EXCHANGES - 1);
        assertThat(failed.getReceivedExchanges()).allSatisfy(e -> assertThat(
                e.getProperty(Exchange.EXCEPTION_CAUGHT, Exception.class)).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("stopTimeout"));
    }
}
