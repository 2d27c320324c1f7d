package io.tokenbucket.example;

import static io.tokenbucket.example.ScraperHarness.awaitUntil;
import static io.tokenbucket.example.ScraperRouteTest.assertEachUrlExactlyOnce;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import io.tokenbucket.example.fetch.FetchOutcome;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A 429 is the host's word about a proxy's address, unless the same URL is refused through a second proxy while the
 * host's other pages pass through both ({@link FetchOutcome}): then it is the URL's own, and it must not rest the
 * host's pairs. Both cases on real servers on loopback, checked at the target; the first scenario on both DSLs, the
 * others on the Java route ({@link ScraperRouteParityTest} shows the YAML route is the same).
 */
class RefusedPageRouteTest {

    /** Three proxies of 3 pages a second each, in bursts of 3 (their pairs: the same rate): 9 pages a second. */
    private static final int PROXIES = 3;
    private static final int PER_SECOND = 3;

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    void aPendingRestIsToldInFullWhenTheUrlsNextAttemptGetsNoToken(String dsl) throws Exception {
        // two proxies; p2's pair is penalized in its bucket alone (as another instance sharing Redis would), so the
        // first page goes through p1, whose pair then passes the host's pages. A URL refused through p1 with
        // Retry-After: 30 rests that pair one short penalty at once (the 429 may yet be the URL's own); its next
        // attempt, through p2, gets no token within example.pairMaxWait and, with no retries, ends in the dead
        // letter. No 429 of its own followed: the host's word stands, and p1's pair owes the rest of its 30 s
        try (DemoSite site = new DemoSite(dir, 2, "50/1s", 0, new DemoTarget(1000, 1000), DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of("example.pairMaxWait", "100ms",
                     "example.storeRetries", "0"))) {
            scraper.bucketOperation(scraper.pairKey("p2"), "penalize",
                    Map.of(TokenBucketConstants.PENALTY, "30s"));
            scraper.scrape(scraper.pages(1));
            assertThat(scraper.resultLines()).singleElement()
                    .satisfies(line -> assertThat(line.getString("proxy")).isEqualTo("p1"));
            scraper.scrape(List.of(site.target().baseUrl() + "/retry-after/30"));

            assertThat(scraper.deadLines()).singleElement().satisfies(line -> assertThat(line.getString("reason"))
                    .startsWith("no token within maxWait"));
            assertThat(scraper.millisUntilPairToken("p1")).as("ms until p1's pair, refused for 30 s, gives a token")
                    .isGreaterThan(25_000);
        }
    }

    @Test
    void onePageRefusedWithARetryAfterOfAYearDoesNotStallItsHost() throws Exception {
        // the application's own defaults (example.maxRetryAfter 60s, example.penalty 1s, example.maxAttempts 4) and
        // its queue's eight consumers; 59 pages and one URL the host always refuses with Retry-After of a year
        try (DemoSite site = new DemoSite(dir, PROXIES, PER_SECOND + "/1s", 0, new DemoTarget(1000, 1000),
                DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site,
                     Map.of("example.queue", "seda:urls?size=10000&concurrentConsumers=8"))) {
            site.warmUp();
            String refused = site.target().baseUrl() + "/retry-after/31536000";
            List<String> urls = new ArrayList<>(scraper.pages(59));
            urls.add(20, refused);
            long start = System.nanoTime();
            scraper.send(urls);
            awaitUntil("an outcome for each of the 60 URLs", () -> scraper.results.getReceivedCounter()
                    + scraper.dead.getReceivedCounter(), n -> n >= urls.size(), Duration.ofSeconds(200));
            double took = (System.nanoTime() - start) / 1e9;
            List<Hit> hits = site.target().hits().stream().filter(h -> !h.path().startsWith("/status/")).toList();
            // what the proxies' buckets allow for the requests the target got: three at once through each proxy,
            // then 3 a second each
            double allowed = (hits.size() - PROXIES * PER_SECOND) / (double) (PROXIES * PER_SECOND);
            System.out.printf("%s route: 60 URLs, one refused with Retry-After of a year: %.1f s (the limits allow"
                    + " %.1f s for the %d requests at the target)%n", "java", took, allowed, hits.size());

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.deadLines()).singleElement().satisfies(line -> {
                assertThat(line.getString("url")).isEqualTo(refused);
                assertThat(line.getString("reason")).as("the dead letter's reason")
                        .startsWith("HTTP 429 of this URL alone").contains("other pages of the host passed");
            });
            Map<String, Long> perUrl = hits.stream().collect(Collectors.groupingBy(Hit::path, Collectors.counting()));
            assertThat(perUrl).as("requests per URL at the target").hasSize(60)
                    .allSatisfy((path, n) -> assertThat(n).as(path).isEqualTo(path.startsWith("/retry-after/")
                            ? 4L : 1L));
            // a host stalled by the refused page would take its pairs' capped minute of rest; a loaded machine adds
            // seconds, not that
            assertThat(took).as("seconds for the run, %.1f s allowed", allowed).isLessThan(allowed + 30);
            // no pair is left resting for the year's capped minute in its bucket (with the throttle, where its rest is)
            for (String proxy : List.of("p1", "p2", "p3")) {
                assertThat(scraper.millisUntilPairToken(proxy)).as("ms until the bucket of %s's pair gives a token",
                        proxy).isLessThanOrEqualTo(1000);
            }
        }
    }

    @Test
    void aHostThatRefusesEveryPageStillRestsThePairsAndCutsTheirRates() throws Exception {
        // every URL refused through every proxy with Retry-After: 1, four attempts each over three proxies (two, and
        // two more whose 429 cut the rate): no page ever passes, so each refusal is the host's word about its pair,
        // as always: it rests the pair the 1 s asked (longer when repeated), well past one short penalty (200 ms
        // here), and cuts its rate
        try (DemoSite site = new DemoSite(dir, PROXIES, "10/1s", 0, new DemoTarget(1000, 1000),
                DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.adaptive", "true",
                     "example.pairLimit", "10/1s:2", "camel.component.tokenbucket.adaptive-start", "1.0",
                     "example.maxAttempts", "2", "example.penalty", "200ms",
                     "example.queue", "seda:urls?size=10000&concurrentConsumers=8"))) {
            List<String> urls = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                urls.add(site.target().baseUrl() + "/retry-after/1?u=" + i);
            }
            scraper.scrape(urls);

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.deadLines()).hasSize(3).allSatisfy(line -> assertThat(line.getString("reason"))
                    .as("the reason of %s", line.getString("url")).startsWith("HTTP 429 (rests "));
            List<Hit> hits = site.target().hits().stream().filter(h -> h.path().startsWith("/retry-after/")).toList();
            assertThat(hits.stream().collect(Collectors.groupingBy(Hit::target, Collectors.counting())))
                    .as("requests per URL at the target").hasSize(3).allSatisfy((url, n) -> assertThat(n).isEqualTo(4));
            // A URL tries a proxy again only after its own 429 through it was read, so after that pair's rest began,
            // which was after the first request through the proxy arrived: such a request comes at least the 1 s
            // asked after that first one
            Map<String, Long> firstThrough = hits.stream().collect(Collectors.toMap(Hit::client, Hit::nanos,
                    Math::min));
            Map<String, List<Hit>> perUrl = hits.stream().sorted(Comparator.comparingLong(Hit::nanos))
                    .collect(Collectors.groupingBy(Hit::target));
            int again = 0;
            for (List<Hit> attempts : perUrl.values()) {
                for (int i = 0; i < attempts.size(); i++) {
                    Hit hit = attempts.get(i);
                    if (attempts.subList(0, i).stream().anyMatch(h -> h.client().equals(hit.client()))) {
                        again++;
                        assertThat(TimeUnit.NANOSECONDS.toMillis(hit.nanos() - firstThrough.get(hit.client())))
                                .as("ms from the first request through %s to %s trying it again", hit.client(),
                                        hit.target()).isGreaterThanOrEqualTo(1000);
                    }
                }
            }
            assertThat(again).as("requests of a URL through a proxy it had tried: four attempts, three proxies")
                    .isGreaterThanOrEqualTo(3);
            Map<String, List<Hit>> perProxy = hits.stream().collect(Collectors.groupingBy(Hit::client));
            assertThat(perProxy).as("the proxies the target's 429s went through").isNotEmpty()
                    .allSatisfy((proxy, through) -> assertThat(scraper.pairRate(proxy)).as("the rate of %s's pair",
                            proxy).isLessThan(1.0));
            // the last refusal through a proxy rested its pair's bucket too, at least the 1 s asked: while the rest
            // runs, what is left of it and the time since that request add up to 1 s, not to one short penalty. It
            // reaches the bucket asynchronously: wait (with a deadline) until it shows
            Hit last = hits.stream().max(Comparator.comparingLong(Hit::nanos)).orElseThrow();
            awaitUntil("the rest of " + last.client() + "'s pair on its bucket", () -> {
                long untilToken = scraper.millisUntilPairToken(last.client());
                return untilToken == 0 ? 0 : untilToken + TimeUnit.NANOSECONDS.toMillis(System.nanoTime()
                        - last.nanos());
            }, ms -> ms >= 950, Duration.ofSeconds(5));
        }
    }
}
