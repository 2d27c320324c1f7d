package io.tokenbucket.example;

import static io.tokenbucket.example.ScraperRouteTest.assertEachUrlExactlyOnce;
import static io.tokenbucket.example.ScraperRouteTest.maxInAnyWindow;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import org.apache.camel.builder.NotifyBuilder;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 12, items 10 and 11, on real servers on loopback, both DSLs: the right party is blamed for a failure,
 * health never touches the buckets, and a target's {@code Retry-After} is capped. Checked at the target, which
 * records every request it got per proxy with its time and status.
 */
class HostileTargetRouteTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    void aProxyTakenOutAndBroughtBackNeverPassesMoreThanItsBucketAllows(String dsl) throws Exception {
        // p1: 3 at once, then 12 per second. The first batch books its turns on p1's bucket at once (about 1.3 s
        // of them); after six of them p1 answers three 407s itself: it goes unhealthy with the rest of the first
        // batch still booked, and is back 200 ms later. If that reset its bucket, the retries and the second batch
        // would get 3 at once and 12 per second on top of the turns still booked
        try (DemoSite site = new DemoSite(dir, 1, "3/250ms", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of("example.cooldown", "200ms",
                     "example.failuresToUnhealthy", "3"))) {
            List<String> urls = scraper.pages(36);
            NotifyBuilder first = scraper.send(urls.subList(0, 18));
            assertThat(site.target().awaitHits(6, 10_000)).isTrue();
            site.proxies().get(0).answerNext(3, 407);
            // wait (with a deadline) until the three 407s are counted: p1 is out, most of the first batch booked
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (scraper.stats().failures() < 3 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            assertThat(scraper.stats().failures()).isEqualTo(3);
            NotifyBuilder second = scraper.send(urls.subList(18, 36));
            scraper.await(first, 18);
            scraper.await(second, 18);

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.deadLines()).isEmpty();
            List<Long> times = site.target().hits().stream().map(Hit::nanos).sorted().toList();
            assertThat(times).hasSize(36);
            // never more than burst + rate * window (+1 for rounding) in any half second, at the target
            assertThat(maxInAnyWindow(times, 500)).as("most requests via p1 in 500 ms").isLessThanOrEqualTo(3 + 6 + 1);
        }
    }
}
