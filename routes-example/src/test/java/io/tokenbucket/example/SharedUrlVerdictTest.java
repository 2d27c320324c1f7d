package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With the buckets in Redis, the verdict that a URL's 429s are its own is the fleet's: an instance that has seen
 * nothing of the page treats it so from its first 429 and does not rest its pairs for the page's {@code Retry-After}.
 * Two scraper instances on one real {@code redis-server}, real proxies and target on loopback.
 */
class SharedUrlVerdictTest {

    @TempDir
    Path dir;

    @Test
    void aUrlFoundRefusedAloneByOneInstanceRestsNoPairOnAnother() throws Exception {
        try (RedisHandle redis = RedisServers.standalone();
             DemoSite site = new DemoSite(dir, 2, "50/1s", 0, new DemoTarget(1000, 1000), DemoProxy.Mode.KEEPALIVE);
             ScraperHarness a = new ScraperHarness("java", dir, site, Map.of("example.redisUri", redis.uri()));
             ScraperHarness b = new ScraperHarness("java", dir, site, Map.of("example.redisUri", redis.uri()))) {
            String refused = site.target().baseUrl() + "/retry-after/31536000";
            // a: its pairs pass the host's pages, then the page is refused through both: the URL's own
            a.scrape(a.pages(4));
            a.scrape(List.of(refused));
            assertThat(a.deadLines()).singleElement().satisfies(line -> assertThat(line.getString("reason"))
                    .startsWith("HTTP 429 of this URL alone"));
            // b has passed no page: alone, it would take the first 429 for the host's word and rest the pair the
            // capped minute (example.maxRetryAfter) in the shared bucket
            b.scrape(List.of(refused));

            assertThat(b.deadLines()).singleElement().satisfies(line -> assertThat(line.getString("reason"))
                    .startsWith("HTTP 429 of this URL alone (so found in the fleet"));
            for (String proxy : List.of("p1", "p2")) {
                assertThat(b.millisUntilPairToken(proxy)).as("ms until the shared bucket of %s's pair gives a token",
                        proxy).isLessThanOrEqualTo(1000);
            }
        }
    }
}
