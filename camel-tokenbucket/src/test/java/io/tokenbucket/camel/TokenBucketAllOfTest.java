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
 * Several keys in one acquire through the endpoint: header {@code CamelTokenBucketAllOf} and the {@code allOf}
 * option, each key with its own limits (keyLimits), combined with candidates, bounded, and given back to every key
 * by a refund and by an exchange abandoned when its route stops.
 */
class TokenBucketAllOfTest extends TokenBucketTestSupport {

    /** Delay mode: a proxy has 1 token per 5 minutes, a host 10 per 10 minutes. */
    private static final String SLOW = "tokenbucket:slow?keyHeader=proxyId&limits=1/5m&keyLimits=host-*=10/10m";

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler()); // rejections are looked at, not handled
                // a proxy has 1 token an hour, a host 2
                from("direct:fetch").to("tokenbucket:fetch?keyHeader=proxyId&limits=1/1h&keyLimits=host-*=2/1h"
                        + "&mode=reject&maxAllOf=2");
                from("direct:global").to("tokenbucket:global?limits=2/1h&allOf=everyone&keyLimits=everyone=3/1h"
                        + "&mode=reject");
                from("direct:slow").routeId("slow").to(SLOW).to("mock:slow");
                from("direct:peekSlow").to(SLOW); // the same endpoint, on a route that is not stopped
            }
        };
    }

    private Exchange fetch(String proxy, Object allOf) {
        Map<String, Object> headers = new HashMap<>();
        headers.put("proxyId", proxy);
        if (allOf != null) {
            headers.put(TokenBucketConstants.ALL_OF, allOf);
        }
        return send("direct:fetch", headers);
    }

    private static long header(Exchange e, String name) {
        return e.getMessage().getHeader(name, Long.class);
    }

    @Test
    void everyKeyIsChargedOrNoneAndEachKeepsItsOwnLimit() {
        Exchange first = fetch("p1", "host-a");
        assertThat(first.getException()).isNull();
        assertThat(header(first, TokenBucketConstants.REMAINING)).as("the fewest of both keys").isZero();
        assertThat(fetch("p2", List.of("host-a")).getException()).isNull();
        // host-a had 2 tokens: the third proxy is refused on its account, and keeps its own token
        Exchange refused = fetch("p3", "host-a");
        assertThat(refused.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("key 'p3' with all of [host-a]");
        assertThat(fetch("p3", null).getException()).as("p3's token was not taken").isNull();
        // a proxy that is used up keeps another host's tokens untouched
        assertThat(fetch("p1", "host-b").getException()).isInstanceOf(TokenBucketRejectedException.class);
        assertThat(fetch("p4", "host-b").getException()).isNull();
        assertThat(header(fetch("p5", "host-b"), TokenBucketConstants.REMAINING)).isZero();
    }

    @Test
    void withCandidatesTheFreestProxyThatTheHostAllowsIsChosenAndNamed() {
        fetch("p1", null);
        Exchange chosen = send("direct:fetch", Map.of(TokenBucketConstants.CANDIDATES, "p1,p2,p3",
                TokenBucketConstants.ALL_OF, "host-c"));
        assertThat(chosen.getException()).isNull();
        assertThat(chosen.getMessage().getHeader("proxyId")).isEqualTo("p2");
        Exchange next = send("direct:fetch", Map.of(TokenBucketConstants.CANDIDATES, "p1,p2,p3",
                TokenBucketConstants.ALL_OF, "host-c"));
        assertThat(next.getMessage().getHeader("proxyId")).isEqualTo("p3");
        // host-c is used up now: refused, although no proxy would have been free either
        Exchange refused = send("direct:fetch", Map.of(TokenBucketConstants.CANDIDATES, "p4,p5",
                TokenBucketConstants.ALL_OF, "host-c"));
        assertThat(refused.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("with all of [host-c]");
        assertThat(fetch("p4", null).getException()).as("the candidates keep their tokens").isNull();
    }

    @Test
    void theHeaderIsBoundedAndABadOneFailsNamingItAndConsumesNothing() {
        assertThat(fetch("p1", "host-a,host-b,host-c").getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(TokenBucketConstants.ALL_OF).hasMessageContaining("maxAllOf 2")
                .hasMessageContaining("'host-a,host-b,host-c'");
        assertThat(send("direct:fetch", Map.of(TokenBucketConstants.CANDIDATES, "p1,p2",
                TokenBucketConstants.ALL_OF, "p2")).getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(TokenBucketConstants.ALL_OF).hasMessageContaining("'p2'")
                .hasMessageContaining("also a candidate");
        assertThat(send("direct:fetch", Map.of("proxyId", "p1", TokenBucketConstants.ALL_OF, "host-a",
                TokenBucketConstants.COST, 2)).getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(TokenBucketConstants.COST).hasMessageContaining("capacity 1");
        // duplicates, blanks and the exchange's own key count once: two keys, within maxAllOf
        Exchange dedup = fetch("p1", List.of("host-a", " host-a ", "", "p1", "host-b"));
        assertThat(dedup.getException()).isNull();
        assertThat(header(fetch("p9", "host-a"), TokenBucketConstants.REMAINING)).as("host-a charged once").isZero();
        // a key of any length is stored bounded, with its own limits decided on the key as sent
        String longHost = "host-" + "x".repeat(10_000);
        assertThat(fetch("p2", longHost).getException()).isNull();
        assertThat(fetch("p3", longHost).getException()).isNull();
        assertThat(fetch("p4", longHost).getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("characters)"); // the message shows the key shortened
        // empty: no all-of keys
        assertThat(fetch("p5", " , ").getException()).isNull();
    }

    @Test
    void theOptionChargesItsKeysOnEveryExchangeUnlessTheHeaderReplacesThem() {
        Map<String, Object> a = Map.of(TokenBucketConstants.KEY, "a");
        assertThat(send("direct:global", a).getException()).isNull();
        assertThat(send("direct:global", a).getException()).isNull();
        assertThat(send("direct:global", Map.of(TokenBucketConstants.KEY, "b")).getException()).isNull();
        // everyone (3 an hour) is used up
        assertThat(send("direct:global", Map.of(TokenBucketConstants.KEY, "c")).getException())
                .isInstanceOf(TokenBucketRejectedException.class).hasMessageContaining("with all of [everyone]");
        assertThat(send("direct:global", Map.of(TokenBucketConstants.KEY, "c", TokenBucketConstants.ALL_OF, ""))
                .getException()).as("an empty header: no all-of keys").isNull();
    }

    /** A candidate that the allOf option names too: the error names the option, not a header the exchange lacks. */
    @Test
    void aCandidateThatTheOptionAlsoChargesFailsNamingTheOption() {
        assertThat(send("direct:global", Map.of(TokenBucketConstants.CANDIDATES, "a,everyone")).getException())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Option allOf names key 'everyone', which is also a candidate in "
                        + TokenBucketConstants.CANDIDATES);
    }

    @Test
    void theOptionIsBoundedAtStartup() throws Exception {
        assertThat(startFailure("tokenbucket:x?allOf=a,b,c&maxAllOf=2"))
                .hasMessageContaining("Option allOf names more than maxAllOf 2").hasMessageContaining("'a,b,c'");
    }

    @Test
    void aRefundGivesTheTokensBackToEveryKey() {
        assertThat(fetch("p1", "host-r").getException()).isNull();
        Exchange refund = send("direct:fetch", Map.of("proxyId", "p1", TokenBucketConstants.ALL_OF, "host-r",
                TokenBucketConstants.OPERATION, "refund"));
        assertThat(refund.getException()).isNull();
        assertThat(header(refund, TokenBucketConstants.REMAINING)).as("the fewest of both, full again").isEqualTo(1);
        Exchange peekHost = send("direct:fetch", Map.of("proxyId", "host-r", TokenBucketConstants.OPERATION, "peek"));
        assertThat(header(peekHost, TokenBucketConstants.REMAINING)).isEqualTo(2);
        assertThat(fetch("p1", null).getException()).as("p1 has its token back").isNull();
    }

    @Test
    void anExchangeAbandonedWhenItsRouteStopsGivesItsTokensBackToEveryKey() throws Exception {
        send("direct:slow", Map.of("proxyId", "p1")); // p1's token: the next comes in 5 minutes
        Sent waiting = sendAsync("direct:slow", 1, Map.of("proxyId", "p1", TokenBucketConstants.ALL_OF, "host-z"));
        // the host's token is taken at the release, 5 minutes ahead: 6 minutes owed of its 10, 4 tokens left
        assertThat(peek("host-z", TokenBucketConstants.REMAINING)).isEqualTo(4);
        assertThat(peek("p1", TokenBucketConstants.WAIT_ESTIMATE)).isBetween(TimeUnit.MINUTES.toMillis(10) - 5000,
                TimeUnit.MINUTES.toMillis(10));
        context.getShutdownStrategy().setTimeout(1);
        context.getRouteController().stopRoute("slow");
        assertThat(waiting.done().await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(waiting.exchanges().get(0).getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("tokens were refunded");
        // one token back on each key: the host has 5 (the 5 minutes it was held for the release are not given
        // back, see BucketMath), the proxy's next token is 5 minutes away again
        assertThat(peek("host-z", TokenBucketConstants.REMAINING)).isEqualTo(5);
        assertThat(peek("p1", TokenBucketConstants.WAIT_ESTIMATE)).isBetween(TimeUnit.MINUTES.toMillis(5) - 5000,
                TimeUnit.MINUTES.toMillis(5));
    }

    private long peek(String key, String header) {
        return header(send("direct:peekSlow", Map.of("proxyId", key, TokenBucketConstants.OPERATION, "peek")), header);
    }
}
