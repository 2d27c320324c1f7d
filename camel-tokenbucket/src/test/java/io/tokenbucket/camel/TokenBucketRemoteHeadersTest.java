package io.tokenbucket.camel;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A JMS message carrying the component's headers, in casings camel-jms's header filter lets through, changes nothing:
 * not its operation, cost, key, candidates, all-of keys or penalty. A route that sets such a header itself (Java or YAML, and
 * through a split), and a {@code ProducerTemplate} sending to a local endpoint, are honoured. With the component's
 * {@code allowRemoteHeaders=true} the same message does change its operation: the test can fail.
 */
class TokenBucketRemoteHeadersTest extends TokenBucketTestSupport {

    private static final String FORGE = "tokenbucket:forge?capacity=2&refillPeriod=1h&mode=check&keyHeader=k";
    private static final String DEFAULT_KEY = "tokenbucket:forgeKey?capacity=100&refillPeriod=1h&mode=check";
    private static final String OWN = "tokenbucket:own?capacity=2&refillPeriod=1h&mode=check&keyHeader=k";
    private static final String YAML = """
            - route:
                from:
                  uri: jms:queue:ownYaml
                  steps:
                    - setHeader:
                        name: CamelTokenBucketCost
                        constant: "2"
                    - to: %s
                    - to: mock:ownYaml
            """.formatted(OWN);

    private static TokenBucketBroker broker;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = TokenBucketBroker.start();
    }

    @AfterAll
    static void stopBroker() throws Exception {
        broker.close();
    }

    @Override
    protected CamelContext createCamelContext() throws Exception {
        CamelContext context = super.createCamelContext();
        broker.addJms(context);
        return context;
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() throws Exception {
                from("jms:queue:forge").to(FORGE).to("mock:forge");
                from("jms:queue:forgeKey").to(DEFAULT_KEY).to("mock:forgeKey");
                // the route asks for a penalty and forgets its length: a forged one must not supply it
                from("jms:queue:forgePenalty").setHeader(TokenBucketConstants.OPERATION, constant("penalize"))
                        .doTry().to(FORGE).doCatch(IllegalArgumentException.class)
                        .setHeader("failed", simple("${exception.message}")).end().to("mock:forgePenalty");
                from("direct:local").to(FORGE).to("mock:local");
                from("jms:queue:own").setHeader(TokenBucketConstants.COST, constant(2)).to(OWN).to("mock:own");
                from("jms:queue:ownSplit").setHeader(TokenBucketConstants.COST, constant(2))
                        .split(body().tokenize(",")).setHeader("k", body()).to(OWN).to("mock:ownSplit");
                PluginHelper.getRoutesLoader(getContext()).loadRoutes(ResourceHelper.fromString("own.yaml", YAML));
            }
        };
    }

    /** Four casings of {@code header} that camel-jms's default filter (it drops Camel... and camel...) lets through. */
    private static List<String> casings(String header) {
        String rest = header.substring("Camel".length());
        StringBuilder alternating = new StringBuilder();
        for (int i = 0; i < header.length(); i++) {
            char c = header.charAt(i);
            alternating.append(i % 2 == 0 ? Character.toUpperCase(c) : Character.toLowerCase(c));
        }
        return List.of(header.toUpperCase(Locale.ROOT), "CAMEL" + rest, "cAMEL" + rest.toUpperCase(Locale.ROOT),
                alternating.toString());
    }

    private TokenBucketEndpoint endpoint(String uri) {
        return context.getEndpoint(uri, TokenBucketEndpoint.class);
    }

    @Test
    void forgedControlHeadersChangeNothing() throws Exception {
        Map<String, String> forged = Map.of(
                TokenBucketConstants.OPERATION, "refund",
                TokenBucketConstants.COST, "2",
                TokenBucketConstants.CANDIDATES, "victim-c1,victim-c2",
                TokenBucketConstants.ALL_OF, "victim-a");
        MockEndpoint mock = getMockEndpoint("mock:forge");
        mock.expectedMessageCount(forged.size() * 4);
        for (Map.Entry<String, String> header : forged.entrySet()) {
            for (String casing : casings(header.getKey())) {
                broker.send("forge", casing, Map.of(casing, header.getValue(), "k", "k-" + casing));
            }
        }
        MockEndpoint mockKey = getMockEndpoint("mock:forgeKey");
        mockKey.expectedMessageCount(4);
        for (String casing : casings(TokenBucketConstants.KEY)) {
            broker.send("forgeKey", casing, Map.of(casing, "victim-k"));
        }
        MockEndpoint mockPenalty = getMockEndpoint("mock:forgePenalty");
        mockPenalty.expectedMessageCount(4);
        for (String casing : casings(TokenBucketConstants.PENALTY)) {
            broker.send("forgePenalty", casing, Map.of(casing, "1h", "k", "p-" + casing));
        }
        MockEndpoint.assertIsSatisfied(10, TimeUnit.SECONDS, mock, mockKey, mockPenalty);

        for (Exchange e : mock.getReceivedExchanges()) {
            String casing = e.getMessage().getBody(String.class);
            // an acquire (not a refund) of one token (not 2) on its own key (no candidate chosen), in check mode
            assertThat(e.getMessage().getHeaders()).as(casing)
                    .containsEntry(TokenBucketConstants.ALLOWED, true)
                    .containsEntry(TokenBucketConstants.REMAINING, 1L)
                    .containsEntry("k", "k-" + casing)
                    .doesNotContainKey(casing);
        }
        for (String victim : List.of("victim-c1", "victim-c2", "victim-a")) {
            assertThat(endpoint(FORGE).peekKey(victim)).as(victim).startsWith("remaining=2,");
        }
        // the key header left at its default: the four went to the default key, not to the one they named
        assertThat(mockKey.getReceivedExchanges()).allSatisfy(e -> assertThat(e.getMessage().getHeaders())
                .containsEntry(TokenBucketConstants.ALLOWED, true));
        assertThat(endpoint(DEFAULT_KEY).peekKey(null)).startsWith("remaining=96,");
        assertThat(endpoint(DEFAULT_KEY).peekKey("victim-k")).startsWith("remaining=100,");
        for (Exchange e : mockPenalty.getReceivedExchanges()) {
            String casing = e.getMessage().getBody(String.class);
            assertThat(e.getMessage().getHeader("failed", String.class)).as(casing)
                    .contains(TokenBucketConstants.PENALTY);
            assertThat(endpoint(FORGE).peekKey("p-" + casing)).as(casing).isEqualTo("remaining=2, waitMillis=0");
        }
    }

    @Test
    void headersTheRouteSetsItselfAreHonoured() throws Exception {
        MockEndpoint own = getMockEndpoint("mock:own");
        MockEndpoint yaml = getMockEndpoint("mock:ownYaml");
        MockEndpoint split = getMockEndpoint("mock:ownSplit");
        own.expectedMessageCount(1);
        yaml.expectedMessageCount(1);
        split.expectedMessageCount(2);
        // a forged cost of 1 beside the route's own 2: the route's wins
        broker.send("own", "own", Map.of("k", "java", "CAMELTOKENBUCKETCOST", "1"));
        broker.send("ownYaml", "yaml", Map.of("k", "yaml"));
        broker.send("ownSplit", "split-a,split-b", Map.of());
        MockEndpoint.assertIsSatisfied(10, TimeUnit.SECONDS, own, yaml, split);
        for (MockEndpoint mock : List.of(own, yaml, split)) {
            assertThat(mock.getReceivedExchanges()).as(mock.getEndpointUri()).allSatisfy(e ->
                    assertThat(e.getMessage().getHeaders()).containsEntry(TokenBucketConstants.ALLOWED, true)
                            .containsEntry(TokenBucketConstants.REMAINING, 0L));
        }

        // a local endpoint is the application's own: a ProducerTemplate's headers count, in any casing
        Exchange local = template.request("direct:local", e -> {
            e.getMessage().setHeader("k", "local");
            e.getMessage().setHeader("CAMELTOKENBUCKETCOST", 2);
        });
        assertThat(local.getMessage().getHeader(TokenBucketConstants.REMAINING)).isEqualTo(0L);
        // and so are those of one it sends straight to the endpoint, which is no remote endpoint
        Exchange straight = template.request(FORGE, e -> {
            e.getMessage().setHeader("k", "straight");
            e.getMessage().setHeader("cAMELtOKENbUCKETcOST", 2);
        });
        assertThat(straight.getMessage().getHeader(TokenBucketConstants.REMAINING)).isEqualTo(0L);
        assertThat(endpoint(FORGE).isRemote()).isFalse();
    }

    @Test
    void withAllowRemoteHeadersAForgedOperationIsCarriedOut() throws Exception {
        try (CamelContext other = new DefaultCamelContext()) {
            broker.addJms(other);
            TokenBucketComponent component = new TokenBucketComponent();
            component.setAllowRemoteHeaders(true);
            other.addComponent("tokenbucket", component);
            other.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("jms:queue:allowed").to(FORGE).to("mock:allowed");
                }
            });
            other.start();
            MockEndpoint mock = other.getEndpoint("mock:allowed", MockEndpoint.class);
            mock.expectedMessageCount(1);
            broker.send("allowed", "refund", Map.of("CAMELTOKENBUCKETOPERATION", "refund", "k", "k1"));
            mock.assertIsSatisfied(10_000);
            // a refund, not an acquire: no CamelTokenBucketAllowed, and the bucket still full
            assertThat(mock.getReceivedExchanges().get(0).getMessage().getHeaders())
                    .doesNotContainKey(TokenBucketConstants.ALLOWED)
                    .containsEntry(TokenBucketConstants.REMAINING, 2L);
        }
    }
}
