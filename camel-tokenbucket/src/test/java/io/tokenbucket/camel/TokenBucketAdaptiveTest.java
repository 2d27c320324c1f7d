package io.tokenbucket.camel;

import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import io.tokenbucket.camel.producer.TokenBucketLimitSource;
import com.sun.net.httpserver.HttpServer;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Exchange;
import org.apache.camel.ResolveEndpointFailedException;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.http.HttpComponent;
import org.apache.camel.console.DevConsole;
import org.apache.camel.support.PluginHelper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The adaptive rate through the endpoint: a real 429 from a loopback HTTP server, fetched with camel-http, sends the
 * throttled signal that cuts the key's rate (local store and Redis), the rate in headers, JMX and the dev console,
 * and the options refused out of range.
 */
class TokenBucketAdaptiveTest extends TokenBucketRedisTestSupport {

    private HttpServer target;
    /** How many requests the target has answered 429. */
    private final AtomicInteger refused = new AtomicInteger();

    @Override
    protected boolean useJmx() {
        return true;
    }

    @Override
    protected RoutesBuilder createRouteBuilder() throws Exception {
        target = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        target.createContext("/busy", x -> {
            refused.incrementAndGet();
            x.sendResponseHeaders(429, -1);
            x.close();
        });
        target.start();
        String url = "http://127.0.0.1:" + target.getAddress().getPort() + "/busy?throwExceptionOnFailure=false";
        // HttpClient 5 retries a 429 or 503 by itself (honouring Retry-After), past the bucket: off, so that every
        // refusal comes back to the route as a signal (a component option only)
        context.getComponent("http", HttpComponent.class).setAutomaticRetriesDisabled(true);
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                // 10 per second per host, halved by a 429 (the signal goes to the same endpoint), never below 1
                String hosts = "tokenbucket:hosts?capacity=1&refillAmount=10&refillPeriod=1s&adaptive=true"
                        + "&adaptiveFloor=0.1&adaptiveHold=1h";
                from("direct:fetch")
                        .to(hosts)
                        .to(url)
                        .filter(header(Exchange.HTTP_RESPONSE_CODE).in(429, 503))
                        .setHeader(TokenBucketConstants.OPERATION, constant("throttled"))
                        .to(hosts);
                String shared = "tokenbucket:shared?capacity=1&refillAmount=10&refillPeriod=1s&adaptive=true"
                        + "&adaptiveHold=1h&store=redis&redisUri=" + redis.uri();
                from("direct:redis")
                        .to(shared)
                        .to(url)
                        .filter(header(Exchange.HTTP_RESPONSE_CODE).isEqualTo(429))
                        .setHeader(TokenBucketConstants.OPERATION, constant("throttled"))
                        .to(shared);
                from("direct:fixed").to("tokenbucket:fixed?capacity=1&refillAmount=10");
                for (String store : new String[] {"local", "redis"}) {
                    String slow = "tokenbucket:slow-" + store + "?capacity=1&refillAmount=10&refillPeriod=1s"
                            + "&adaptive=true&adaptiveStart=0.25&adaptiveDecrease=0.7&adaptiveHold=1h"
                            + ("redis".equals(store) ? "&store=redis&redisUri=" + redis.uri() : "");
                    from("direct:slow-" + store)
                            .to(slow)
                            .to(url)
                            .filter(header(Exchange.HTTP_RESPONSE_CODE).isEqualTo(429))
                            .setHeader(TokenBucketConstants.OPERATION, constant("throttled"))
                            .to(slow);
                }
            }
        };
    }

    @AfterEach
    void stopTarget() {
        target.stop(0);
    }

    private Exchange fetch(String route, String host) {
        return template.request(route, e -> e.getMessage().setHeader(TokenBucketConstants.KEY, host));
    }

    private TokenBucketEndpoint endpoint(String name) {
        return context.getEndpoints().stream().filter(TokenBucketEndpoint.class::isInstance)
                .map(TokenBucketEndpoint.class::cast).filter(e -> e.getName().equals(name)).findFirst()
                .orElseThrow();
    }

    private static long waited(Exchange e) {
        return e.getMessage().getHeader(TokenBucketConstants.WAITED, Long.class);
    }

    @Test
    void a429CutsTheHostsRateOnceAndTheNextFetchWaitsTheLongerInterval() {
        int before = refused.get();
        Exchange first = fetch("direct:fetch", "example.org");
        assertThat(first.getException()).isNull();
        assertThat(first.getMessage().getHeader(TokenBucketConstants.RATE, Double.class)).isEqualTo(0.5);
        assertThat(first.getMessage().getHeader(TokenBucketConstants.RATE_CUT, Boolean.class)).isTrue();
        Exchange second = fetch("direct:fetch", "example.org");
        // the cut emptied the bucket at 5 per second: the next token 200 ms after the cut (not 100)
        assertThat(waited(second)).as("at least the 100 ms the cut added; late only by the timer").isBetween(100L, 1000L);
        // its own 429 came within the hold: ignored
        assertThat(second.getMessage().getHeader(TokenBucketConstants.RATE_CUT, Boolean.class)).isFalse();
        assertThat(second.getMessage().getHeader(TokenBucketConstants.RATE, Double.class)).isEqualTo(0.5);
        assertThat(refused.get() - before).isEqualTo(2);
        // another host is untouched (operation rate, sent to the endpoint itself)
        Exchange other = template.request(endpoint("hosts").getEndpointUri(), e -> {
            e.getMessage().setHeader(TokenBucketConstants.KEY, "example.com");
            e.getMessage().setHeader(TokenBucketConstants.OPERATION, "rate");
        });
        assertThat(other.getMessage().getHeader(TokenBucketConstants.RATE, Double.class)).isEqualTo(1.0);
        assertThat(endpoint("hosts").rateOfKey("example.org")).isEqualTo(0.5);
    }

    @Test
    void onRedisTheCutIsInTheSharedBucket() {
        fetch("direct:redis", "example.net");
        Exchange second = fetch("direct:redis", "example.net");
        assertThat(waited(second)).as("at least the 100 ms the cut added; late only by the timer").isBetween(100L, 1000L);
        TokenBucketEndpoint shared = endpoint("shared");
        assertThat(shared.rateOfKey("example.net")).isEqualTo(0.5);
        assertThat(shared.getRateCutCount()).isEqualTo(1);
        assertThat(shared.getThrottledSignalCount()).isEqualTo(2);
    }

    @Test
    void theRateShowsInJmxAndTheDevConsole() throws Exception {
        fetch("direct:fetch", "slow.example");
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        Set<ObjectName> names = jmx.queryNames(new ObjectName("org.apache.camel:type=endpoints,*"), null);
        ObjectName name = names.stream().filter(n -> n.toString().contains("tokenbucket://hosts")).findFirst()
                .orElseThrow(() -> new AssertionError("no tokenbucket endpoint MBean in " + names));
        String[] sig = {String.class.getName()};
        assertThat(jmx.invoke(name, "rateOfKey", new Object[] {"slow.example"}, sig)).isEqualTo(0.5);
        assertThat(jmx.invoke(name, "rateOfKey", new Object[] {"fast.example"}, sig)).isEqualTo(1.0);
        assertThat(jmx.invoke(name, "rateStateOfKey", new Object[] {"slow.example"}, sig))
                .isEqualTo("rate=0.5, starting=false");
        assertThat(jmx.getAttribute(name, "RateCutCount")).isEqualTo(1L);
        assertThat(jmx.getAttribute(name, "LowestRecentRate")).isEqualTo(0.5);
        DevConsole console = PluginHelper.getDevConsoleResolver(context).resolveDevConsole("tokenbucket");
        String text = (String) console.call(DevConsole.MediaType.TEXT);
        assertThat(text).contains("throttled signals: 1 (cut: 1)").contains("slow key slow.example: rate 0.500");
        @SuppressWarnings("unchecked")
        Map<String, Object> json = (Map<String, Object>) console.call(DevConsole.MediaType.JSON);
        assertThat(json.get("endpoints").toString()).contains("slowestKeys").contains("key=slow.example");
    }

    @ParameterizedTest
    @CsvSource({"local", "redis"})
    void rateOfKeyReadsAHostileKeysCutAndANeverSeenKeyAtTheCeilingWithoutWritingIt(String store) {
        String uri = "tokenbucket:hostile-" + store + "?capacity=1&refillAmount=10&adaptive=true&adaptiveHold=1h"
                + ("redis".equals(store) ? "&store=redis&redisUri=" + redis.uri() : "");
        // longer than a stored key may be (hashed), with the separators of Redis keys, a hash tag and a glob
        String huge = "{tag}:a|b*?[x]" + "k".repeat(100_000);
        for (String key : new String[] {huge, "sha256:not-a-hash", "", " "}) {
            Exchange cut = template.request(uri, x -> {
                x.getMessage().setHeader(TokenBucketConstants.KEY, key);
                x.getMessage().setHeader(TokenBucketConstants.OPERATION, "throttled");
            });
            assertThat(cut.getException()).as("key of %d chars", key.length()).isNull();
            assertThat(endpoint("hostile-" + store).rateOfKey(key)).as("key of %d chars", key.length())
                    .isEqualTo(0.5);
        }
        TokenBucketEndpoint endpoint = endpoint("hostile-" + store);
        // a blank or missing header is the default key: so is a null from a JMX console
        assertThat(endpoint.rateOfKey(null)).isEqualTo(0.5);
        int before = endpoint.getLocalKeys();
        assertThat(endpoint.rateOfKey("never-seen")).isEqualTo(1.0);
        assertThat(endpoint.getLocalKeys()).isEqualTo(before);
        if ("redis".equals(store)) {
            assertThat((java.util.List<?>) redis.command("KEYS", "*never-seen*")).isEmpty();
        }
    }

    @ParameterizedTest
    @CsvSource({"local", "redis"})
    void aFreshKeyStartsAtAdaptiveStartAndItsFirst429CutsIt(String store) {
        TokenBucketEndpoint slow = endpoint("slow-" + store);
        assertThat(slow.getConfiguration().getAdaptiveStart()).isEqualTo(0.25);
        assertThat(slow.limitSource().limits().adaptive().startPpm()).isEqualTo(250_000);
        // a key never seen: at the start, read without writing anything
        Exchange fresh = template.request(slow.getEndpointUri(), e -> {
            e.getMessage().setHeader(TokenBucketConstants.KEY, "new.example");
            e.getMessage().setHeader(TokenBucketConstants.OPERATION, "rate");
        });
        assertThat(fresh.getMessage().getHeader(TokenBucketConstants.RATE, Double.class)).isEqualTo(0.25);
        assertThat(slow.rateOfKey("new.example")).isEqualTo(0.25);
        assertThat(slow.getLocalKeys()).isZero();
        if ("redis".equals(store)) {
            assertThat((java.util.List<?>) redis.command("KEYS", "*new.example*")).isEmpty();
        }
        // the first 429 of a key still at its start (no doubling yet, so no rate that passed to halve back to) cuts it
        // by adaptiveDecrease alone: 0.25 × 0.7 = 0.175 (halved it would be held at the floor of 0.1)
        Exchange first = fetch("direct:slow-" + store, "slow.example");
        assertThat(first.getException()).isNull();
        assertThat(first.getMessage().getHeader(TokenBucketConstants.RATE_CUT, Boolean.class)).isTrue();
        assertThat(first.getMessage().getHeader(TokenBucketConstants.RATE, Double.class)).isEqualTo(0.175);
        assertThat(slow.rateOfKey("slow.example")).isEqualTo(0.175);
        assertThat(slow.rateStateOfKey("slow.example")).isEqualTo("rate=0.175, starting=false");
        assertThat(slow.rateStateOfKey("new.example")).isEqualTo("rate=0.25, starting=true");
    }

    @Test
    void withoutAdaptiveStartAFreshKeyIsAtTheConfiguredRate() {
        assertThat(endpoint("hosts").getConfiguration().getAdaptiveStart()).isEqualTo(1.0);
        assertThat(endpoint("hosts").limitSource().limits().adaptive().startPpm())
                .isEqualTo(io.tokenbucket.math.Adaptive.PPM);
        assertThat(endpoint("hosts").rateOfKey("untouched.example")).isEqualTo(1.0);
    }

    @Test
    void aThrottledSignalOnAFixedRateFailsNamingTheOption() {
        Exchange e = template.request("direct:fixed", x -> {
            x.getMessage().setHeader(TokenBucketConstants.KEY, "k");
            x.getMessage().setHeader(TokenBucketConstants.OPERATION, "throttled");
        });
        assertThat(e.getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("adaptive=true").hasMessageContaining("tokenbucket:fixed");
    }

    @ParameterizedTest
    @CsvSource({"local, true, 0.5", "allow, false, 1.0"})
    void withoutRedisTheLocalPolicyCutsTheLocalRateAndAllowIgnoresTheSignal(String policy, boolean cut,
                                                                           double rate) {
        RedisHandle gone = RedisServers.standalone();
        String uri = gone.uri();
        gone.close(); // nothing listens there now: every call fails at once
        String endpoint = "tokenbucket:gone-" + policy + "?capacity=1&refillAmount=10&adaptive=true&store=redis"
                + "&storeTimeout=300ms&onStoreError=" + policy + "&redisUri=" + uri;
        Exchange e = template.request(endpoint, x -> {
            x.getMessage().setHeader(TokenBucketConstants.KEY, "example.org");
            x.getMessage().setHeader(TokenBucketConstants.OPERATION, "throttled");
        });
        assertThat(e.getException()).isNull();
        assertThat(e.getMessage().getHeader(TokenBucketConstants.RATE_CUT, Boolean.class)).isEqualTo(cut);
        assertThat(e.getMessage().getHeader(TokenBucketConstants.RATE, Double.class)).isEqualTo(rate);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "adaptiveFloor=0              | adaptiveFloor must be from 0.000001 to below 1, was 0.0",
            "adaptiveFloor=1              | adaptiveFloor must be from 0.000001 to below 1, was 1.0",
            "adaptiveDecrease=1           | adaptiveDecrease must be above 0 and below 1, was 1.0",
            "adaptiveDecrease=-0.5        | adaptiveDecrease must be above 0 and below 1, was -0.5",
            "adaptiveIncrease=NaN         | adaptiveIncrease must be from 0.000001 to 1, was NaN",
            "adaptiveIncrease=2           | adaptiveIncrease must be from 0.000001 to 1, was 2.0",
            "adaptiveHold=2h              | adaptiveHold must be between 0 and 1h (3600000 ms), was 7200000 ms",
            "adaptiveMemory=2d            | adaptiveMemory must be between 0 and 1d (86400000 ms), was 172800000 ms",
            "adaptiveFloor=abc            | adaptiveFloor",
            "adaptiveFloor=1e309          | adaptiveFloor must be from 0.000001 to below 1, was Infinity",
            "adaptiveFloor=-1e309         | adaptiveFloor must be from 0.000001 to below 1, was -Infinity",
            "adaptiveFloor=0.0000004      | adaptiveFloor must be from 0.000001 to below 1, was 4.0E-7",
            "adaptiveFloor=0.9999996      | adaptiveFloor must be from 0.000001 to below 1, was 0.9999996",
            "adaptiveDecrease=0           | adaptiveDecrease must be above 0 and below 1, was 0.0",
            "adaptiveIncrease=0           | adaptiveIncrease must be from 0.000001 to 1, was 0.0",
            "adaptiveHold=-1              | adaptiveHold",
            "adaptiveHold=abc             | adaptiveHold must be a duration such as 1s, 500ms, 2m or 1h, or a number of milliseconds, was 'abc'",
            "adaptiveMemory=5x            | adaptiveMemory must be a duration such as 1s, 500ms, 2m or 1h, or a number of milliseconds, was '5x'",
            "adaptiveHold=200000000000000d | adaptiveHold is longer than any duration a long holds in milliseconds, was '200000000000000d'",
            "adaptiveMemory=-1            | adaptiveMemory",
            "adaptiveKeys=,               | adaptiveKeys must name at least one key or pattern, was ','",
            "adaptiveStart=1.5            | adaptiveStart must be from 0.000001 to 1, was 1.5",
            "adaptiveStart=0              | adaptiveStart must be from 0.000001 to 1, was 0.0",
            "adaptiveStart=-0.5           | adaptiveStart must be from 0.000001 to 1, was -0.5",
            "adaptiveStart=NaN            | adaptiveStart must be from 0.000001 to 1, was NaN",
            "adaptiveStart=1e309          | adaptiveStart must be from 0.000001 to 1, was Infinity",
            "adaptiveStart=abc            | adaptiveStart",
    })
    void aBadAdaptiveOptionFailsEndpointCreationNamingIt(String query, String message) {
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:bad?adaptive=true&" + query))
                .isInstanceOf(ResolveEndpointFailedException.class)
                .satisfies(e -> assertThat(messages(e)).contains(message));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            // set alone, below the default floor of 0.1: the floor follows it down
            "adaptiveStart=0.05                   | 50000  | 50000",
            // set with a floor above it: the start wins, the floor follows
            "adaptiveFloor=0.5&adaptiveStart=0.3  | 300000 | 300000",
            // at or above the floor: the floor as set
            "adaptiveStart=0.1                    | 100000 | 100000",
            "adaptiveFloor=0.05&adaptiveStart=0.2 | 50000  | 200000",
    })
    void anAdaptiveStartBelowTheFloorLowersTheFloorToIt(String query, long floorPpm, long startPpm) {
        TokenBucketEndpoint e = context.getEndpoint("tokenbucket:alone" + floorPpm + startPpm + "?adaptive=true&"
                + query, TokenBucketEndpoint.class);
        assertThat(TokenBucketLimitSource.adaptation(e.getConfiguration()).floorPpm()).isEqualTo(floorPpm);
        assertThat(TokenBucketLimitSource.adaptation(e.getConfiguration()).startPpm()).isEqualTo(startPpm);
    }
}
