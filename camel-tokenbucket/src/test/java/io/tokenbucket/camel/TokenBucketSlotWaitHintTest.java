package io.tokenbucket.camel;

import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.producer.TokenBucketLimitSource;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A refusal for want of an in-flight slot says when a slot may be free, so a 429 built from it never answers
 * {@code Retry-After: 0}: 1000 ms before any slot of the endpoint was given back, then the typical time its exchanges
 * hold their slots (never more than the hold the test measured around the one exchange that held one), at least
 * 1 ms; a peek of a key whose slots are all held says the same. On the local store and on a real redis-server.
 */
class TokenBucketSlotWaitHintTest extends TokenBucketRedisTestSupport {

    private final TokenBucketGates gates = new TokenBucketGates();

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:local").to(uri("local")).process(gates);
                from("direct:redis").to(uri("redis")).process(gates);
                from("direct:bounded").to("tokenbucket:bounded?maxInFlight=1&maxWait=50ms").process(gates);
                // the reference's 429 recipe
                from("direct:api").errorHandler(defaultErrorHandler())
                        .onException(TokenBucketRejectedException.class).handled(true)
                            .setHeader(Exchange.HTTP_RESPONSE_CODE, constant(429))
                            .setHeader("Retry-After", simple("${exception.retryAfterSeconds}")).end()
                        .to("tokenbucket:api?keyHeader=clientId&maxInFlight=1&mode=reject").process(gates);
            }
        };
    }

    private static String uri(String store) {
        return "tokenbucket:hint-" + store + "?maxInFlight=1&mode=reject"
                + (store.equals("redis") ? "&store=redis&redisUri=" + redis.uri() : "");
    }

    @AfterEach
    void openGates() {
        gates.openAll();
    }

    private Exchange peek(String store) {
        return template.request(uri(store), e -> e.getMessage().setHeader(TokenBucketConstants.OPERATION, "peek"));
    }

    @ParameterizedTest(name = "store={0}")
    @ValueSource(strings = {"local", "redis"})
    void aSlotRefusalSaysWhenASlotMayBeFreeNeverZero(String store) throws Exception {
        String route = "direct:" + store;
        gates.close("first");
        long before = System.nanoTime();
        Future<Exchange> first = template.asyncSend(route, e -> e.getMessage().setBody("first"));
        await().atMost(10, TimeUnit.SECONDS).until(() -> peek(store).getMessage()
                .getHeader(TokenBucketConstants.REMAINING, Long.class) == 0);

        // no slot given back yet on this endpoint: the documented 1 s
        TokenBucketRejectedException refused = refusal(route);
        assertThat(refused.getWaitMillis()).isEqualTo(TokenBucketStatistics.UNKNOWN_SLOT_WAIT_MILLIS);
        assertThat(refused.getRetryAfterSeconds()).isEqualTo(1);
        assertThat(refused).hasMessageContaining("no in-flight slot free").hasMessageContaining("retry in about 1000 ms");
        assertThat(peek(store).getMessage().getHeader(TokenBucketConstants.WAIT_ESTIMATE, Long.class))
                .isEqualTo(TokenBucketStatistics.UNKNOWN_SLOT_WAIT_MILLIS);

        gates.open("first");
        assertThat(first.get(10, TimeUnit.SECONDS).getException()).isNull();
        await().atMost(10, TimeUnit.SECONDS).until(() -> peek(store).getMessage()
                .getHeader(TokenBucketConstants.REMAINING, Long.class) == 1);
        long heldAtMostMillis = TokenBucketLimitSource.ceilMillis(System.nanoTime() - before);

        gates.close("second");
        Future<Exchange> second = template.asyncSend(route, e -> e.getMessage().setBody("second"));
        await().atMost(10, TimeUnit.SECONDS).until(() -> peek(store).getMessage()
                .getHeader(TokenBucketConstants.REMAINING, Long.class) == 0);
        // one slot given back so far: its hold time, which the test's own measure around it bounds
        TokenBucketRejectedException hinted = refusal(route);
        assertThat(hinted.getWaitMillis()).isBetween(TokenBucketStatistics.MIN_SLOT_WAIT_MILLIS, heldAtMostMillis);
        assertThat(hinted.getRetryAfterSeconds()).isGreaterThanOrEqualTo(1);
        assertThat(peek(store).getMessage().getHeader(TokenBucketConstants.WAIT_ESTIMATE, Long.class))
                .isEqualTo(hinted.getWaitMillis());
        gates.open("second");
        assertThat(second.get(10, TimeUnit.SECONDS).getException()).isNull();
    }

    private TokenBucketRejectedException refusal(String route) {
        Exchange refused = template.request(route, e -> e.getMessage().setBody("refused"));
        assertThat(refused.getException()).isInstanceOf(TokenBucketRejectedException.class);
        return (TokenBucketRejectedException) refused.getException();
    }

    @Test
    void aWaiterWhoseMaxWaitPassesIsToldWhenASlotMayBeFree() throws Exception {
        gates.close("holder");
        Future<Exchange> holder = template.asyncSend("direct:bounded", e -> e.getMessage().setBody("holder"));
        await().atMost(10, TimeUnit.SECONDS).until(() -> gates.order().contains("holder"));
        Exchange late = template.request("direct:bounded", e -> e.getMessage().setBody("late"));
        assertThat(late.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("no in-flight slot came free within maxWait 50 ms");
        assertThat(((TokenBucketRejectedException) late.getException()).getWaitMillis())
                .isEqualTo(TokenBucketStatistics.UNKNOWN_SLOT_WAIT_MILLIS);
        gates.open("holder");
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
    }

    @Test
    void theReferences429RecipeAnswersARetryAfterOfAtLeastOneSecondForASlot() throws Exception {
        gates.close("holder");
        Future<Exchange> holder = template.asyncSend("direct:api", e -> {
            e.getMessage().setBody("holder");
            e.getMessage().setHeader("clientId", "c1");
        });
        await().atMost(10, TimeUnit.SECONDS).until(() -> gates.order().contains("holder"));
        Exchange answered = template.request("direct:api", e -> {
            e.getMessage().setBody("other");
            e.getMessage().setHeader("clientId", "c1");
        });
        assertThat(answered.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE)).isEqualTo(429);
        assertThat(answered.getMessage().getHeader("Retry-After", String.class)).isEqualTo("1");
        gates.open("holder");
        assertThat(holder.get(10, TimeUnit.SECONDS).getException()).isNull();
    }

    /** The hint itself, with plain numbers: the hold times' moving mean, bounds and saturation. */
    @Test
    void theHintIsTheMovingMeanOfTheHoldTimesAtLeastOneMillisecondAndTheTokensWaitWhenLonger() {
        long ms = TimeUnit.MILLISECONDS.toNanos(1);
        TokenBucketStatistics statistics = new TokenBucketStatistics();
        assertThat(statistics.slotWaitNanos(0)).isEqualTo(1000 * ms);
        assertThat(statistics.slotWaitNanos(3000 * ms)).as("the tokens' wait when longer").isEqualTo(3000 * ms);
        statistics.slotHeld(0);
        assertThat(statistics.slotWaitNanos(0)).as("never below 1 ms").isEqualTo(ms);
        statistics.slotHeld(-5 * ms); // a clock that stepped back counts as 0
        assertThat(statistics.slotWaitNanos(0)).isEqualTo(ms);
        statistics.slotHeld(800 * ms);
        assertThat(statistics.slotWaitNanos(0)).as("an eighth of the way to 800 ms").isEqualTo(100 * ms);
        statistics.slotHeld(Long.MAX_VALUE);
        assertThat(statistics.slotWaitNanos(0)).isEqualTo(100 * ms + (Long.MAX_VALUE - 100 * ms) / 8);
        assertThat(statistics.slotWaitNanos(Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
        assertThat(TokenBucketLimitSource.ceilMillis(statistics.slotWaitNanos(Long.MAX_VALUE))).isPositive();
    }
}
