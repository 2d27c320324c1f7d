package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketEndpoint;
import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An operator who does not know a host's limit sets {@code example.adaptive=true} and a ceiling
 * ({@code example.pairLimit}), and nothing else: the settings that make the adaptive rate work come with it, the
 * short booking horizon above all (turns booked far ahead keep the rate they were booked at and come back refused
 * after a cut).
 */
class AdaptiveDefaultsTest {

    @TempDir
    Path dir;

    @Test
    void theAdaptiveRateBringsAShortBookingHorizonAndASlowStart() throws Exception {
        try (DemoSite site = new DemoSite(dir, 1, "50/1s", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.adaptive", "true",
                     "example.pairLimit", "20/1s:2"))) {
            TokenBucketConfiguration throttle = throttle(scraper);
            assertThat(throttle.isAdaptive()).isTrue();
            assertThat(throttle.getMaxWait()).as("maxWait, ms").isEqualTo(100L);
            assertThat(throttle.getAdaptiveStart()).as("a slow start, from at most a fifth of the ceiling")
                    .isLessThanOrEqualTo(0.2).isGreaterThanOrEqualTo(throttle.getAdaptiveFloor());
            assertThat(scraper.pairRate("p1")).as("a pair never seen").isEqualTo(throttle.getAdaptiveStart());
        }
    }

    @Test
    void aBookingHorizonGivenStaysAndWithoutTheAdaptiveRateNoneIsAdded() throws Exception {
        try (DemoSite site = new DemoSite(dir, 1, "50/1s", 0, 1000, 1000)) {
            try (ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.adaptive", "true",
                    "example.pairMaxWait", "2s"))) {
                assertThat(throttle(scraper).getMaxWait()).isEqualTo(2000L);
            }
            try (ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of())) {
                assertThat(throttle(scraper).isAdaptive()).isFalse();
                assertThat(throttle(scraper).getMaxWait()).as("the component's max-wait, unset").isNull();
            }
        }
    }

    @Test
    void fromACeilingTwiceAnUnknownLimitTheDefaultsFindItWithFew429s() throws Exception {
        // two proxies, one host allowing each address 10 pages a second, nginx-like with a burst of 5 and no
        // Retry-After; each pair's ceiling twice that; only example.adaptive and the ceiling are set
        int perSecond = 10;
        int proxies = 2;
        int pages = 150;
        try (DemoSite site = new DemoSite(dir, proxies, "100/1s", 0, DemoTarget.hiddenPerIpLikeNginx(perSecond, 5, 1),
                DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.adaptive", "true",
                     "example.pairLimit", "20/1s:2", "example.queue", "seda:urls?size=10000&concurrentConsumers=8"))) {
            site.warmUp();
            scraper.scrape(scraper.pages(pages));

            assertThat(scraper.resultLines()).hasSize(pages);
            assertThat(scraper.dead.getReceivedCounter()).isZero();
            List<Hit> hits = site.target().hits().stream().filter(h -> h.path().startsWith("/page/")).toList();
            long refused = hits.stream().filter(h -> h.status() == 429).count();
            // loose on purpose (a loaded machine bunches requests): without the horizon the turns booked at the
            // start's rates come back refused after the first cut, many times this
            assertThat(refused).as("429s of %s requests", hits.size()).isLessThanOrEqualTo(hits.size() / 10);
            double seconds = (hits.get(hits.size() - 1).nanos() - hits.get(0).nanos()) / 1e9;
            double allowed = (double) pages / (perSecond * proxies);
            assertThat(seconds).as("seconds at the target, the hidden limit allowing %s", allowed)
                    .isLessThan(3 * allowed);
        }
    }

    /** The throttle's configuration: the {@code tokenbucket:proxies} endpoint the route made. */
    private static TokenBucketConfiguration throttle(ScraperHarness scraper) {
        return scraper.context.getEndpoints().stream().filter(TokenBucketEndpoint.class::isInstance)
                .map(TokenBucketEndpoint.class::cast)
                .filter(e -> e.getEndpointUri().startsWith("tokenbucket://proxies")).findFirst().orElseThrow()
                .getConfiguration();
    }
}
