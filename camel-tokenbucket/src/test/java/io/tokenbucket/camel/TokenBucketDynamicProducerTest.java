package io.tokenbucket.camel;

import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An endpoint reached through {@code toD}, its route running on: waiting exchanges are released, not abandoned, when
 * Camel stops their producer without stopping the route: one not cached ({@code cacheSize=-1}, stopped once its
 * exchange is done with it), or one the cache evicts for another endpoint's while its exchanges wait.
 */
class TokenBucketDynamicProducerTest extends TokenBucketTestSupport {

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:dyn").toD("tokenbucket:${header.name}?capacity=1&refillPeriod=50ms&maxWait=10s", -1)
                        .to("mock:passed");
                from("direct:small").toD("tokenbucket:${header.name}?capacity=1&refillPeriod=50ms&maxWait=10s", 1)
                        .to("mock:passed");
            }
        };
    }

    @Test
    void waitersOfAnUncachedDynamicProducerAreReleased() throws Exception {
        Sent sent = sendAsync("direct:dyn", 10, Map.of("name", "dyn"));
        assertThat(sent.done().await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(sent.exchanges()).allSatisfy(e -> assertThat(e.getException()).isNull());
        assertThat(getMockEndpoint("mock:passed").getReceivedCounter()).isEqualTo(10);
    }

    @Test
    void waitersOfAProducerEvictedFromTheDynamicCacheAreReleased() throws Exception {
        Sent first = sendAsync("direct:small", 10, Map.of("name", "first"));
        Sent second = sendAsync("direct:small", 10, Map.of("name", "second")); // the cache holds one producer
        assertThat(first.done().await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(second.done().await(20, TimeUnit.SECONDS)).isTrue();
        assertThat(first.exchanges()).allSatisfy(e -> assertThat(e.getException()).isNull());
        assertThat(second.exchanges()).allSatisfy(e -> assertThat(e.getException()).isNull());
    }
}
