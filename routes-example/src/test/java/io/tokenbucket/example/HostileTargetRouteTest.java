package io.tokenbucket.example;

import static io.tokenbucket.example.ScraperHarness.awaitUntil;
import static io.tokenbucket.example.ScraperRouteTest.assertEachUrlExactlyOnce;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import io.tokenbucket.example.fetch.Scrape;
import org.apache.camel.builder.NotifyBuilder;
import org.apache.camel.util.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A hostile target and failing proxies, on real servers on loopback, on the Java route (the YAML route is the same:
 * {@link ScraperRouteParityTest}): the right party is blamed for a failure, health never touches the buckets, and a
 * target's {@code Retry-After} is capped. Checked at the target, which records every request it got per proxy with its
 * time and status.
 */
class HostileTargetRouteTest {

    @TempDir
    Path dir;

    @Test
    @SuppressWarnings("unchecked")
    void aFailingTargetCostsTheUrlItsAttemptsAndNoProxyItsHealth() throws Exception {
        // two failures in a row would take a proxy out; each bad URL is tried once on each proxy, so if the
        // target's failures were the proxies', the two bad URLs would take out all three
        try (DemoSite site = new DemoSite(dir, 3, "10/100ms", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.maxAttempts", "3",
                     "example.failuresToUnhealthy", "2", "example.cooldown", "60s"))) {
            String base = site.target().baseUrl();
            // closes without an answer (so the proxy answers 502 itself, without Via), answers 503 itself
            List<String> bad = List.of(base + "/reset", base + "/status/503");
            List<String> urls = new ArrayList<>(bad);
            urls.addAll(scraper.pages(9));
            scraper.scrape(urls);

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.pool().health()).as("nobody's health paid for the target")
                    .containsOnlyKeys("p1", "p2", "p3").allSatisfy((proxy, health) -> assertThat(health)
                            .isEqualTo("healthy"));
            assertThat(scraper.deadLines()).map(l -> l.getString("url")).containsExactlyInAnyOrderElementsOf(bad);
            Map<String, String> reasons = new HashMap<>();
            scraper.deadLines().forEach(l -> reasons.put(l.getString("url"), l.getString("reason")));
            assertThat(reasons.get(base + "/reset")).startsWith("HTTP 502 from the proxy via ");
            assertThat(reasons.get(base + "/status/503")).startsWith("HTTP 503 via ");
            // the target got each bad URL once through each proxy, and every page once, at the first attempt
            List<Hit> hits = site.target().hits();
            for (String url : bad) {
                String path = url.substring(base.length());
                assertThat(hits).filteredOn(h -> h.path().equals(path)).as("requests for %s", path)
                        .extracting(Hit::client).containsExactlyInAnyOrder("p1", "p2", "p3");
            }
            assertThat(hits).filteredOn(h -> h.path().equals("/reset"))
                    .allMatch(h -> h.status() == DemoTarget.NO_ANSWER);
            assertThat(scraper.resultLines()).hasSize(9).allMatch(l -> l.getInteger("attempts") == 1);
        }
    }

    @Test
    void aProxyAnswering5xxItselfIsBlamedOnceItsUrlsAnswerThroughOthers() throws Exception {
        // p2 answers 503 itself (no Via) to everything, as a broken proxy does. Unclear at first (a proxy's own
        // 5xx often says the target is down); each time its URL is then fetched through another proxy, p2 is blamed
        try (DemoSite site = new DemoSite(dir, 3, "10/100ms", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.choose", "roundrobin",
                     "example.failuresToUnhealthy", "2", "example.cooldown", "60s"))) {
            site.proxies().get(1).answerNext(Integer.MAX_VALUE, 503);
            List<String> urls = scraper.pages(12);
            scraper.scrape(urls);

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.deadLines()).isEmpty();
            assertThat(scraper.pool().health().get("p2")).startsWith("DOWN");
            assertThat(scraper.pool().health()).containsEntry("p1", "healthy").containsEntry("p3", "healthy");
            assertThat(site.target().hits()).as("nothing got through p2").noneMatch(h -> h.client().equals("p2"))
                    .hasSize(12);
            // p2 was offered URLs until its second blame, then no more
            assertThat(scraper.stats().failures()).isBetween(2L, 4L);
        }
    }

    @Test
    void aProxyTakenOutAndBroughtBackNeverPassesMoreThanItsBucketAllows() throws Exception {
        // p1: 3 at once, then 12 per second. The first batch books its turns on p1's bucket at once (about 1.3 s
        // of them); once the target has seen six of them (a few more may pass before the proxy is told) p1 answers
        // three 407s itself: it goes unhealthy with the rest of the first batch still booked, and is back 200 ms
        // later. If that reset its bucket, the retries and the second batch would get 3 at once and 12 per second
        // on top of the turns still booked
        try (DemoSite site = new DemoSite(dir, 1, "3/250ms", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.cooldown", "200ms",
                     "example.failuresToUnhealthy", "3"))) {
            List<String> urls = scraper.pages(36);
            NotifyBuilder first = scraper.send(urls.subList(0, 18));
            assertThat(site.target().awaitHits(6, 10_000)).isTrue();
            site.proxies().get(0).answerNext(3, 407);
            // wait (with a deadline) until the three 407s are counted: p1 is out, most of the first batch booked
            awaitUntil("three failures counted", () -> scraper.stats().failures(), n -> n >= 3, Duration.ofSeconds(10));
            assertThat(scraper.stats().failures()).isEqualTo(3);
            long refused = System.nanoTime(); // the three 407s had their tokens before
            NotifyBuilder second = scraper.send(urls.subList(18, 36));
            scraper.await(first, 18);
            scraper.await(second, 18);

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.deadLines()).isEmpty();
            List<Long> times = site.target().hits().stream().map(Hit::nanos).sorted().toList();
            assertThat(times).hasSize(36);
            // Every request reached the target after its token, and every token came after the first URL entered
            // the route: so by any arrival the bucket had granted at least the requests arrived so far (plus, from
            // `refused` on, the three that got 407s), and since `began` it grants at most 3 + 12 per second. A late
            // request only arrives later, which this bound allows however late it is. The bucket is booked from the
            // first URL to the last, so the bound is close; a reset bucket's 3 at once and 12 per second on top of
            // the turns still booked go well over it
            long began = scraper.results.getReceivedExchanges().stream()
                    .mapToLong(e -> e.getProperty(Scrape.START_NANOS, Long.class)).min().orElseThrow();
            long interval = TimeUnit.MILLISECONDS.toNanos(250) / 3;
            List<String> over = new ArrayList<>();
            for (int i = 0; i < times.size(); i++) {
                long arrived = times.get(i);
                long granted = i + 1 + (arrived - refused >= 0 ? 3 : 0);
                long allowed = 3 + (arrived - began) / interval;
                if (granted > allowed) {
                    over.add(String.format("%d granted by %d ms (%d allowed)", granted,
                            TimeUnit.NANOSECONDS.toMillis(arrived - began), allowed));
                }
            }
            assertThat(over).as("requests at the target beyond what p1's bucket can have granted since the first URL")
                    .isEmpty();
        }
    }

    @Test
    void aRetryAfterOfAYearRestsTheProxyOnlyMaxRetryAfter() throws Exception {
        try (DemoSite site = new DemoSite(dir, 1, "10/1s", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.maxRetryAfter", "1s",
                     "example.maxAttempts", "1"))) {
            String hostile = site.target().baseUrl() + "/retry-after/31536000";
            scraper.scrape(List.of(hostile));

            assertThat(scraper.deadLines()).singleElement().satisfies(l -> assertThat(l.getString("reason"))
                    .isEqualTo("HTTP 429 (rests 1000 ms) via p1"));
            // the rest is the pair's bucket's (the throttle is on); the penalty reaches it asynchronously: wait (with a
            // deadline) until it shows
            long untilToken = awaitUntil("the penalty on the bucket of p1 at the target",
                    () -> scraper.millisUntilPairToken("p1"),
                    ms -> ms > 0, Duration.ofSeconds(5));
            assertThat(untilToken).as("ms until p1's bucket gives a token").isBetween(1L, 1000L);

            scraper.scrape(scraper.pages(1));

            List<Hit> hits = site.target().hits();
            assertThat(hits).hasSize(2);
            assertThat(hits.get(1).status()).isEqualTo(200);
            long restedMs = TimeUnit.NANOSECONDS.toMillis(hits.get(1).nanos() - hits.get(0).nanos());
            // the rest starts once the 429 is read, so no slack below; above, seconds for a loaded machine, far
            // from the year asked (or the default cap's minute)
            assertThat(restedMs).as("ms between the 429 and the next request via p1").isBetween(1000L, 10_000L);
            JsonObject page = scraper.resultLines().get(0);
            assertThat(page.getString("proxy")).isEqualTo("p1");
        }
    }
}
