package io.tokenbucket.example;

import static io.tokenbucket.example.ScraperRouteTest.assertEachUrlExactlyOnce;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Proxies with the manners of a real fleet ({@link DemoProxy.Mode}): one that closes its connection after every
 * response without saying so (tinyproxy), one that answers HTTP/1.0. Every fetch must succeed on its first
 * attempt, and reach the target once.
 */
class RealProxiesTest {

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0} proxies")
    @ValueSource(strings = { "close", "http10" })
    void everyFetchSucceedsOnItsFirstAttemptAndReachesTheTargetOnce(String mode) throws Exception {
        DemoProxy.Mode proxyMode = DemoProxy.Mode.of(mode);
        try (DemoSite site = new DemoSite(dir, 3, "10/100ms", 0, new DemoTarget(1000, 1000), proxyMode);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of())) {
            List<String> urls = scraper.pages(15);
            scraper.scrape(urls);

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.deadLines()).isEmpty();
            assertThat(scraper.resultLines()).allSatisfy(line -> {
                assertThat(line.getInteger("status")).isEqualTo(200);
                assertThat(line.getInteger("attempts")).as("attempts of %s", line.getString("url")).isEqualTo(1);
            });
            assertThat(scraper.stats().failures()).as("failed attempts").isZero();
            // one request per URL at the target: a fetch sent again on a fresh connection had not been forwarded
            assertThat(site.target().hits()).hasSize(urls.size()).extracting(Hit::path).doesNotHaveDuplicates();
            for (DemoProxy proxy : site.proxies()) {
                // the credentials go with the first request: no 407 round trip before every fetch
                assertThat(proxy.challenged()).as("407s from %s", proxy.id()).isZero();
                // the mode really closed: one connection per request
                assertThat(proxy.connections()).as("connections to %s", proxy.id()).isEqualTo(proxy.forwarded());
            }
            assertThat(site.proxies()).allSatisfy(proxy -> assertThat(proxy.forwarded()).isPositive());
            if (proxyMode == DemoProxy.Mode.CLOSE) {
                // the proxy said HTTP/1.1 and nothing about closing: HttpClient pooled each connection, found it
                // closed on reuse and sent the fetch again on a fresh one, which is no attempt and no failure
                assertThat(scraper.stats().staleConnections()).as("fetches sent again on a fresh connection")
                        .isPositive();
            } else {
                // an HTTP/1.0 answer without keep-alive: HttpClient does not pool the connection at all
                assertThat(scraper.stats().staleConnections()).isZero();
            }
        }
    }

    @Test
    void concurrentFetchesThroughAClosingProxyFindSeveralDeadConnectionsInThePoolAndStillSucceed()
            throws Exception {
        // eight fetches at a time through one proxy: its pool holds several connections, all closed by the proxy,
        // so a fetch sent again may lease another dead one before it gets a fresh connection
        try (DemoSite site = new DemoSite(dir, 1, "100/100ms", 0, new DemoTarget(1000, 1000), DemoProxy.Mode.CLOSE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site,
                     Map.of("example.queue", "seda:urls?size=10000&concurrentConsumers=8"))) {
            List<String> urls = scraper.pages(80);
            scraper.scrape(urls);

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.stats().failures()).as("failed attempts").isZero();
            assertThat(scraper.resultLines()).allMatch(line -> line.getInteger("attempts") == 1);
            assertThat(site.target().hits()).hasSize(urls.size());
        }
    }
}
