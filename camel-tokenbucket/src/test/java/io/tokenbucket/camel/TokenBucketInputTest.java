package io.tokenbucket.camel;

import io.tokenbucket.camel.syntax.TokenBucketOptionText;
import org.apache.camel.Exchange;
import org.apache.camel.NoSuchHeaderException;
import org.apache.camel.ResolveEndpointFailedException;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.spi.EndpointUriFactory;
import org.apache.camel.spi.PropertyConfigurer;
import org.apache.camel.support.PluginHelper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Options and headers: bad ones fail with a message naming them and the value; the generated metadata is used. */
class TokenBucketInputTest extends TokenBucketTestSupport {

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler()); // the failures are what these tests look at
                from("direct:keyed").to("tokenbucket:keyed?capacity=3&refillPeriod=1h&keyHeader=proxyId"
                        + "&requireKey=true&mode=reject").to("mock:keyed");
            }
        };
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "capacity=0                    | capacity must be at least 1, was 0",
            "capacity=-5                   | capacity must be at least 1, was -5",
            "refillAmount=0                | refillAmount must be at least 1, was 0",
            "refillPeriod=abc              | refillPeriod must be a duration such as 1s, 500ms, 2m or 1h, or a number of milliseconds, was 'abc'",
            "maxWait=5x                    | maxWait must be a duration such as 1s, 500ms, 2m or 1h, or a number of milliseconds, was '5x'",
            "maxWait=PT1X                  | maxWait must be a duration",
            "storeTimeout=soon             | storeTimeout must be a duration",
            "capacity=abc                  | capacity must be a whole number, was 'abc'",
            "refillAmount=1.5              | refillAmount must be a whole number, was '1.5'",
            "metricsMaxKeys=many           | metricsMaxKeys must be a whole number, was 'many'",
            "refillPeriod=0                | refillPeriod must be at least 1 millisecond, was 0",
            "mode=bogus                    | mode",
            "capacity=2&cost=3             | cost must be between 1 and capacity 2, was 3",
            "cost=0                        | cost must be between 1 and capacity 1, was 0",
            "maxWait=-1                    | maxWait must be between 0 and 365d (31536000000 ms, the longest wait of any exchange), was -1 ms",
            "maxWait=366d                  | maxWait must be between 0 and 365d (31536000000 ms, the longest wait of any exchange), was 31622400000 ms",
            "maxWait=200000000000000d      | maxWait is longer than any duration a long holds in milliseconds, was '200000000000000d'",
            "refillPeriod=99999999999999999999 | refillPeriod is longer than any duration a long holds in milliseconds",
            "capacity=99999999999999999999 | capacity must be a whole number of at most 9223372036854775807, was '99999999999999999999'",
            "maxWaiting=-1                 | maxWaiting must not be negative, was -1",
            "maxWaiting=3000000000         | maxWaiting must be a whole number of at most 2147483647, was '3000000000'",
            "maxCandidates=0               | maxCandidates must be at least 1, was 0",
            "maxCandidates=1025            | maxCandidates must be at most 1024 (the keys one store step charges), was 1025",
            "maxAllOf=abc                  | maxAllOf must be a whole number, was 'abc'",
            "maxAllOf=3000000000           | maxAllOf must be a whole number of at most 2147483647, was '3000000000'",
            "maxAllOf=0                    | maxAllOf must be between 1 and 1000, was 0",
            "maxAllOf=1001                 | maxAllOf must be between 1 and 1000, was 1001",
            "limits=99999999999999999999/1s | limits '99999999999999999999/1s': 99999999999999999999 is larger than a long holds",
            "limits=1000000000/1000000d:1  | limits '1000000000/1000000d:1': the period 1000000d must be at most 9223372036854 ms (292 years), was 86400000000000 ms",
            "refillPeriod=1000000d         | refillPeriod must be at most 9223372036854 ms (292 years), was 86400000000000 ms",
            "capacty=5                     | capacty",
            "store=memcached               | store",
            "limits=10/1s,lots             | limits must be limits such as 10/1s or 10/1s,1000/1h or 1/1s:5 (one per second, bursts of 5) or 10/1s,4 in flight, was '10/1s,lots'",
            "limits=0/1s                   | limits '0/1s': capacity must be at least 1, was 0",
            "limits=5/1s&cost=6            | cost must be between 1 and capacity 5, was 6",
            "keyLimits=gold                | keyLimits must be entries such as premium-*=20/1s;p7=10/1s separated by ';', was 'gold'",
            "keyLimits=gold=fast           | keyLimits entry gold must be limits such as 10/1s",
            "keyLimits=%20=1/1s            | keyLimits must be entries such as premium-*=20/1s;p7=10/1s separated by ';', was ' =1/1s'",
            "keyLimits=a=9/1s;a=1/1s       | keyLimits entry 'a' never applies: entry 'a' comes first and matches every key it matches, was 'a=9/1s;a=1/1s'",
            "keyLimits=p*=9/1s;p7=1/1s     | keyLimits entry 'p7' never applies: entry 'p*' comes first",
            "keyLimits=*=9/1s;p*=1/1s      | keyLimits entry 'p*' never applies: entry '*' comes first",
            "limits=10/1s,                 | limits must be limits such as 10/1s or 10/1s,1000/1h or 1/1s:5 (one per second, bursts of 5) or 10/1s,4 in flight, was '10/1s,'",
            "limits=300000000/1s           | limits '300000000/1s': refill 300000000 per 1000000000 ticks comes to one token every 4 ticks on a clock of 1-tick steps, 17 % slower: refill more slowly or count tokens in larger units",
            "capacity=300000000            | capacity 300000000 with refillAmount 300000000 per refillPeriod 1000 ms: refill 300000000 per 1000000000 ticks comes to one token every 4 ticks",
            "keyLimits=bulk-*=300000000/1s | keyLimits entry bulk-*: refill 300000000 per 1000000000 ticks comes to one token every 4 ticks",
            "store=redis&limits=300000/1s  | limits '300000/1s': refill 300000 per 1000000000 ticks comes to one token every 4000 ticks on a clock of 1000-tick steps, 17 % slower: refill more slowly or count tokens in larger units (store=redis keeps time in microseconds)",
            "store=redis&keyLimits=a=300000000/1s | keyLimits entry a: refill 300000000 per 1000000000 ticks comes to one token every 1000 ticks on a clock of 1000-tick steps, 100 % slower",
            "store=redis&limits=1/1s:2300000000 | limits '1/1s:2300000000': a limit of capacity 2300000000 and one token per 1000000 microseconds is too large for store=redis",
            "refillPeriod=106751d          | capacity 1 with refillAmount 1 per refillPeriod 9223286400000 ms: capacity 1 with a refill of 1 per 9223286400000000000 ticks takes longer",
            "adaptiveFloor=NaN             | adaptiveFloor must be from 0.000001 to below 1, was NaN",
            "adaptiveHold=2h               | adaptiveHold must be between 0 and 1h (3600000 ms), was 7200000 ms",
            "capacity=10&cost=5&keyLimits=a=2/1s | keyLimits entry a: cost 5 is more than its capacity 2: no exchange could pass",
            "capacity=5&Capacity=9         | capacity is given twice, as Capacity and capacity; give it once",
            "maxWait=1s&max-wait=2s        | maxWait is given twice, as max-wait and maxWait; give it once",
            "allOf=a&allOf=b               | allOf is given 2 times ([a, b]); give it once",
            "allOf=,                       | allOf must name at least one key, was ','",
            "allOf=%20                     | allOf must name at least one key, was ' '",
            "stopTimeout=366d              | stopTimeout must be at most 365d (31536000000 ms), was 31622400000 ms",
            "storeTimeout=106752d          | storeTimeout must be at most 365d (31536000000 ms), was 9223372800000 ms",
    })
    void aBadOptionFailsEndpointCreationNamingIt(String query, String message) {
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:bad?" + query))
                .isInstanceOf(ResolveEndpointFailedException.class)
                .satisfies(e -> assertThat(messages(e)).contains(message));
    }

    @Test
    void limitsChangedAtRuntimeAreCheckedAsTheOptionsAre() {
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:runtime?limits=5/1s&cost=2", TokenBucketEndpoint.class);
        assertThatThrownBy(() -> endpoint.updateLimits("300000000/1s")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limits '300000000/1s': refill 300000000 per 1000000000 ticks comes to one token"
                        + " every 4 ticks");
        assertThatThrownBy(() -> endpoint.updateKeyLimits("a=300000000/1s")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("keyLimits entry a: refill 300000000 per 1000000000 ticks");
        assertThatThrownBy(() -> endpoint.updateLimits("1/1s")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("limits '1/1s': cost 2 is more than its capacity 1: no exchange could pass");
        assertThat(endpoint.getConfiguration().getLimits()).isEqualTo("5/1s");
        assertThat(endpoint.getConfiguration().getKeyLimits()).isNull();
    }

    @Test
    void aCostOptionAboveTheCapacityTheResolverGivesIsNamedAsTheOption() {
        context.getRegistry().bind("small", TokenBucketLimitResolver.text(key -> "2/1s"));
        Exchange e = template.request("tokenbucket:resolved?capacity=10&cost=5&limitResolver=#small",
                x -> x.getMessage().setHeader(TokenBucketConstants.KEY, "a"));
        assertThat(e.getException()).isInstanceOf(IllegalArgumentException.class).hasMessage("Option cost must be a"
                + " whole number from 1 to the capacity 2 of tokenbucket:resolved, was '5': such an exchange could"
                + " never pass");
    }

    @ParameterizedTest
    @ValueSource(strings = {"redisUri", "redis-uri", "RedisURI"})
    void aRedisUriGivenTwiceIsRefusedWithoutShowingIt(String option) {
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:twice?store=redis&" + option
                + "=redis://:s3cret@a:1&" + option + "=redis://:s3cret@b:1"))
                .isInstanceOf(ResolveEndpointFailedException.class)
                .cause().isInstanceOf(IllegalArgumentException.class)
                .hasMessage(option + " is given 2 times; give it once");
    }

    @Test
    void theValueOfAnUnparseableOptionIsNamedToo() {
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:bad?mode=bogus"))
                .satisfies(e -> assertThat(messages(e)).contains("bogus"));
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:bad?refillPeriod=abc"))
                .satisfies(e -> assertThat(messages(e)).contains("abc"));
    }

    @Test
    void aMissingKeyFailsNamingTheHeaderWhenOneIsRequired() {
        Exchange e = template.request("direct:keyed", x -> x.getMessage().setHeader("proxyId", "  "));
        assertThat(e.getException()).isInstanceOf(NoSuchHeaderException.class).hasMessageContaining("proxyId");
        assertThat(template.request("direct:keyed", x -> { }).getException())
                .isInstanceOf(NoSuchHeaderException.class);
    }

    @ParameterizedTest(name = "tokens header {0}")
    @CsvSource({ "abc", "0", "-1", "4", "1.5" })
    void aBadTokensHeaderFailsOnlyThatExchangeNamingTheHeaderAndValue(String value) throws Exception {
        getMockEndpoint("mock:keyed").expectedMessageCount(3);
        Exchange bad = template.request("direct:keyed", x -> {
            x.getMessage().setHeader("proxyId", "p");
            x.getMessage().setHeader(TokenBucketConstants.COST, value);
        });
        assertThat(bad.getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(TokenBucketConstants.COST).hasMessageContaining("'" + value + "'");
        // nothing was consumed: the whole capacity of 3 is still there
        for (int i = 0; i < 3; i++) {
            assertThat(template.request("direct:keyed", x -> x.getMessage().setHeader("proxyId", "p"))
                    .getException()).isNull();
        }
        MockEndpoint.assertIsSatisfied(context);
    }

    @Test
    void theTokensHeaderSetsTheCost() {
        Exchange two = template.request("direct:keyed", x -> {
            x.getMessage().setHeader("proxyId", "q");
            x.getMessage().setHeader(TokenBucketConstants.COST, 2);
        });
        assertThat(two.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class)).isEqualTo(1L);
        Exchange again = template.request("direct:keyed", x -> {
            x.getMessage().setHeader("proxyId", "q");
            x.getMessage().setHeader(TokenBucketConstants.COST, "2");
        });
        assertThat(again.getException()).isInstanceOf(TokenBucketRejectedException.class);
    }

    @Test
    void aHugeKeyIsHashedNotStored() {
        String huge = "k".repeat(1 << 20);
        assertThat(template.request("direct:keyed", x -> x.getMessage().setHeader("proxyId", huge)).getException())
                .isNull();
        Exchange second = template.request("direct:keyed", x -> x.getMessage().setHeader("proxyId", huge));
        assertThat(second.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class)).isEqualTo(1L);
        Exchange other = template.request("direct:keyed", x -> x.getMessage().setHeader("proxyId", huge + "x"));
        assertThat(other.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class)).isEqualTo(2L);
    }

    @Test
    void theOptionsShowInLoggedUrisAsWrittenAndOnlyTheRedisUriIsMasked() {
        // Camel masks every option whose name holds a secret word such as "token": the names avoid it
        component(); // the component's class adds redisUri to Camel's sanitizer
        assertThat(org.apache.camel.util.URISupport.sanitizeUri(
                "tokenbucket:x?capacity=5&cost=2&refillAmount=10&redisUri=redis://:pw@h:6379"))
                .isEqualTo("tokenbucket:x?capacity=5&cost=2&refillAmount=10&redisUri=xxxxxx");
    }

    @Test
    void componentOptionsAreTheDefaultsOfEveryEndpoint() {
        TokenBucketComponent component = component();
        component.getConfiguration().setCapacity(7);
        component.getConfiguration().setMode(TokenBucketMode.check);
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:defaults", TokenBucketEndpoint.class);
        assertThat(endpoint.getConfiguration().getCapacity()).isEqualTo(7);
        assertThat(endpoint.getConfiguration().getRefillAmount()).isEqualTo(7);
        assertThat(endpoint.getConfiguration().getMode()).isEqualTo(TokenBucketMode.check);
        TokenBucketEndpoint overridden = context.getEndpoint("tokenbucket:defaults?capacity=3",
                TokenBucketEndpoint.class);
        assertThat(overridden.getConfiguration().getCapacity()).isEqualTo(3);
        assertThat(component.getConfiguration().getCapacity()).isEqualTo(7);
    }

    @Test
    void camelUsesTheGeneratedConfigurersAndUriFactory() throws Exception {
        PropertyConfigurer endpointConfigurer = PluginHelper.getConfigurerResolver(context)
                .resolvePropertyConfigurer("tokenbucket-endpoint", context);
        assertThat(endpointConfigurer).isInstanceOf(TokenBucketEndpointConfigurer.class);
        // the generated one, reading the text of the numeric options first
        assertThat(component().getComponentPropertyConfigurer()).isInstanceOfSatisfying(
                TokenBucketOptionText.Reading.class, reading -> assertThat(reading.generated())
                        .isInstanceOf(TokenBucketComponentConfigurer.class));
        assertThat(component().getEndpointPropertyConfigurer()).isInstanceOf(TokenBucketEndpointConfigurer.class);

        EndpointUriFactory uriFactory = context.getCamelContextExtension().getEndpointUriFactory("tokenbucket");
        assertThat(uriFactory).isInstanceOf(TokenBucketEndpointUriFactory.class);
        String uri = uriFactory.buildUri("tokenbucket",
                java.util.Map.of("name", "proxies", "capacity", 5, "keyHeader", "proxyId"));
        assertThat(uri).isEqualTo("tokenbucket:proxies?capacity=5&keyHeader=proxyId");
        assertThat(uriFactory.propertyNames()).contains("capacity", "refillAmount", "refillPeriod", "keyHeader",
                "requireKey", "cost", "mode", "maxWait", "store");

        TokenBucketEndpoint endpoint = context.getEndpoint(uri + "&refillPeriod=2m&maxWait=1500ms",
                TokenBucketEndpoint.class);
        assertThat(endpoint.getConfiguration().getRefillPeriod()).isEqualTo(120_000);
        assertThat(endpoint.getConfiguration().getMaxWait()).isEqualTo(1_500);
        assertThat(context.getEndpoint("tokenbucket:zero?maxWait=0ms", TokenBucketEndpoint.class)
                .getConfiguration().getMaxWait()).isZero();
    }
}
