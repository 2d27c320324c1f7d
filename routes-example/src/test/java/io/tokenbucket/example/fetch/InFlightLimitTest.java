package io.tokenbucket.example.fetch;

import static io.tokenbucket.example.ScraperHarness.awaitUntil;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.Synchronization;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

/** {@link InFlightLimit}: a URL past the bound waits for a place, and gets the one a finished URL gives back. */
class InFlightLimitTest {

    @Test
    void aUrlPastTheBoundWaitsUntilAnotherIsDone() throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            context.start();
            InFlightLimit limit = new InFlightLimit(2, context);
            Exchange first = new DefaultExchange(context);
            limit.enter(first);
            limit.enter(new DefaultExchange(context));
            assertThat(limit.free()).isZero();

            Exchange third = new DefaultExchange(context);
            Thread waiting = new Thread(() -> limit.enter(third), "third URL");
            CompletableFuture<Void> entered = CompletableFuture.runAsync(() -> {
                waiting.start();
                try {
                    waiting.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            // the third waits for a place (parked in its timed tryAcquire), not through
            awaitUntil("the third URL to wait for a place", waiting::getState,
                    s -> s == Thread.State.TIMED_WAITING, Duration.ofSeconds(5));
            assertThat(entered).isNotDone();

            done(first);
            awaitUntil("the third URL to take the place the first gave back", entered::isDone, d -> d,
                    Duration.ofSeconds(5));
            assertThat(limit.free()).isZero();
            done(third);
            assertThat(limit.free()).isEqualTo(1);
        }
    }

    @Test
    void aStoppedContextLetsAUrlThroughWithoutAPlace() throws Exception {
        CamelContext context = new DefaultCamelContext();
        InFlightLimit limit = new InFlightLimit(1, context);
        context.start();
        limit.enter(new DefaultExchange(context));
        context.stop();

        Exchange late = new DefaultExchange(context);
        limit.enter(late); // returns: the queue's consumer is never stuck in a stopped context
        assertThat(late.getExchangeExtension().handoverCompletions()).as("no place to give back").isNull();
        assertThat(limit.free()).as("nothing taken, nothing given back").isZero();
    }

    @Test
    void aStoppedRouteLetsItsUrlThroughWithoutAPlace() throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:urls").routeId("urls").log("${body}");
                }
            });
            context.start();
            InFlightLimit limit = new InFlightLimit(1, context);
            limit.enter(new DefaultExchange(context));
            context.getRouteController().stopRoute("urls");

            Exchange late = new DefaultExchange(context);
            late.getExchangeExtension().setFromRouteId("urls");
            limit.enter(late); // returns: a consumer thread blocked here would hold up the route's stop
            assertThat(late.getExchangeExtension().handoverCompletions()).as("no place to give back").isNull();
        }
    }

    /** Completes {@code exchange} as its route's end does: its on-completions run. */
    private static void done(Exchange exchange) {
        List<Synchronization> completions = exchange.getExchangeExtension().handoverCompletions();
        for (Synchronization s : completions == null ? List.<Synchronization>of() : completions) {
            s.onComplete(exchange);
        }
    }
}
