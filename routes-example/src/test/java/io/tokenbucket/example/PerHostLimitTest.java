package io.tokenbucket.example;

import static io.tokenbucket.example.ScraperRouteTest.aheadOfBucket;
import static io.tokenbucket.example.ScraperRouteTest.maxInAnyWindow;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Per-host politeness at the target: {@code example.hostLimit} bounds each host across all proxies in every 1 s
 * window, while the proxies' own limits would allow far more, and leaves the other host alone.
 */
class PerHostLimitTest {

    @TempDir
    Path dir;

    @Test
    void eachHostGetsAtMostItsLimitInAnyWindowWhateverTheProxies() throws Exception {
        // three proxies of 20/1s each, two hosts that would refuse only beyond 100 per second per proxy address;
        // per host 2 at once then one per 500 ms, across all proxies
        try (DemoSite site = new DemoSite(dir, 3, "20/1s", 0, DemoTarget.hiddenPerIp(100, 2, true),
                DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.hostLimit", "2/1s"))) {
            site.warmUp();
            List<String> hosts = site.target().baseUrls();
            List<String> urls = new ArrayList<>();
            for (int i = 1; i <= 16; i++) {
                urls.add(hosts.get(i % 2) + "/page/" + i);
            }
            long sent = System.nanoTime();
            scraper.scrape(urls);

            assertThat(scraper.resultLines()).hasSize(16).allMatch(l -> l.getInteger("status") == 200);
            List<Hit> pages = site.target().hits().stream().filter(h -> h.path().startsWith("/page/")).toList();
            assertThat(pages).hasSize(16);
            assertThat(pages.stream().map(Hit::ip).distinct()).as("the proxies' own addresses, more than one")
                    .hasSizeGreaterThan(1);
            for (String host : hosts) {
                String key = host.substring("http://".length());
                List<Long> times = pages.stream().filter(h -> h.host().equals(key)).map(Hit::nanos).toList();
                assertThat(times).hasSize(8);
                // the host's bucket's schedule, measured at the target: 2 at once, then 500 ms each (the proxies
                // alone would allow 60 in a second)
                assertThat(aheadOfBucket(times, 2, 1000, sent)).as("requests to %s ahead of its bucket (most in a"
                        + " second: %d)", key, maxInAnyWindow(times, 1000)).isLessThanOrEqualTo(0);
            }
        }
    }
}
