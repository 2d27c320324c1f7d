package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import io.tokenbucket.example.fetch.HostKey;
import io.tokenbucket.example.proxy.ProxyLimits;
import io.tokenbucket.testsupport.redis.RedisClusterHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Endpoint;
import org.apache.camel.util.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The proxy's, the (proxy, host) pair's and the host's buckets in one step ({@link ScraperRoute#THROTTLE}): each
 * attempt charges all three together, so a penalized or cut pair is a reason to choose another proxy, not a wait
 * after the host's token is spent. Limits refill per hour, so what each bucket holds after a run is exactly what the
 * run took from it.
 */
class OneStepBucketsTest {

    /** Each proxy's {@code limit=}: 5 tokens, none back within a test. */
    private static final String PROXY_LIMIT = "5/1h";
    /** Every pair's. */
    private static final String PAIR_LIMIT = "4/1h";
    /** Every host's. */
    private static final String HOST_LIMIT = "3/1h";

    @TempDir
    Path dir;

    @ParameterizedTest
    @CsvSource({ "java, freest", "yaml, freest", "java, roundrobin", "yaml, roundrobin" })
    void theChosenProxyItsPairAndTheHostAreChargedTogetherAndNothingElse(String dsl, String choose)
            throws Exception {
        try (DemoSite site = site(3);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, limits(Map.of("example.choose", choose)))) {
            scraper.scrape(scraper.pages(1));

            JsonObject line = scraper.resultLines().get(0);
            assertThat(line.getInteger("status")).isEqualTo(200);
            String chosen = line.getString("proxy");
            assertThat(line.getLong("waitedMs")).as("nothing to wait for").isZero();
            String other = HostKey.of(site.target().baseUrls().get(1));
            for (String proxy : List.of("p1", "p2", "p3")) {
                int taken = proxy.equals(chosen) ? 1 : 0;
                assertThat(scraper.tokens(proxy)).as("tokens of proxy %s", proxy).isEqualTo(5 - taken);
                assertThat(scraper.tokens(scraper.pairKey(proxy))).as("tokens of the pair of %s", proxy)
                        .isEqualTo(4 - taken);
                assertThat(scraper.tokens(ProxyLimits.pairKey(proxy, other))).as("the other host's pair").isEqualTo(4);
            }
            assertThat(scraper.tokens(ProxyLimits.hostKey(scraper.host()))).as("the host's tokens").isEqualTo(2);
            assertThat(scraper.tokens(ProxyLimits.hostKey(other))).as("the other host's").isEqualTo(3);

            // one endpoint holds them all: the route's step, and the operations of the pairs' 429s
            List<String> buckets = scraper.context.getEndpoints().stream().map(Endpoint::getEndpointUri)
                    .filter(uri -> uri.startsWith("tokenbucket:")).toList();
            assertThat(buckets).hasSize(1);
            // with example.adaptive, only the pairs' rates adapt: a host's 429 is its word about one proxy's address
            assertThat(scraper.bucketOperation(scraper.pairKey(chosen), "throttled").getMessage()
                    .getHeader(TokenBucketConstants.RATE, Double.class)).isLessThan(1.0);
            for (String fixed : List.of(chosen, ProxyLimits.hostKey(scraper.host()))) {
                assertThatThrownBy(() -> scraper.bucketOperation(fixed, "throttled")).as(fixed)
                        .hasMessageContaining("adaptiveKeys");
            }
        }
    }

    @ParameterizedTest
    @CsvSource({ "java, penalize", "yaml, penalize", "java, throttled", "yaml, throttled" })
    void aPairHeldBackMakesTheStepTakeAnotherProxyForThatHostAtOnce(String dsl, String signal) throws Exception {
        try (DemoSite site = site(2); ScraperHarness scraper = new ScraperHarness(dsl, dir, site, limits(Map.of()))) {
            // the pair (p1, first host) held back in the store only, as another instance sharing Redis would: this
            // instance's pool still offers p1 for that host, and p1 is the first of two equally free proxies.
            // penalize: no token for an hour; throttled: its rate cut, its bucket emptied at the new rate (4/h)
            scraper.bucketOperation(scraper.pairKey("p1"), signal, Map.of(TokenBucketConstants.PENALTY, "1h"));
            assertThat(scraper.millisUntilPairToken("p1")).as("ms until the pair's next token").isGreaterThan(60_000);
            assertThat(scraper.pool().health()).containsEntry("p1", "healthy");

            String other = site.target().baseUrls().get(1);
            scraper.scrape(List.of(scraper.pages(2).get(0), scraper.pages(2).get(1), other + "/page/9"));

            Map<String, String> proxyOf = scraper.resultLines().stream().collect(Collectors.toMap(
                    l -> l.getString("url"), l -> l.getString("proxy")));
            assertThat(scraper.resultLines()).hasSize(3).allSatisfy(l -> {
                assertThat(l.getInteger("status")).isEqualTo(200);
                assertThat(l.getInteger("attempts")).isEqualTo(1);
                assertThat(l.getLong("waitedMs")).as("no wait for the held-back pair").isZero();
            });
            assertThat(proxyOf).containsEntry(scraper.pages(1).get(0), "p2")
                    .containsEntry(scraper.pages(2).get(1), "p2").containsEntry(other + "/page/9", "p1");
            // p1 was charged for the other host only; its pair with the first host was never charged
            assertThat(scraper.tokens("p1")).isEqualTo(4);
            assertThat(scraper.tokens("p2")).isEqualTo(3);
            assertThat(scraper.tokens(scraper.pairKey("p2"))).isEqualTo(2);
            assertThat(scraper.millisUntilPairToken("p1")).as("the held-back pair, untouched").isGreaterThan(60_000);
            assertThat(site.target().hits().stream().filter(h -> h.path().startsWith("/page/")).map(Hit::client))
                    .containsExactlyInAnyOrder("p2", "p2", "p1");
        }
    }

    @ParameterizedTest
    @CsvSource({ "java", "yaml" })
    void aProxyIdWithACommaIsOneCandidate(String dsl) throws Exception {
        try (DemoSite site = site(2)) {
            // the proxy file with ids a,b and c instead of p1 and p2: in a comma-joined candidates header, a,b
            // would have been two proxies that do not exist
            List<DemoProxy> proxies = site.proxies();
            Files.writeString(site.proxyFile(), proxies.get(0).line().replace(" id=p1", " id=a,b") + " limit="
                    + PROXY_LIMIT + "\n" + proxies.get(1).line().replace(" id=p2", " id=c") + " limit=" + PROXY_LIMIT
                    + "\n");
            try (ScraperHarness scraper = new ScraperHarness(dsl, dir, site, limits(Map.of()))) {
                scraper.scrape(scraper.pages(2));

                assertThat(scraper.resultLines()).hasSize(2).allSatisfy(l -> {
                    assertThat(l.getInteger("status")).isEqualTo(200);
                    assertThat(l.getInteger("attempts")).isEqualTo(1);
                });
                // the first is a,b (of equals, the first); then c, whose pair with the host has the most tokens
                assertThat(scraper.resultLines().stream().map(l -> l.getString("proxy")))
                        .containsExactlyInAnyOrder("a,b", "c");
                assertThat(scraper.tokens("a,b")).isEqualTo(4);
                assertThat(scraper.tokens(scraper.pairKey("a,b"))).isEqualTo(3);
                assertThat(scraper.pool().health()).containsOnlyKeys("a,b", "c");
            }
        }
    }

    @Test
    void onARedisClusterTheProxyItsPairAndTheHostShareASlotAndAreChargedTogether() throws Exception {
        try (RedisClusterHandle cluster = RedisServers.cluster(); DemoSite site = site(3)) {
            String uri = "redis-cluster://" + cluster.uris().stream().map(u -> u.substring("redis://".length()))
                    .collect(Collectors.joining(","));
            try (ScraperHarness scraper = new ScraperHarness("java", dir, site,
                    limits(Map.of("example.redisUri", uri)))) {
                scraper.scrape(scraper.pages(2));

                assertThat(scraper.resultLines()).hasSize(2).allMatch(l -> l.getInteger("status") == 200);
                String first = scraper.resultLines().get(0).getString("proxy");
                String second = scraper.resultLines().get(1).getString("proxy");
                assertThat(first).as("the freest: another proxy for the second").isNotEqualTo(second);
                for (String proxy : List.of(first, second)) {
                    assertThat(scraper.tokens(proxy)).isEqualTo(4);
                    assertThat(scraper.tokens(scraper.pairKey(proxy))).isEqualTo(3);
                }
                assertThat(scraper.tokens(ProxyLimits.hostKey(scraper.host()))).isEqualTo(1);
            }
        }
    }

    /** A site with {@code proxies} proxies at {@link #PROXY_LIMIT} and two hosts that refuse nothing here. */
    private DemoSite site(int proxies) throws Exception {
        DemoSite site = new DemoSite(dir, proxies, PROXY_LIMIT, 0, DemoTarget.hiddenPerIp(100, 2, true),
                DemoProxy.Mode.KEEPALIVE);
        site.warmUp();
        return site;
    }

    /**
     * The hosts', pairs' and (adaptive) overrides of every test here, and {@code more}. The pairs start at their
     * ceiling: in a slow start each token granted would double a pair's rate, and the turns already booked would
     * count for more tokens at the new rate, so what a pair holds would not be the tokens it gave.
     */
    private static Map<String, String> limits(Map<String, String> more) {
        Map<String, String> overrides = new HashMap<>(Map.of("example.hostLimit", HOST_LIMIT, "example.pairLimit",
                PAIR_LIMIT, "example.adaptive", "true", "example.maxAttempts", "1",
                "camel.component.tokenbucket.adaptive-start", "1.0"));
        overrides.putAll(more);
        return overrides;
    }
}
