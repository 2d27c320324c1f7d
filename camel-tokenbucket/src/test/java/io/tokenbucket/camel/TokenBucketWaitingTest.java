package io.tokenbucket.camel;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.store.local.LocalBucketStore;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Ten thousand waiting exchanges hold no threads, a stopped route leaves none hanging, and a million keys
 * leave no buckets behind once idle.
 */
class TokenBucketWaitingTest extends TokenBucketTestSupport {

    private static final int WAITERS = 10_000;

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler()); // 10,000 expected failures
                // one token per 10 minutes: 10,000 waiters are booked 69 days ahead (within the 365-day ceiling of
                // any wait), and none is released during the test
                from("direct:hourly").routeId("hourly")
                        .to("tokenbucket:hourly?capacity=1&refillPeriod=10m").to("mock:hourly");
                from("direct:fast").routeId("fast")
                        .to("tokenbucket:fast?capacity=100&refillAmount=10000&refillPeriod=1s").to("mock:fast");
                from("direct:keys").to("tokenbucket:keys?capacity=1&refillPeriod=10ms&mode=reject");
            }
        };
    }

    @Test
    void tenThousandWaitersHoldNoThreadsAndAStoppedRouteFailsEachOne() throws Exception {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        template.sendBody("direct:hourly", "warm-up"); // takes the only token: everyone after it waits
        int before = threads.getThreadCount();

        Sent sent = sendAsync("direct:hourly", WAITERS, Map.of());
        assertThat(sent.done().getCount()).as("exchanges still waiting").isEqualTo(WAITERS);
        int during = threads.getThreadCount();
        System.out.printf("threads: %d before, %d with %d exchanges waiting%n", before, during, WAITERS);
        assertThat(during - before).isLessThanOrEqualTo(2);

        context.getShutdownStrategy().setTimeout(1);
        context.getRouteController().stopRoute("hourly");
        assertThat(sent.done().await(30, TimeUnit.SECONDS)).as("every waiting exchange completed").isTrue();
        assertThat(sent.exchanges()).allSatisfy(e -> assertThat(e.getException())
                .isInstanceOf(TokenBucketException.class).hasMessageContaining("tokens were refunded"));
        getMockEndpoint("mock:hourly").expectedMessageCount(1);
        MockEndpoint.assertIsSatisfied(context);
    }

    @Test
    void thousandsOfWaitersAreAllReleased() throws Exception {
        int count = 5_000;
        MockEndpoint mock = getMockEndpoint("mock:fast");
        mock.expectedMessageCount(count);
        Sent sent = sendAsync("direct:fast", count, Map.of());
        assertThat(sent.done().await(30, TimeUnit.SECONDS)).isTrue();
        mock.assertIsSatisfied();
        assertThat(sent.exchanges()).allSatisfy(e -> assertThat(e.getException()).isNull());
        // Order is checked with 10 ms spacing in TokenBucketDelayTest; 100 us apart, on a pool of workers,
        // neighbours may swap places on their way to the mock.
    }

    @Test
    void aMillionKeysLeaveTheStoreEmptyOnceIdle() {
        int keys = 1_000_000;
        long start = System.nanoTime();
        for (int i = 0; i < keys; i++) {
            template.sendBodyAndHeader("direct:keys", null, TokenBucketConstants.KEY, "k" + i);
        }
        long sentMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        LocalBucketStore store = component().shared().localStore("keys");
        int peak = store.size();
        await().atMost(30, TimeUnit.SECONDS).until(() -> store.size() == 0);
        long emptyMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) - sentMs;
        System.out.printf("%d keys sent in %d ms; %d buckets held after sending, 0 after %d ms more%n", keys,
                sentMs, peak, emptyMs);
        assertThat(peak).isLessThan(keys); // the sweep already ran while sending
    }
}
