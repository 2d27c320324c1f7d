package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * In-flight caps as a proxy provider sells them and a host asks for: each proxy's {@code limit=...,2inflight} in the
 * proxy file and {@code example.hostInFlight} bound the requests the target is answering at once, per proxy address
 * and per host, counted by the target (slow pages, so that requests overlap) while the rates would allow far more.
 */
class InFlightCapsTest {

    @TempDir
    Path dir;

    @Test
    void theTargetNeverAnswersMoreAtOnceThanAProxysOrAHostsCap() throws Exception {
        try (DemoSite site = new DemoSite(dir, 3, "100/1s,2inflight", 0, DemoTarget.hiddenPerIp(1000, 2, true),
                DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.hostInFlight", "3",
                     "example.proxyLimit", "100/1s", "example.queue", "seda:urls?size=10000&concurrentConsumers=12"))) {
            site.warmUp();
            List<String> hosts = site.target().baseUrls();
            List<String> urls = new ArrayList<>();
            for (int i = 1; i <= 30; i++) {
                urls.add(hosts.get(i % 2) + "/delay/150?n=" + i);
            }
            scraper.scrape(urls);

            assertThat(scraper.resultLines()).hasSize(30).allMatch(l -> l.getInteger("status") == 200);
            long busiestProxy = 0;
            for (int i = 1; i <= 3; i++) {
                long peak = site.target().peakConcurrent(DemoSite.sourceAddress(i), null);
                assertThat(peak).as("requests through p%d at once", i).isLessThanOrEqualTo(2);
                busiestProxy = Math.max(busiestProxy, peak);
            }
            long busiestHost = 0;
            for (String host : hosts) {
                long peak = site.target().peakConcurrent(null, host.substring("http://".length()));
                assertThat(peak).as("requests to %s at once", host).isLessThanOrEqualTo(3);
                busiestHost = Math.max(busiestHost, peak);
            }
            // the caps were reached, so they are what bound the overlap (30 slow pages, 6 proxy slots, 2 x 3 host ones)
            assertThat(busiestProxy).isEqualTo(2);
            assertThat(busiestHost).isEqualTo(3);
        }
    }
}
