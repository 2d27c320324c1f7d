package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.camel.AggregationStrategy;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.processor.aggregate.GroupedExchangeAggregationStrategy;
import org.apache.camel.processor.aggregate.UseLatestAggregationStrategy;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * In-flight slots taken by an exchange, or by its copies, in the EIPs that copy, end or drop exchanges (multicast,
 * recipient list, enrich, split with an aggregation, aggregate, filter, stop, an exception): every slot comes back
 * once everything has ended, counted on the store.
 */
class TokenBucketInFlightEipTest extends TokenBucketRedisTestSupport {

    private static String uri(String store) {
        return "tokenbucket:eip" + store + "?keyHeader=k&maxInFlight=100&maxWait=1s&store=" + store
                + ("redis".equals(store) ? "&redisUri=" + redis.uri() : "");
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                onException(IllegalStateException.class).handled(true);
                AggregationStrategy latest = new UseLatestAggregationStrategy();
                for (String s : List.of("local", "redis")) {
                    String slots = uri(s);
                    from("direct:take-" + s).setHeader("k", constant("inner")).to(slots);
                    from("direct:multicast-" + s).setHeader("k", constant("outer")).to(slots)
                            .multicast(latest).to("direct:take-" + s, "direct:take-" + s).end();
                    from("direct:shared-" + s).setHeader("k", constant("outer")).to(slots)
                            .multicast(latest).shareUnitOfWork().to("direct:take-" + s, "direct:take-" + s).end();
                    from("direct:parallel-" + s).setHeader("k", constant("outer")).to(slots)
                            .multicast(latest).parallelProcessing().to("direct:take-" + s, "direct:take-" + s).end();
                    from("direct:recipients-" + s).setHeader("k", constant("outer")).to(slots)
                            .recipientList(constant("direct:take-" + s + ",direct:take-" + s));
                    from("direct:enrich-" + s).setHeader("k", constant("outer")).to(slots)
                            .enrich("direct:take-" + s, latest);
                    from("direct:split-" + s).setHeader("k", constant("outer")).to(slots)
                            .split(constant(List.of(1, 2, 3)), new GroupedExchangeAggregationStrategy())
                                .to("direct:take-" + s)
                            .end();
                    from("direct:aggregate-" + s).setHeader("k", constant("outer")).to(slots)
                            .aggregate(constant(1), latest).completionSize(2)
                                .setHeader("k", constant("inner")).to(slots);
                    from("direct:filter-" + s).setHeader("k", constant("outer")).to(slots)
                            .filter(constant(false)).to("mock:never");
                    from("direct:stop-" + s).setHeader("k", constant("outer")).to(slots).stop();
                    from("direct:fail-" + s).setHeader("k", constant("outer")).to(slots)
                            .throwException(new IllegalStateException("after the endpoint"));
                }
            }
        };
    }

    private long freeSlots(String store, String key) {
        Exchange peek = template.request(uri(store), e -> {
            e.getMessage().setHeader(TokenBucketConstants.OPERATION, "peek");
            e.getMessage().setHeader("k", key);
        });
        return peek.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void everySlotComesBack(String store) {
        for (String eip : List.of("multicast", "shared", "parallel", "recipients", "enrich", "split", "aggregate",
                "filter", "stop", "fail")) {
            for (int i = 0; i < 4; i++) {
                Exchange done = template.send("direct:" + eip + "-" + store, e -> e.getMessage().setBody(1));
                assertThat(done.getException()).as(eip).isNull();
            }
        }
        TokenBucketEndpoint endpoint = context.getEndpoint(uri(store), TokenBucketEndpoint.class);
        await().atMost(10, TimeUnit.SECONDS).untilAsserted(() -> {
            assertThat(endpoint.getInFlightCount()).isZero();
            assertThat(freeSlots(store, "outer")).isEqualTo(100);
            assertThat(freeSlots(store, "inner")).isEqualTo(100);
        });
    }
}
