package io.tokenbucket.example.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;

import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link BucketSteps}: what an attempt owes the pairs' buckets, as the route reads it from the exchange. */
class BucketStepsTest {

    private final DefaultCamelContext context = new DefaultCamelContext();

    @AfterEach
    void close() throws Exception {
        context.close();
    }

    @Test
    void aRestAndACutBecomeStepsOnThePairsKeyInOrder() {
        Exchange exchange = new DefaultExchange(context);
        BucketSteps.of(exchange, true).throttled("p1", "a.example");
        BucketSteps.of(exchange, true).penalize("p1", "a.example", 2_000);
        assertThat(steps(exchange)).containsExactly(
                Map.of("operation", "throttled", "key", "pair p1 a.example"),
                Map.of("operation", "penalize", "key", "pair p1 a.example", "penalty", 2_000L));
    }

    @Test
    void withoutTheAdaptiveRateNoCutIsOwedAndARestIsNeverNegative() {
        Exchange exchange = new DefaultExchange(context);
        BucketSteps steps = BucketSteps.of(exchange, false);
        steps.throttled("p1", "a.example");
        steps.penalize("p1", "a.example", -5);
        // no proxy or no host: nothing to tell
        steps.penalize(null, "a.example", 1_000);
        steps.penalize("p1", null, 1_000);
        assertThat(steps(exchange)).containsExactly(
                Map.of("operation", "penalize", "key", "pair p1 a.example", "penalty", 0L));
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> steps(Exchange exchange) {
        return exchange.getProperty(BucketSteps.PROPERTY, List.class);
    }
}
