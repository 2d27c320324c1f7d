package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import org.apache.camel.util.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * With {@code example.adaptive}, a URL is not dead-lettered for the 429s its host sends while the pairs search for
 * its rate: each 429 that cut the rate leaves the URL's {@code example.maxAttempts} untouched, up to that many.
 * Real servers on loopback; the target counts the requests.
 */
class RateSearchRouteTest {

    @TempDir
    Path dir;

    @Test
    void a429ThatCutTheRateDoesNotSpendAnAttempt() throws Exception {
        // one proxy; example.maxAttempts 2. /busy/3/..: three 429s (no Retry-After), then the page; /busy/9/..: more
        // than the free ones and the attempts together
        try (DemoSite site = new DemoSite(dir, 1, "50/1s", 0, new DemoTarget(1000, 1000), DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.adaptive", "true",
                     "example.pairLimit", "50/1s:1", "example.maxAttempts", "2",
                     "camel.component.tokenbucket.adaptive-floor", "0.5", "example.storeRetryDelay", "50"))) {
            String found = site.target().baseUrl() + "/busy/3/a";
            String refused = site.target().baseUrl() + "/busy/9/b";
            scraper.scrape(List.of(found, refused));

            assertThat(scraper.resultLines()).singleElement().satisfies(line -> {
                assertThat(line.getString("url")).isEqualTo(found);
                assertThat(line.getInteger("status")).isEqualTo(200);
                assertThat(line.getInteger("attempts")).isEqualTo(4);
            });
            assertThat(scraper.deadLines()).singleElement().satisfies(line -> {
                assertThat(line.getString("url")).isEqualTo(refused);
                assertThat(line.getInteger("attempts")).as("2 spent and 2 free").isEqualTo(4);
            });
            assertThat(site.target().hits().stream().filter(h -> h.path().startsWith("/busy/")))
                    .as("requests at the target: one per attempt").hasSize(8);
        }
    }

    /**
     * The same URL answered 429 with {@code Retry-After: 1} twice in a row through one proxy: the second rests the
     * pair as the first did (the target sees each next request a full second later at least), and the URL's attempts
     * are counted as documented: without the adaptive rate each 429 spends one of {@code example.maxAttempts} (2: the
     * dead letter after both); with it, a 429 that cut the rate is free, so the third attempt gets the page.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aRetryAfterTwiceInARowIsHonouredTwice(boolean adaptive) throws Exception {
        try (DemoSite site = new DemoSite(dir, 1, "50/1s", 0, new DemoTarget(1000, 1000), DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.adaptive",
                     String.valueOf(adaptive), "example.pairLimit", "50/1s:1", "example.maxAttempts", "2",
                     "example.storeRetryDelay", "50"))) {
            String url = site.target().baseUrl() + "/busy/2/retry-after-1/page";
            scraper.scrape(List.of(url));

            List<DemoTarget.Hit> hits = site.target().hits();
            assertThat(hits).extracting(DemoTarget.Hit::status).as("at the target")
                    .isEqualTo(adaptive ? List.of(429, 429, 200) : List.of(429, 429));
            for (int i = 1; i < hits.size(); i++) {
                assertThat(TimeUnit.NANOSECONDS.toMillis(hits.get(i).nanos() - hits.get(i - 1).nanos()))
                        .as("request %d after the 429 before it", i + 1).isGreaterThanOrEqualTo(1000);
            }
            JsonObject line = adaptive ? scraper.resultLines().get(0) : scraper.deadLines().get(0);
            assertThat(line.getInteger("attempts")).isEqualTo(hits.size());
            assertThat(line.getLong("waitedMs")).isGreaterThanOrEqualTo(1000L * (hits.size() - 1) - 100);
            if (!adaptive) {
                assertThat(line.getString("reason")).startsWith("HTTP 429 (rests ").endsWith(" via p1");
            }
        }
    }
}
