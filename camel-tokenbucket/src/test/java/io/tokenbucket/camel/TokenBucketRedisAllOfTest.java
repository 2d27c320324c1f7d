package io.tokenbucket.camel;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several keys in one acquire on store=redis: one script call charges the proxy's and the host's buckets, the
 * answer comes back on Lettuce's thread and the exchange waits or continues on the worker pool, an abandoned one
 * gives its tokens back to both keys in Redis, and with Redis down the {@code local} policy applies the same
 * all-of semantics in memory.
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketRedisAllOfTest extends TokenBucketRedisTestSupport {

    private String uri(String name, String more) {
        return "tokenbucket:" + name + "?store=redis&redisUri=" + redis.uri() + "&keyHeader=proxyId&limits=1/5m"
                + "&keyLimits=host-*=10/10m&storeTimeout=500ms" + more;
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:fetch").routeId("fetch").to(uri("fetch", "")).to("mock:fetch");
                from("direct:peek").to(uri("fetch", ""));
                from("direct:local").to(uri("local", "&mode=reject&onStoreError=local"));
                from("direct:groups").to(uri("groups", "&mode=reject&adaptive=true&adaptiveKeys=pair-*"));
            }
        };
    }

    private long peek(String key, String header) {
        return send("direct:peek", Map.of("proxyId", key, TokenBucketConstants.OPERATION, "peek")).getMessage()
                .getHeader(header, Long.class);
    }

    /** Proxies with their (proxy, host) pairs as candidate groups and the host as all-of key, the pairs adaptive. */
    @Test
    void candidateGroupsWithAdaptivePairsAreDecidedInOneScriptCall() {
        Exchange cut = send("direct:groups", Map.of("proxyId", "pair-p1-a", TokenBucketConstants.OPERATION,
                "throttled"));
        assertThat(cut.getMessage().getHeader(TokenBucketConstants.RATE)).isEqualTo(0.5);
        Map<String, Object> scrape = Map.of(TokenBucketConstants.CANDIDATES, List.of(
                List.of("p1", "pair-p1-a"), List.of("p2", "pair-p2-a")),
                TokenBucketConstants.ALL_OF, "host-a");
        Exchange chosen = send("direct:groups", scrape);
        assertThat(chosen.getException()).isNull();
        assertThat(chosen.getMessage().getHeader("proxyId")).as("p1's pair was cut and emptied").isEqualTo("p2");
        Map<String, Object> peek = new HashMap<>(Map.of(TokenBucketConstants.OPERATION, "peek"));
        peek.put("proxyId", "pair-p2-a");
        assertThat(send("direct:groups", peek).getMessage().getHeader(TokenBucketConstants.REMAINING)).isEqualTo(0L);
        peek.put("proxyId", "p1");
        assertThat(send("direct:groups", peek).getMessage().getHeader(TokenBucketConstants.REMAINING))
                .as("p1 untouched").isEqualTo(1L);
        // both pairs empty now: refused, the host keeps its 9 tokens
        assertThat(send("direct:groups", scrape).getException()).isInstanceOf(TokenBucketRejectedException.class);
        peek.put("proxyId", "host-a");
        assertThat(send("direct:groups", peek).getMessage().getHeader(TokenBucketConstants.REMAINING)).isEqualTo(9L);
    }

    @Test
    void oneScriptChargesBothKeysAndAnAbandonedWaiterGivesBackToBoth() throws Exception {
        assertThat(send("direct:fetch", Map.of("proxyId", "p1", TokenBucketConstants.ALL_OF, "host-a"))
                .getException()).isNull();
        assertThat(peek("host-a", TokenBucketConstants.REMAINING)).isEqualTo(9);
        // p1 is used for 5 minutes: this one waits, and takes host-a's token at its release (6 minutes owed: the
        // minute of the first exchange falls within the 5 minutes before the release)
        Sent waiting = sendAsync("direct:fetch", 1, Map.of("proxyId", "p1", TokenBucketConstants.ALL_OF, "host-a"));
        org.awaitility.Awaitility.await().atMost(10, TimeUnit.SECONDS)
                .until(() -> peek("host-a", TokenBucketConstants.REMAINING) == 4);
        assertThat(waiting.done().getCount()).as("still waiting").isOne();
        context.getShutdownStrategy().setTimeout(1);
        context.getRouteController().stopRoute("fetch");
        assertThat(waiting.done().await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(waiting.exchanges().get(0).getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("tokens were refunded");
        org.awaitility.Awaitility.await().atMost(10, TimeUnit.SECONDS)
                .until(() -> peek("host-a", TokenBucketConstants.REMAINING) == 5);
        assertThat(peek("p1", TokenBucketConstants.WAIT_ESTIMATE)).isBetween(TimeUnit.MINUTES.toMillis(5) - 5000,
                TimeUnit.MINUTES.toMillis(5));
    }

    @Test
    void withRedisDownTheLocalPolicyKeepsAllOrNone() {
        redis.stop();
        try {
            assertThat(send("direct:local", Map.of("proxyId", "p1", TokenBucketConstants.ALL_OF, "host-b"))
                    .getException()).isNull();
            // p1 is used up: refused, and host-b keeps its 9 tokens for another proxy
            assertThat(send("direct:local", Map.of("proxyId", "p1", TokenBucketConstants.ALL_OF, "host-b"))
                    .getException()).isInstanceOf(TokenBucketRejectedException.class)
                    .hasMessageContaining("with all of [host-b]");
            Exchange other = send("direct:local", Map.of("proxyId", "p2", TokenBucketConstants.ALL_OF, "host-b"));
            assertThat(other.getException()).isNull();
            assertThat(other.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class)).isZero(); // p2's
            TokenBucketEndpoint endpoint = context.getEndpoint(uri("local", "&mode=reject&onStoreError=local"),
                    TokenBucketEndpoint.class);
            assertThat(endpoint.getFallbackCount()).isPositive();
        } finally {
            redis.start();
        }
    }
}
