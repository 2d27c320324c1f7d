package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Candidate groups through the endpoint: header {@code CamelTokenBucketCandidates} whose entries are lists, each a
 * candidate (a proxy) and the keys charged with it (its (proxy, host) pair), together with the all-of keys (the
 * host), on one endpoint that gives proxies, pairs and hosts limits of their own (keyLimits), with only the pairs
 * adapting (adaptiveKeys).
 */
class TokenBucketCandidateGroupsTest extends TokenBucketTestSupport {

    /** Proxies 2 an hour, pairs 1, hosts 3; reject mode. */
    private static final String FLEET = "tokenbucket:fleet?keyHeader=proxyId&limits=2/1h"
            + "&keyLimits=pair:*=1/1h;host:*=3/1h&mode=reject";
    /** Delay mode: a proxy 1 per 5 minutes, a pair 1 per 5 minutes, a host 10 per 10 minutes. */
    private static final String SLOW = "tokenbucket:slowfleet?keyHeader=proxyId&limits=1/5m"
            + "&keyLimits=host:*=10/10m";
    /** Every key 10 a second; only the pairs adapt. */
    private static final String AIMD = "tokenbucket:aimd?keyHeader=proxyId&limits=10/1s&adaptive=true"
            + "&adaptiveKeys=pair:*";

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:fleet").to(FLEET);
                from("direct:slow").routeId("slowGroups").to(SLOW);
                from("direct:peekSlow").to(SLOW);
                from("direct:aimd").to(AIMD);
            }
        };
    }

    /** Proxies p1 and p2, each with its pair for {@code host}, and the host as the all-of key. */
    private Exchange scrape(String uri, String host) {
        return send(uri, Map.of(TokenBucketConstants.CANDIDATES, List.of(List.of("p1", "pair:p1:" + host),
                List.of("p2", "pair:p2:" + host)), TokenBucketConstants.ALL_OF, "host:" + host));
    }

    private long remaining(String uri, String key) {
        return send(uri, Map.of("proxyId", key, TokenBucketConstants.OPERATION, "peek")).getMessage()
                .getHeader(TokenBucketConstants.REMAINING, Long.class);
    }

    @Test
    void theFreestGroupIsChosenNamedAndChargedWithTheHostAndNothingElseIs() {
        // p1's pair for host a is used up: p2 is chosen although p1 has as many tokens
        assertThat(send("direct:fleet", Map.of("proxyId", "pair:p1:a")).getException()).isNull();
        Exchange chosen = scrape("direct:fleet", "a");
        assertThat(chosen.getException()).isNull();
        assertThat(chosen.getMessage().getHeader("proxyId")).isEqualTo("p2");
        assertThat(chosen.getMessage().getHeader(TokenBucketConstants.REMAINING)).as("p2's pair has none left")
                .isEqualTo(0L);
        assertThat(remaining("direct:fleet", "p2")).isEqualTo(1);
        assertThat(remaining("direct:fleet", "host:a")).isEqualTo(2);
        assertThat(remaining("direct:fleet", "p1")).as("p1 untouched").isEqualTo(2);
        // both pairs used up for host a: refused, naming the keys, nothing charged
        Exchange refused = scrape("direct:fleet", "a");
        assertThat(refused.getException()).isInstanceOf(TokenBucketRejectedException.class)
                .hasMessageContaining("host:a");
        assertThat(remaining("direct:fleet", "host:a")).isEqualTo(2);
        assertThat(remaining("direct:fleet", "p1")).isEqualTo(2);
        // for another host both pairs are fresh: each group's fewest tokens are its pair's one, so the first wins
        Exchange other = scrape("direct:fleet", "b");
        assertThat(other.getMessage().getHeader("proxyId")).isEqualTo("p1");
        // a plain candidate beside groups is a group of one
        Exchange mixed = send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES,
                List.of("p3", List.of("p4", "pair:p4:c"))));
        assertThat(mixed.getMessage().getHeader("proxyId")).isEqualTo("p3");
    }

    @Test
    void aRefundOfTheChosenGroupIsTheRefundOfEachOfItsKeys() {
        Exchange chosen = scrape("direct:fleet", "r");
        assertThat(chosen.getMessage().getHeader("proxyId")).isEqualTo("p1");
        // the route's own refund names the keys charged: the chosen proxy, its pair and the host
        Exchange refund = send("direct:fleet", Map.of("proxyId", "p1", TokenBucketConstants.ALL_OF,
                List.of("pair:p1:r", "host:r"), TokenBucketConstants.OPERATION, "refund"));
        assertThat(refund.getException()).isNull();
        assertThat(remaining("direct:fleet", "pair:p1:r")).isEqualTo(1);
        assertThat(remaining("direct:fleet", "host:r")).isEqualTo(3);
        assertThat(remaining("direct:fleet", "p1")).isEqualTo(2);
    }

    @Test
    void anExchangeAbandonedWhenItsRouteStopsGivesBackToItsGroupAndTheHost() throws Exception {
        send("direct:slow", Map.of("proxyId", "p1"));
        send("direct:slow", Map.of("proxyId", "p2")); // both proxies: the next tokens in 5 minutes
        Sent waiting = sendAsync("direct:slow", 1, Map.of(TokenBucketConstants.CANDIDATES,
                List.of(List.of("p1", "pair:p1:z"), List.of("p2", "pair:p2:z")), TokenBucketConstants.ALL_OF,
                "host:z"));
        // p1's group is chosen (the first of equals) and charged at its release 5 minutes ahead
        assertThat(remaining("direct:peekSlow", "pair:p1:z")).isZero();
        assertThat(remaining("direct:peekSlow", "pair:p2:z")).as("the other group untouched").isEqualTo(1);
        assertThat(remaining("direct:peekSlow", "host:z")).isEqualTo(4);
        context.getShutdownStrategy().setTimeout(1);
        context.getRouteController().stopRoute("slowGroups");
        assertThat(waiting.done().await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(waiting.exchanges().get(0).getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("tokens were refunded");
        // the pair's token is back (its 5 minutes held for the release are not: see BucketMath), the host's too
        assertThat(send("direct:peekSlow", Map.of("proxyId", "pair:p1:z", TokenBucketConstants.OPERATION, "peek"))
                .getMessage().getHeader(TokenBucketConstants.WAIT_ESTIMATE, Long.class))
                .isBetween(TimeUnit.MINUTES.toMillis(5) - 5000, TimeUnit.MINUTES.toMillis(5));
        assertThat(remaining("direct:peekSlow", "host:z")).isEqualTo(5);
    }

    @Test
    void aBadGroupFailsNamingTheHeaderAndTheValueAndConsumesNothing() {
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, List.of(List.of(" ", "pair:x"))))
                .getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(TokenBucketConstants.CANDIDATES).hasMessageContaining("must not be blank")
                .hasMessageContaining("pair:x");
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, List.of(List.of())))
                .getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must start with its candidate key");
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES,
                List.of(List.of("q1", "pair:q"), List.of("q2", "pair:q")))).getException())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'pair:q' is named twice");
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, List.of(List.of("q1", "host:q")),
                TokenBucketConstants.ALL_OF, "host:q")).getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'host:q'").hasMessageContaining("also a candidate");
        // a list in a group is no key: its text "[pair:q1, x]" would be a bucket of its own, the pair never charged
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES,
                List.of(List.of("q1", List.of("pair:q1", "x"))))).getException())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(TokenBucketConstants.CANDIDATES)
                .hasMessageContaining("a group's keys must be text, not a list");
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES,
                java.util.Collections.singletonList(new Object[] {"q1", new String[] {"pair:q1"}}))).getException())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("a group's keys must be text, not a list");
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES,
                List.of(java.util.Arrays.asList("q1", null)))).getException())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must not be blank");
        assertThat(remaining("direct:fleet", "[pair:q1, x]")).as("no bucket of a list's text").isEqualTo(2);
        // a group of more than maxAllOf (8) keys besides its candidate, read no further
        List<String> big = new java.util.ArrayList<>(List.of("q1"));
        for (int i = 0; i < 10_000; i++) {
            big.add("pair:q1:" + i);
        }
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, List.of(big))).getException())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most maxAllOf 8");
        assertThat(remaining("direct:fleet", "q1")).as("nothing charged").isEqualTo(2);
        assertThat(remaining("direct:fleet", "q2")).isEqualTo(2);
        assertThat(remaining("direct:fleet", "pair:q")).isEqualTo(1);
    }

    /**
     * Only distinct keys count towards maxCandidates and maxAllOf, so a list of repeated or blank entries is bounded
     * by how many entries it has: an endless one fails naming its header instead of being read for ever.
     */
    @Test
    void anEndlessListOfRepeatedOrBlankKeysFailsNamingTheHeader() {
        Iterable<String> repeated = () -> java.util.stream.Stream.generate(() -> "p1").iterator();
        Iterable<String> blank = () -> java.util.stream.Stream.generate(() -> " ").iterator();
        for (Iterable<String> endless : List.of(repeated, blank)) {
            assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, endless)).getException())
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("Header " + TokenBucketConstants.CANDIDATES + " holds more than 16384 entries (blank"
                            + " and repeated keys included); it is read no further");
            assertThat(send("direct:fleet", Map.of("proxyId", "p1", TokenBucketConstants.ALL_OF, endless))
                    .getException()).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("Header " + TokenBucketConstants.ALL_OF + " holds more than 16384");
        }
        Iterable<Object> groups = () -> java.util.stream.Stream.<Object>generate(() -> List.of("p1", "pair:p1"))
                .iterator();
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, List.of("p2", groups)))
                .getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("a group's keys must be text, not a list");
        String commas = ",".repeat(20_000);
        assertThat(send("direct:fleet", Map.of(TokenBucketConstants.CANDIDATES, commas)).getException())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("more than 16384 entries");
        assertThat(remaining("direct:fleet", "p1")).as("nothing charged").isEqualTo(2);
    }

    @Test
    void withAdaptiveKeysOnlyThePairsAdaptAndTheRestKeepTheirRate() {
        Exchange cut = send("direct:aimd", Map.of("proxyId", "pair:p1:a", TokenBucketConstants.OPERATION,
                "throttled"));
        assertThat(cut.getException()).isNull();
        assertThat(cut.getMessage().getHeader(TokenBucketConstants.RATE)).isEqualTo(0.5);
        Exchange proxy = send("direct:aimd", Map.of("proxyId", "p1", TokenBucketConstants.OPERATION, "throttled"));
        assertThat(proxy.getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key 'p1' a fixed rate").hasMessageContaining("adaptiveKeys");
        assertThat(send("direct:aimd", Map.of("proxyId", "p1", TokenBucketConstants.OPERATION, "rate"))
                .getMessage().getHeader(TokenBucketConstants.RATE)).isEqualTo(1.0);
        // the group of p1 waits for its cut pair (emptied at 5 a second: 200 ms), p2's does not: p2 is chosen
        Exchange chosen = send("direct:aimd", Map.of(TokenBucketConstants.CANDIDATES,
                List.of(List.of("p1", "pair:p1:a"), List.of("p2", "pair:p2:a")), TokenBucketConstants.ALL_OF,
                "host:a"));
        assertThat(chosen.getMessage().getHeader("proxyId")).isEqualTo("p2");
    }

    @Test
    void adaptiveKeysWithoutAdaptiveFailsAtStartNamingTheOption() throws Exception {
        assertThat(startFailure("tokenbucket:x?adaptiveKeys=pair:*"))
                .hasMessageContaining("adaptiveKeys needs adaptive=true").hasMessageContaining("'pair:*'");
    }
}
