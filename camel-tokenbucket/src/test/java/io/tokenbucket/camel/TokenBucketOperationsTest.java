package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The bucket operations through the endpoint: refund, remove, peek, penalize, the freest of candidates,
 * several limits per bucket and per-key limits (an option, and a resolver bean changed at runtime).
 */
class TokenBucketOperationsTest extends TokenBucketTestSupport {

    private final Map<String, String> premium = new ConcurrentHashMap<>();

    @Override
    protected RoutesBuilder createRouteBuilder() {
        context.getRegistry().bind("tiers", TokenBucketLimitResolver.text(premium::get));
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler()); // rejections are looked at, not handled
                from("direct:fleet").to("tokenbucket:fleet?capacity=2&refillPeriod=1h&keyHeader=proxyId&mode=reject");
                from("direct:multi").to("tokenbucket:multi?limits=2/1s,3/1h&mode=reject");
                from("direct:tiers").to("tokenbucket:tiers?capacity=1&refillPeriod=1h&mode=reject"
                        + "&keyLimits=gold-*=3/1h;silver=2/1h&limitResolver=#tiers");
            }
        };
    }

    private Exchange fleet(String operation, String proxy, Map<String, Object> more) {
        Map<String, Object> headers = new java.util.HashMap<>(more);
        headers.put("proxyId", proxy);
        if (operation != null) {
            headers.put(TokenBucketConstants.OPERATION, operation);
        }
        return send("direct:fleet", headers);
    }

    private static long header(Exchange e, String name) {
        return e.getMessage().getHeader(name, Long.class);
    }

    @Test
    void peekRefundAndRemoveReportAndNeverConsume() {
        Exchange peek = fleet("peek", "p1", Map.of());
        assertThat(header(peek, TokenBucketConstants.REMAINING)).isEqualTo(2);
        assertThat(header(peek, TokenBucketConstants.WAIT_ESTIMATE)).isZero();
        fleet(null, "p1", Map.of());
        fleet(null, "p1", Map.of());
        Exchange empty = fleet("peek", "p1", Map.of(TokenBucketConstants.COST, 2));
        assertThat(header(empty, TokenBucketConstants.REMAINING)).isZero();
        assertThat(header(empty, TokenBucketConstants.WAIT_ESTIMATE)).isBetween(3_500_000L, 3_600_000L);
        assertThat(header(fleet("refund", "p1", Map.of()), TokenBucketConstants.REMAINING)).isEqualTo(1);
        assertThat(fleet(null, "p1", Map.of()).getException()).isNull();
        assertThat(fleet(null, "p1", Map.of()).getException()).isInstanceOf(TokenBucketRejectedException.class);
        assertThat(fleet("remove", "p1", Map.of()).getException()).isNull();
        assertThat(header(fleet(null, "p1", Map.of()), TokenBucketConstants.REMAINING)).isEqualTo(1);
    }

    @Test
    void penalizeBacksTheKeyOffForTheGivenTime() {
        Exchange penalized = fleet("Penalize", "p2", Map.of(TokenBucketConstants.PENALTY, "30s"));
        assertThat(header(penalized, TokenBucketConstants.WAIT_ESTIMATE)).isBetween(29_000L, 30_000L);
        Exchange refused = fleet(null, "p2", Map.of());
        assertThat(refused.getException()).isInstanceOf(TokenBucketRejectedException.class);
        assertThat(((TokenBucketRejectedException) refused.getException()).getWaitMillis()).isBetween(29_000L, 30_000L);
        assertThat(fleet(null, "p3", Map.of()).getException()).as("other keys are untouched").isNull();
        Exchange millis = fleet("penalize", "p4", Map.of(TokenBucketConstants.PENALTY, 1500));
        assertThat(header(millis, TokenBucketConstants.WAIT_ESTIMATE)).isBetween(1_000L, 1_500L);
    }

    @Test
    void badOperationOrPenaltyHeadersFailNamingThem() {
        assertThat(fleet("steal", "p1", Map.of()).getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(TokenBucketConstants.OPERATION).hasMessageContaining("'steal'")
                .hasMessageContaining("rate, release");
        assertThat(fleet("penalize", "p1", Map.of()).getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(TokenBucketConstants.PENALTY).hasMessageContaining("'null'");
        assertThat(fleet("penalize", "p1", Map.of(TokenBucketConstants.PENALTY, "soon")).getException())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'soon'");
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, " , ")).getException())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(TokenBucketConstants.CANDIDATES);
    }

    @Test
    void candidatesGoToTheFreestKeyWhichIsSetInTheKeyHeader() {
        fleet(null, "a", Map.of());
        fleet(null, "a", Map.of());
        fleet(null, "b", Map.of());
        // b and c both have a token now: c, which has more, is chosen
        Exchange chosen = send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, "a,b,c"));
        assertThat(chosen.getException()).isNull();
        assertThat(chosen.getMessage().getHeader("proxyId")).isEqualTo("c");
        Exchange next = send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, List.of("a", "b", "c")));
        assertThat(next.getMessage().getHeader("proxyId")).isEqualTo("b");
        assertThat(header(next, TokenBucketConstants.REMAINING)).isZero();
    }

    @Test
    void severalLimitsOnOneBucket() {
        assertThat(send("direct:multi", Map.of()).getException()).isNull();
        assertThat(send("direct:multi", Map.of()).getException()).isNull();
        Exchange third = send("direct:multi", Map.of());
        assertThat(third.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("capacity 2, refill 2 per 1000 ms; capacity 3, refill 3 per 3600000 ms");
    }

    @Test
    void keysGetTheirOwnLimitsFromTheOptionAndFromAResolverChangedAtRuntime() {
        assertThat(admittedInARow("gold-1")).isEqualTo(3);
        assertThat(admittedInARow("silver")).isEqualTo(2);
        assertThat(admittedInARow("bronze")).isEqualTo(1);
        Exchange before = send("direct:tiers", Map.of(TokenBucketConstants.KEY, "bronze",
                TokenBucketConstants.OPERATION, "peek"));
        assertThat(header(before, TokenBucketConstants.WAIT_ESTIMATE)).isBetween(3_500_000L, 3_600_000L);
        // the resolver is asked first, on every exchange: a promotion takes effect on the next one and keeps the
        // key's state, the time until full (an hour): under 5/h the next token comes in 12 minutes, not 60
        premium.put("bronze", "5/1h");
        Exchange after = send("direct:tiers", Map.of(TokenBucketConstants.KEY, "bronze",
                TokenBucketConstants.OPERATION, "peek"));
        assertThat(header(after, TokenBucketConstants.WAIT_ESTIMATE)).isBetween(700_000L, 720_000L);
        premium.put("gold-9", "1/1h");
        assertThat(admittedInARow("gold-9")).as("the resolver wins over keyLimits").isEqualTo(1);
    }

    private int admittedInARow(String key) {
        int admitted = 0;
        while (send("direct:tiers", Map.of(TokenBucketConstants.KEY, key)).getException() == null) {
            admitted++;
            assertThat(admitted).isLessThan(100);
        }
        return admitted;
    }
}
