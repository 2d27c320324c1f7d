package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import io.tokenbucket.example.proxy.StaleConnectionRetry;
import org.apache.camel.util.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code example.adaptive} end to end, through a real proxy to a host with a limit per address it does not tell:
 * the host's own 429s cut the (proxy, host) pair's rate below its {@code example.pairLimit}, and every 429 at the
 * target is one attempt of the route (HttpClient sends none again by itself: {@link StaleConnectionRetry}).
 */
class AdaptivePairTest {

    /** The adaptive rate's tuning: the component's own options. */
    private static final String TUNING = "camel.component.tokenbucket.adaptive-";

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    void theHostsOwn429sCutThePairsRateAndEachIsOneRequestAtTheTarget(String dsl) throws Exception {
        // one proxy; one host allowing 4 pages a second from one address (nginx-like, no burst: two requests less
        // than 250 ms apart are one too many, whatever the machine's speed makes of the gaps after them), no
        // Retry-After; the pair's ceiling 16 a second, starting at 8 (a start at the limit, 0.25, would double only
        // after 8 pages, two periods' worth): its first requests are refused, each refusal cuts the rate
        try (DemoSite site = new DemoSite(dir, 1, "50/1s", 0, DemoTarget.hiddenPerIpLikeNginx(4, 0, 1),
                DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of("example.adaptive", "true",
                     "example.pairLimit", "16/1s:1", TUNING + "decrease", "0.5", TUNING + "hold", "100ms",
                     TUNING + "increase", "0.05", TUNING + "floor", "0.1", TUNING + "start", "0.5",
                     "example.maxAttempts", "10"))) {
            site.warmUp();
            scraper.scrape(scraper.pages(12));

            assertThat(scraper.resultLines()).hasSize(12).allMatch(l -> l.getInteger("status") == 200);
            List<Hit> pages = site.target().hits().stream().filter(h -> h.path().startsWith("/page/")).toList();
            assertThat(pages).as("requests the host refused").anyMatch(h -> h.status() == 429);
            int attempts = scraper.resultLines().stream().mapToInt(l -> l.getInteger("attempts")).sum();
            assertThat(pages).as("requests at the target: one per attempt").hasSize(attempts);
            assertThat(scraper.pairRate("p1")).as("the pair's rate, a fraction of its 16/s").isLessThan(1.0);
            JsonObject any = scraper.resultLines().get(0);
            assertThat(any.getString("proxy")).isEqualTo("p1");
        }
    }

    @Test
    void aNewPairStartsAtAdaptiveStartOfItsCeilingAndDoublesFromThere() throws Exception {
        // a target with no hidden limit to speak of: nothing cuts the pair, its slow start only doubles
        try (DemoSite site = new DemoSite(dir, 1, "1000/1s", 0, DemoTarget.hiddenPerIpLikeNginx(1000, 100, 1),
                DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.adaptive", "true",
                     "example.pairLimit", "8/1s:8", TUNING + "start", "0.125", TUNING + "floor",
                     "0.125"))) {
            assertThat(scraper.pairRate("p1")).as("a pair never seen, at the start").isEqualTo(0.125);
            // a step is a refill amount's worth of tokens at the current rate, ceil(8 x rate), and two steps' worth,
            // ceil(2 x 8 x rate), double the rate while starting: 2 pages at 0.125, 4 at 0.25, 8 at 0.5, then the
            // ceiling. (Per second, not per hour: the turns booked at a lower rate count for more tokens at the
            // doubled one, which a slow refill would make hours.)
            scraper.scrape(scraper.pages(1));
            assertThat(scraper.pairRate("p1")).as("one page of the two at 0.125").isEqualTo(0.125);
            scraper.scrape(scraper.pages(1));
            assertThat(scraper.pairRate("p1")).isEqualTo(0.25);
            scraper.scrape(scraper.pages(3));
            assertThat(scraper.pairRate("p1")).as("three pages of the four at 0.25").isEqualTo(0.25);
            scraper.scrape(scraper.pages(1));
            assertThat(scraper.pairRate("p1")).isEqualTo(0.5);
            scraper.scrape(scraper.pages(8));
            assertThat(scraper.pairRate("p1")).isEqualTo(1.0);
        }
    }
}
