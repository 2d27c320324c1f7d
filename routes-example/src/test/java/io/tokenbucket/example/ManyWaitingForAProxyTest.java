package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.fetch.HostKey;
import io.tokenbucket.example.fetch.ProxyChooser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * More URLs waiting for a proxy at once than Camel's default thread pool profile queues (1,000): each is scheduled
 * on {@link ProxyChooser}'s timer until its proxy's rest at the host ends, and none may be refused by that timer
 * (a refused task would fail its URL with a {@code RejectedExecutionException} that no error handler routes, so
 * the URL would get no outcome at all).
 */
class ManyWaitingForAProxyTest {

    private static final int URLS = 1_200;

    @TempDir
    Path dir;

    @Test
    void twelveHundredUrlsWaitingForOneRestingProxyAreAllFetched() throws Exception {
        try (DemoSite site = new DemoSite(dir, 1, "100000/1s", 0, 1_000_000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.maxInFlight",
                     String.valueOf(URLS + 300), "example.queue", "seda:urls?size=10000&concurrentConsumers=4",
                     // the pool keeps the pairs' rests only without the throttle (with it, the pair's bucket does)
                     "example.throttle", "false"))) {
            List<String> urls = scraper.pages(URLS);
            // the only proxy rests at the URLs' host: the chooser has no proxy to offer, every URL waits on its timer
            long rest = scraper.pool().penalize("p1", HostKey.of(urls.get(0)), 3_000);
            assertThat(rest).isGreaterThanOrEqualTo(3_000);
            scraper.scrape(urls);

            assertThat(scraper.deadLines()).isEmpty();
            assertThat(site.target().hits()).hasSize(URLS);
        }
    }
}
