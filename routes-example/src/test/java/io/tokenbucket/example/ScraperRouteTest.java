package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import io.tokenbucket.example.fetch.ProxyChooser;
import io.tokenbucket.example.fetch.Scrape;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Processor;
import org.apache.camel.util.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The scraper route against real servers on loopback: a target with its own rate limit and three Jetty
 * forward proxies with credentials. {@link ScraperRouteParityTest} shows the YAML route is the Java route step for
 * step; the scenarios of the parts it checks by what they do rather than by their steps (the fetch's {@code doCatch},
 * both exception handlers, the choice of results or dead letter) run on both DSLs, the others on the Java route.
 */
class ScraperRouteTest {

    @TempDir
    Path dir;

    @Test
    void rotatesAndHoldsEachProxysRateAtTheTarget() throws Exception {
        // each proxy 2 at once then 4/s; the target would only refuse beyond 20/s, so any 429 is a failure.
        // example.choose=roundrobin: the proxies in turn, so the proxy of each URL is known in advance
        try (DemoSite site = new DemoSite(dir, 3, "2/500ms", 30, 20, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.choose", "roundrobin"))) {
            site.warmUp(); // the proxies' first forwards load Jetty's client: late, they would flatter the check below
            List<String> urls = scraper.pages(30);
            long sent = System.nanoTime();
            scraper.scrape(urls);

            assertEachUrlExactlyOnce(scraper, urls);
            for (JsonObject line : scraper.resultLines()) {
                String url = line.getString("url");
                int page = Integer.parseInt(url.substring(url.lastIndexOf('/') + 1));
                assertThat(line.getString("proxy")).as("proxy of %s", url).isEqualTo("p" + ((page - 1) % 3 + 1));
                assertThat(line.getInteger("status")).isEqualTo(200);
                assertThat(line.getInteger("attempts")).isEqualTo(1);
                assertThat(line.getLong("bytes")).isPositive();
            }
            List<Hit> hits = site.target().hits().stream().filter(h -> h.path().startsWith("/page/")).toList();
            assertThat(hits).allMatch(h -> h.status() == 200);
            for (String proxy : List.of("p1", "p2", "p3")) {
                List<Long> times = hits.stream().filter(h -> h.client().equals(proxy)).map(Hit::nanos).toList();
                assertThat(times).as("requests via %s", proxy).hasSize(10);
                // the bucket's schedule, measured at the target: 2 at once, then 250 ms each (so the 10th no
                // sooner than 2 s after the URLs were sent)
                assertThat(aheadOfBucket(times, 2, 500, sent)).as("requests via %s ahead of its bucket (most in a"
                        + " second: %d)", proxy, maxInAnyWindow(times, 1000)).isLessThanOrEqualTo(0);
            }
            assertThat(scraper.resultLines()).allMatch(l -> l.getLong("waitedMs") >= 0);
            // the route's bookkeeping stays with the route: the proxy id is no header the target gets
            assertThat(site.target().headerNames()).contains("via", "host").doesNotContain("proxyid")
                    .noneMatch(name -> name.startsWith("camel"));
        }
    }

    @Test
    void theFreestProxyTakesTheUrlWhileASlowOneRefills() throws Exception {
        // p1 allows one URL per 5 s, p2 and p3 four per second each. In round robin every third URL would wait
        // for p1 (the 7th of 20 for 30 s); the freest choice sends them to p2 and p3 instead
        try (DemoSite site = new DemoSite(dir, 3, null, 0, 1000, 1000)) {
            List<DemoProxy> proxies = site.proxies();
            Files.writeString(site.proxyFile(), proxies.get(0).line() + " limit=1/5s\n" + proxies.get(1).line()
                    + " limit=4/1s\n" + proxies.get(2).line() + " limit=4/1s\n");
            try (ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of())) {
                List<String> urls = scraper.pages(20);
                long start = System.nanoTime();
                scraper.scrape(urls);
                long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

                assertEachUrlExactlyOnce(scraper, urls);
                Map<String, Long> fetched = scraper.stats().fetchedByProxy();
                // p1's one token, and at most one more if the run were slow enough to reach its next one
                assertThat(fetched.getOrDefault("p1", 0L)).as("URLs via the slow p1").isBetween(1L, 2L);
                assertThat(fetched.get("p2") + fetched.get("p3")).isGreaterThanOrEqualTo(18);
                // 8 at once, then 12 at 8 per second: about 1.5 s of waiting, never p1's 5 s
                assertThat(scraper.resultLines()).allMatch(l -> l.getInteger("attempts") == 1)
                        .allMatch(l -> l.getLong("waitedMs") < 4_000);
                assertThat(tookMs).as("the whole run, ms").isLessThan(15_000);
                List<Hit> hits = site.target().hits();
                for (String proxy : List.of("p2", "p3")) {
                    List<Long> times = hits.stream().filter(h -> h.client().equals(proxy)).map(Hit::nanos).toList();
                    assertThat(aheadOfBucket(times, 4, 1000, start)).as("requests via %s ahead of its bucket (most"
                            + " in a second: %d)", proxy, maxInAnyWindow(times, 1000)).isLessThanOrEqualTo(0);
                }
            }
        }
    }

    @Test
    void failsOverWhenAProxyDiesMidRun() throws Exception {
        try (DemoSite site = new DemoSite(dir, 3, "5/200ms", 60, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site,
                     Map.of("example.failuresToUnhealthy", "2", "example.cooldown", "60s"))) {
            List<String> urls = scraper.pages(60);
            Thread killer = new Thread(() -> {
                try {
                    // mid-run: once the target has seen 12 requests, p2 goes away
                    assertThat(site.target().awaitHits(12, 20_000)).isTrue();
                    site.proxies().get(1).stop();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            killer.start();
            scraper.scrape(urls);
            killer.join();

            // p2 may die between forwarding a request and relaying its answer: that URL is fetched again elsewhere,
            // and the target rightly sees it twice, once via p2
            assertEachUrlExactlyOnce(scraper, urls, "p2");
            assertThat(scraper.deadLines()).isEmpty();
            Map<String, Long> fetched = scraper.stats().fetchedByProxy();
            assertThat(fetched.get("p2")).isLessThan(20);
            assertThat(fetched.get("p1") + fetched.get("p3")).isGreaterThan(40);
            assertThat(scraper.resultLines()).anyMatch(l -> l.getInteger("attempts") > 1);
            assertThat(scraper.pool().health().get("p2")).startsWith("DOWN");
            assertThat(scraper.pool().health().get("p1")).isEqualTo("healthy");
        }
    }

    @Test
    void a429RestsTheProxyForItsRetryAfter() throws Exception {
        // no throttle and a strict target (3 per second per proxy): 429s are certain
        try (DemoSite site = new DemoSite(dir, 3, null, 24, 3, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site,
                     Map.of("example.throttle", "false", "example.maxAttempts", "30"))) {
            List<String> urls = scraper.pages(24);
            scraper.scrape(urls);

            assertEachUrlExactlyOnce(scraper, urls);
            List<Hit> hits = site.target().hits();
            long refused = hits.stream().filter(h -> h.status() == 429).count();
            assertThat(refused).isPositive();
            assertThat(scraper.stats().tooManyRequests()).isEqualTo(refused);
            // after a 429 (Retry-After: 1) the proxy rests for that second. Attempts that had chosen it before the
            // 429 came back (waiting URLs do not hold the queue, so several are in flight) may still arrive in the
            // first 200 ms; after that, nothing until the second is over.
            for (Hit refusedHit : hits) {
                if (refusedHit.status() != 429) {
                    continue;
                }
                assertThat(hits).filteredOn(h -> h.client().equals(refusedHit.client()))
                        .as("requests via %s while it rests after its 429", refusedHit.client())
                        .noneMatch(h -> h.nanos() - refusedHit.nanos() > TimeUnit.MILLISECONDS.toNanos(200)
                                && h.nanos() - refusedHit.nanos() < TimeUnit.MILLISECONDS.toNanos(900));
            }
        }
    }

    @Test
    void withTheThrottleA429RestsThePairInItsBucketAndTheOtherProxiesServeTheHost() throws Exception {
        // the throttle on (the default): the pair's bucket is its rest, the pool keeps none beside it. One URL
        // refused with Retry-After: 5, then pages of the same host: none goes through the refused pair for the 5 s, and
        // the others serve them meanwhile (5 s: room for a loaded machine between the 429 and the pages)
        try (DemoSite site = new DemoSite(dir, 3, "5/1s", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.maxAttempts", "1"))) {
            scraper.scrape(List.of(site.target().baseUrl() + "/retry-after/5"));
            assertThat(scraper.deadLines()).singleElement().satisfies(line -> assertThat(line.getString("reason"))
                    .startsWith("HTTP 429 (rests 5000 ms) via "));
            List<String> pages = scraper.pages(20);
            scraper.scrape(pages);

            assertThat(scraper.resultLines()).hasSize(pages.size());
            List<Hit> hits = site.target().hits();
            Hit refused = hits.stream().filter(h -> h.status() == 429).findFirst().orElseThrow();
            // the rest starts once the 429 is read, so no slack below
            assertThat(hits).filteredOn(h -> h.client().equals(refused.client()) && h != refused)
                    .as("requests via %s while its pair rests", refused.client())
                    .allSatisfy(h -> assertThat(TimeUnit.NANOSECONDS.toMillis(h.nanos() - refused.nanos()))
                            .isGreaterThanOrEqualTo(5000));
            assertThat(hits).filteredOn(h -> !h.client().equals(refused.client())
                    && h.nanos() - refused.nanos() < TimeUnit.SECONDS.toNanos(5))
                    .as("pages through the other proxies meanwhile").isNotEmpty();
            assertThat(scraper.pool().candidates(List.of(), scraper.host()))
                    .as("the pool keeps no rest beside the bucket's").hasSize(3);
        }
    }

    @Test
    void withRoundRobinTheTurnSkipsARestingPairInsteadOfWaitingForItsBucket() throws Exception {
        // the pool chooses in turn: it keeps the pair's rest itself, so that no URL of the host lands on the pair and
        // waits out its bucket's penalty (the bucket is told too, for the other instances)
        try (DemoSite site = new DemoSite(dir, 3, "5/1s", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site,
                     Map.of("example.maxAttempts", "1", "example.choose", "roundrobin"))) {
            scraper.scrape(List.of(site.target().baseUrl() + "/retry-after/2"));
            String reason = scraper.deadLines().get(0).getString("reason");
            assertThat(reason).startsWith("HTTP 429 (rests 2000 ms) via ");
            String refusedProxy = reason.substring("HTTP 429 (rests 2000 ms) via ".length()).trim();
            assertThat(scraper.pool().candidates(List.of(), scraper.host()))
                    .as("the pool's turn skips the resting pair").hasSize(2).doesNotContain(refusedProxy);
            List<String> pages = scraper.pages(12);
            scraper.scrape(pages);

            assertThat(scraper.resultLines()).hasSize(pages.size());
            assertThat(scraper.resultLines()).filteredOn(l -> l.getString("proxy").equals(refusedProxy))
                    .as("pages that went through %s: none waited out its rest", refusedProxy)
                    .allSatisfy(l -> assertThat(l.getLong("waitedMs")).isLessThan(1000));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    @SuppressWarnings("unchecked")
    void aUrlThatFailsEverywhereGoesToTheDeadLetterWithItsReason(String dsl) throws Exception {
        try (DemoSite site = new DemoSite(dir, 3, "10/100ms", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site,
                     Map.of("example.maxAttempts", "3", "example.failuresToUnhealthy", "100"))) {
            List<String> urls = new ArrayList<>(scraper.pages(9));
            String broken = site.target().baseUrl() + "/status/503";
            String missing = site.target().baseUrl() + "/status/404";
            urls.add(3, broken);
            urls.add(missing);
            scraper.scrape(urls);

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.deadLines()).singleElement().satisfies(dead -> {
                assertThat(dead.getString("url")).isEqualTo(broken);
                assertThat(dead.getString("reason")).contains("HTTP 503");
                assertThat(dead.getInteger("attempts")).isEqualTo(3);
                // each attempt on another proxy
                assertThat((List<Object>) List.copyOf(dead.getCollection("proxies"))).containsExactlyInAnyOrder((Object) "p1", "p2", "p3");
            });
            // a 404 is the URL's own answer: a result, not a proxy failure
            assertThat(scraper.resultLines()).filteredOn(l -> l.getString("url").equals(missing))
                    .singleElement().satisfies(l -> assertThat(l.getInteger("status")).isEqualTo(404));
            assertThat(site.target().hits().stream().filter(h -> h.path().equals("/status/503")).count())
                    .isEqualTo(3);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    void aUrlWhoseBucketStoreStaysDownGoesToTheDeadLetterAfterItsRedeliveries(String dsl) throws Exception {
        try (RedisHandle redis = RedisServers.standalone();
             DemoSite site = new DemoSite(dir, 2, "10/100ms", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of("example.redisUri", redis.uri(),
                     "example.storeRetries", "3", "example.storeRetryDelay", "20"))) {
            redis.stop(); // the endpoint connected when it started; now its store is gone
            List<String> urls = scraper.pages(2);
            scraper.scrape(urls);

            // onStoreError=fail: nothing admitted without a token, so nothing reached the target
            assertThat(site.target().hits()).isEmpty();
            assertThat(scraper.resultLines()).isEmpty();
            assertThat(scraper.deadLines()).hasSize(2).allSatisfy(dead -> assertThat(dead.getString("reason"))
                    .startsWith("bucket store unavailable for 60 ms: "));
            assertThat(scraper.stats().deadLetters()).isEqualTo(2);
            // the store's failure is no proxy's fault
            assertThat(scraper.pool().health().values()).containsOnly("healthy");
        }
    }

    @Test
    void aRedisDownAtStartThenKilledMidRunAndStartedAgainLosesNoUrlAndFetchesNoneTwice() throws Exception {
        // onStoreError=fail (the default): a URL waits for Redis, trying again every 50 ms for up to 60 s
        try (RedisHandle redis = RedisServers.standalone();
             DemoSite site = new DemoSite(dir, 2, "5/1s", 0, 1000, 1000)) {
            redis.stop();
            try (ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.redisUri",
                    redis.uri(), "example.storeRetries", "1200", "example.storeRetryDelay", "50"))) {
                List<String> urls = scraper.pages(30);
                org.apache.camel.builder.NotifyBuilder done = scraper.send(urls);
                ScraperHarness.awaitUntil("every URL in the route, waiting for Redis", () -> scraper.context
                        .getInflightRepository().size(ScraperRoute.ROUTE_ID), n -> n == urls.size(),
                        java.time.Duration.ofSeconds(20));
                assertThat(site.target().hits()).as("fetched without Redis").isEmpty();
                redis.start();
                ScraperHarness.awaitUntil("10 pages fetched", () -> scraper.resultLines().size(), n -> n >= 10,
                        java.time.Duration.ofSeconds(60));
                redis.stop();
                int atKill = site.target().hits().size();
                redis.start();
                scraper.await(done, urls.size());

                assertEachUrlExactlyOnce(scraper, urls);
                assertThat(scraper.resultLines()).as("every URL fetched").hasSize(urls.size());
                assertThat(site.target().hits()).as("requests at the target (%d when Redis was killed)", atKill)
                        .hasSize(urls.size());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    void aUrlWhoseRouteFailsUnexpectedlyGoesToTheDeadLetterWithTheError(String dsl) throws Exception {
        try (DemoSite site = new DemoSite(dir, 2, "10/100ms", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of(), context -> {
                 // a step outside the fetch's try block that throws for one URL, as a bug or a bad bean would
                 Processor chooser = context.getRegistry().lookupByNameAndType(ProxyChooser.BEAN, Processor.class);
                 context.getRegistry().unbind(ProxyChooser.BEAN);
                 context.getRegistry().bind(ProxyChooser.BEAN, Processor.class, (Processor) exchange -> {
                     if (String.valueOf(exchange.getProperty(Scrape.URL)).endsWith("/page/1")) {
                         throw new IllegalStateException("a step failed");
                     }
                     chooser.process(exchange);
                 });
             })) {
            List<String> urls = scraper.pages(3);
            scraper.scrape(urls);

            assertEachUrlExactlyOnce(scraper, urls);
            assertThat(scraper.deadLines()).singleElement().satisfies(dead -> {
                assertThat(dead.getString("url")).contains("/page/1");
                assertThat(dead.getString("reason"))
                        .isEqualTo("the route failed: IllegalStateException: a step failed");
            });
            assertThat(scraper.resultLines()).hasSize(2);
            assertThat(scraper.stats().deadLetters()).isEqualTo(1);
        }
    }

    /** Nothing lost, nothing twice: each URL has exactly one outcome, and no line holds a credential. */
    static void assertEachUrlExactlyOnce(ScraperHarness scraper, List<String> urls) {
        assertEachUrlExactlyOnce(scraper, urls, null);
    }

    /**
     * {@link #assertEachUrlExactlyOnce(ScraperHarness, List)} for a run in which proxy {@code died} was stopped:
     * a request it forwarded whose answer it never relayed is fetched again through another proxy, so the target
     * may see a URL answered twice, if all but one of those answers went via {@code died} (null: none may).
     */
    static void assertEachUrlExactlyOnce(ScraperHarness scraper, List<String> urls, String died) {
        List<String> outcomes = Stream.concat(scraper.resultLines().stream(), scraper.deadLines().stream())
                .map(l -> l.getString("url")).toList();
        assertThat(outcomes).containsExactlyInAnyOrderElementsOf(urls);
        Stream.concat(scraper.results.getReceivedExchanges().stream(), scraper.dead.getReceivedExchanges().stream())
                .map(e -> e.getMessage().getBody(String.class))
                .forEach(line -> assertThat(line).doesNotContain("s3cret").endsWith("\n"));
        // a fetched URL was fetched once: the target saw one 200 per URL (beyond it, only answers the dead proxy lost)
        Map<String, List<String>> answeredVia = scraper.site.target().hits().stream().filter(h -> h.status() == 200)
                .collect(Collectors.groupingBy(Hit::target, Collectors.mapping(Hit::client, Collectors.toList())));
        answeredVia.forEach((target, clients) -> {
            long lost = clients.stream().filter(c -> c.equals(died)).count();
            assertThat(clients.size() - 1).as("%s answered again via %s", target, clients)
                    .isLessThanOrEqualTo(died == null ? 0 : (int) lost);
        });
        assertThat((long) answeredVia.size())
                .isEqualTo(scraper.resultLines().stream().filter(l -> l.getInteger("status") == 200).count());
    }

    /**
     * How far the requests at {@code nanos} ran ahead of a bucket of {@code capacity} at once, then
     * {@code capacity} per {@code periodMillis}, whose first token was given no earlier than {@code notBeforeNanos}:
     * the largest {@code k - (capacity + (t_k - notBefore) / interval)} over the {@code k}-th request, at
     * {@code t_k}. Not positive when the bucket held: the {@code k}-th request cannot arrive before the {@code k}-th
     * token is due. A late release or a slow forward only delays an arrival, so a loaded machine needs no allowance
     * here, unlike a count per window (requests held up reach the target bunched with the next ones). A millisecond
     * is taken off {@code notBeforeNanos} for a store that counts on a clock of its own.
     */
    static int aheadOfBucket(List<Long> nanos, int capacity, long periodMillis, long notBeforeNanos) {
        List<Long> sortedNanos = nanos.stream().sorted().toList();
        long intervalNanos = TimeUnit.MILLISECONDS.toNanos(periodMillis) / capacity;
        long first = notBeforeNanos - TimeUnit.MILLISECONDS.toNanos(1);
        int worst = Integer.MIN_VALUE;
        for (int k = 1; k <= sortedNanos.size(); k++) {
            long since = Math.max(0, sortedNanos.get(k - 1) - first);
            worst = Math.max(worst, k - (capacity + (int) (since / intervalNanos)));
        }
        return worst;
    }

    /**
     * A moment no later than the first token of any URL of {@code lines}: a URL takes its tokens after it entered
     * the route, {@code elapsedMs} before its line, and its line comes after its last request reached the target.
     * So the earliest {@code last request - elapsedMs} (less a millisecond: the line truncates) will do.
     */
    static long firstTokenNotAfter(List<Hit> hits, List<JsonObject> lines) {
        return lines.stream().mapToLong(line -> {
            String path = java.net.URI.create(line.getString("url")).getPath();
            long last = hits.stream().filter(h -> h.path().equals(path)).mapToLong(Hit::nanos).max()
                    .orElseThrow(() -> new AssertionError("no request at the target for " + path));
            return last - TimeUnit.MILLISECONDS.toNanos(line.getLong("elapsedMs") + 1);
        }).min().orElseThrow();
    }

    static int maxInAnyWindow(List<Long> sortedNanos, long windowMillis) {
        long window = TimeUnit.MILLISECONDS.toNanos(windowMillis);
        int best = 0;
        int start = 0;
        for (int end = 0; end < sortedNanos.size(); end++) {
            while (sortedNanos.get(end) - sortedNanos.get(start) >= window) {
                start++;
            }
            best = Math.max(best, end - start + 1);
        }
        return best;
    }
}
