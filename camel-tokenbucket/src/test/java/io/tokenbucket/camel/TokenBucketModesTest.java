package io.tokenbucket.camel;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** reject and check modes, and maxWait in delay mode: refusals are immediate and consume nothing. */
class TokenBucketModesTest extends TokenBucketTestSupport {

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:reject").to("tokenbucket:api?capacity=2&refillPeriod=1h&mode=reject")
                        .to("mock:reject");
                from("direct:check").to("tokenbucket:check?capacity=1&refillPeriod=1h&mode=check").to("mock:check");
                from("direct:maxWait").to("tokenbucket:bounded?capacity=1&refillPeriod=10s&maxWait=100ms")
                        .to("mock:maxWait");
                from("direct:handled").onException(TokenBucketRejectedException.class).handled(true)
                        .setBody(constant("too busy")).end()
                        .to("tokenbucket:handled?capacity=1&refillPeriod=1h&mode=reject");
            }
        };
    }

    @Test
    void rejectModeFailsAtOnceNamingEndpointKeyAndLimit() throws Exception {
        getMockEndpoint("mock:reject").expectedMessageCount(2);
        long began = System.nanoTime();
        for (int i = 0; i < 2; i++) {
            assertThat(template.request("direct:reject", e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "u1"))
                    .getException()).isNull();
        }
        Exchange third = template.request("direct:reject", e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "u1"));
        assertThat(third.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("tokenbucket:api").hasMessageContaining("'u1'")
                .hasMessageContaining("capacity 2, refill 2 per 3600000 ms");
        // the first token comes back half an hour after it was taken, less the real time since (however long the
        // machine took between the calls)
        long sinceFirst = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began) + 1;
        TokenBucketRejectedException rejected = (TokenBucketRejectedException) third.getException();
        assertThat(rejected.getKey()).isEqualTo("u1");
        assertThat(rejected.getEndpointName()).isEqualTo("api");
        assertThat(rejected.getWaitMillis()).isBetween(1_800_000L - sinceFirst, 1_800_000L);
        assertThat(rejected).hasMessageContaining("they would take " + rejected.getWaitMillis() + " ms");
        MockEndpoint.assertIsSatisfied(context);
    }

    @Test
    void aRejectionCanBeRoutedByTheErrorHandler() {
        assertThat(template.requestBody("direct:handled", "a")).isEqualTo("a");
        assertThat(template.requestBody("direct:handled", "b")).isEqualTo("too busy");
    }

    @Test
    void checkModeMarksAndContinuesConsumingOnlyWhenAllowed() throws Exception {
        MockEndpoint mock = getMockEndpoint("mock:check");
        mock.expectedMessageCount(3);
        for (int i = 0; i < 3; i++) {
            template.sendBody("direct:check", i);
        }
        mock.assertIsSatisfied();
        assertThat(mock.getReceivedExchanges())
                .extracting(e -> e.getMessage().getHeader(TokenBucketConstants.ALLOWED, Boolean.class))
                .containsExactly(true, false, false);
        assertThat(mock.getReceivedExchanges())
                .extracting(e -> e.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class))
                .containsExactly(0L, 0L, 0L);
    }

    @Test
    void maxWaitRefusesLongWaitsWithoutConsuming() throws Exception {
        getMockEndpoint("mock:maxWait").expectedMessageCount(1);
        template.sendBody("direct:maxWait", "first");
        Exchange second = template.request("direct:maxWait", e -> e.getMessage().setBody("second"));
        assertThat(second.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("within maxWait 100 ms");
        // the refusal consumed nothing: the bucket still owes one token, not two
        TokenBucketEndpoint endpoint = context.getEndpoint(
                "tokenbucket:bounded?capacity=1&refillPeriod=10s&maxWait=100ms", TokenBucketEndpoint.class);
        long waitNanos = endpoint.store().peek("", endpoint.limitSource().limits(), 1).toCompletableFuture().join()
                .waitTicks();
        assertThat(waitNanos).isBetween(8_000_000_000L, 10_000_000_000L);
        MockEndpoint.assertIsSatisfied(context);
    }
}
