package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.AsyncProducer;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A producer stopped while its waiters are being released: each exchange's callback is called exactly once, either
 * released (no exception) or abandoned with its tokens refunded, never both and never neither.
 */
class TokenBucketReleaseRaceTest extends TokenBucketTestSupport {

    private static final int EXCHANGES = 10_000;

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler()); // the abandoned ones are expected failures
                // a slot every ms: releases are in full flow when the route stops, and 10 s of them still to come
                from("direct:race").routeId("race")
                        .to("tokenbucket:race?capacity=1&refillPeriod=1ms").to("mock:race");
            }
        };
    }

    @Test
    void stoppingWhileReleasingCallsEveryCallbackExactlyOnce() throws Exception {
        AsyncProducer producer = context.getEndpoint("direct:race").createAsyncProducer();
        producer.start();
        List<Exchange> exchanges = new ArrayList<>(EXCHANGES);
        List<AtomicInteger> calls = new ArrayList<>(EXCHANGES);
        CountDownLatch done = new CountDownLatch(EXCHANGES);
        for (int i = 0; i < EXCHANGES; i++) {
            Exchange exchange = new DefaultExchange(context);
            AtomicInteger called = new AtomicInteger();
            exchanges.add(exchange);
            calls.add(called);
            producer.process(exchange, doneSync -> {
                called.incrementAndGet();
                done.countDown();
            });
        }
        MockEndpoint mock = getMockEndpoint("mock:race");
        await().atMost(30, TimeUnit.SECONDS).until(() -> mock.getReceivedCounter() >= 200);

        context.getShutdownStrategy().setTimeout(1);
        context.getRouteController().stopRoute("race");
        assertThat(done.await(30, TimeUnit.SECONDS)).as("every exchange completed").isTrue();
        context.stop(); // the timer and the worker pool are shut down: no callback can still come
        producer.stop();

        assertThat(calls).allSatisfy(c -> assertThat(c.get()).isEqualTo(1));
        // released: the producer set its waited header (the next step may then fail, its route stopping);
        // abandoned: no header, and the failure says the tokens were refunded
        List<Exchange> released = exchanges.stream()
                .filter(e -> e.getMessage().getHeader(TokenBucketConstants.WAITED) != null).toList();
        assertThat(released).noneMatch(e -> e.getException() instanceof TokenBucketException);
        assertThat(exchanges).filteredOn(e -> e.getMessage().getHeader(TokenBucketConstants.WAITED) == null)
                .allSatisfy(e -> assertThat(e.getException()).isInstanceOf(TokenBucketException.class)
                        .hasMessageContaining("tokens were refunded"));
        assertThat(released).as("released before the stop").hasSizeBetween(200, EXCHANGES - 1);
    }
}
