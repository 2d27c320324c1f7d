package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Waiters on a key are released in the order they reserved. Checked with a one-thread worker pool, so that
 * the order of release is also the order of arrival downstream (a pool of several threads may run two
 * exchanges released together side by side). An exchange that did not wait at all (its slot was already due
 * when it came, for example after the machine stalled) may pass at once on its caller's thread; only the
 * exchanges that waited are compared. A waiter released late after a stall reserves again, at the back of the
 * queue: that is the point of {@code maxLateness}, so this test turns it off ({@code -1}).
 */
class TokenBucketFifoTest extends TokenBucketTestSupport {

    private final ExecutorService oneWorker = Executors.newSingleThreadExecutor();

    @AfterEach
    void stopWorker() {
        oneWorker.shutdownNow();
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        context.getComponent("tokenbucket", TokenBucketComponent.class).setWorkerPool(oneWorker);
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:fifo").to("tokenbucket:fifo?capacity=1&refillAmount=100&refillPeriod=1s&maxLateness=-1")
                        .to("mock:fifo");
            }
        };
    }

    @Test
    void waitersOnAKeyAreReleasedInReservationOrder() throws Exception {
        int count = 60;
        getMockEndpoint("mock:fifo").expectedMessageCount(count);
        Sent sent = sendAsync("direct:fifo", count, Map.of());
        assertThat(sent.done().await(30, TimeUnit.SECONDS)).isTrue();
        getMockEndpoint("mock:fifo").assertIsSatisfied();
        List<Integer> waitedInArrivalOrder = getMockEndpoint("mock:fifo").getReceivedExchanges().stream()
                .filter(e -> e.getMessage().getHeader(TokenBucketConstants.WAITED, Long.class) > 0)
                .map(e -> e.getMessage().getBody(Integer.class)).toList();
        assertThat(waitedInArrivalOrder).hasSizeGreaterThan(count / 2).isSorted();
        assertThat(sent.exchanges()).allSatisfy(e -> assertThat(e.getException()).isNull());
    }
}
