package io.tokenbucket.example;

import static io.tokenbucket.example.ScraperHarness.awaitUntil;
import static io.tokenbucket.example.ScraperRouteTest.aheadOfBucket;
import static io.tokenbucket.example.ScraperRouteTest.maxInAnyWindow;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.builder.NotifyBuilder;
import org.apache.camel.util.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two scraper instances (two Camel contexts, the Java route in one and the YAML route in the other) with
 * {@code example.redisUri} pointing at one real {@code redis-server}: what several instances of the application
 * sharing a store do. Measured where it matters, at the demo target.
 */
class SharedRedisScraperTest {

    static RedisHandle redis;

    @TempDir
    Path dir;

    @BeforeAll
    static void startRedis() throws Exception {
        redis = RedisServers.standalone();
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    /** Each test its own Redis database: buckets of one test never meet another's. */
    private static Map<String, String> shared(int database, Map<String, String> more) {
        Map<String, String> overrides = new HashMap<>(more);
        overrides.put("example.redisUri", redis.uri() + "/" + database);
        return overrides;
    }

    @Test
    void twoInstancesTogetherHoldEachProxysRateAtTheTarget() throws Exception {
        // each proxy 2 at once then 4/s for both instances together; the target would refuse only beyond 50/s
        try (DemoSite site = new DemoSite(dir, 3, "2/500ms", 0, 50, 1000);
             ScraperHarness a = new ScraperHarness("java", dir, site, shared(1, Map.of()));
             ScraperHarness b = new ScraperHarness("yaml", dir, site, shared(1, Map.of()))) {
            List<String> pages = a.pages(36);
            List<String> forA = new ArrayList<>();
            List<String> forB = new ArrayList<>();
            for (int i = 0; i < pages.size(); i++) {
                (i % 2 == 0 ? forA : forB).add(pages.get(i));
            }
            long sent = System.nanoTime();
            NotifyBuilder aDone = a.send(forA);
            NotifyBuilder bDone = b.send(forB);
            a.await(aDone, forA.size());
            b.await(bDone, forB.size());

            // each URL once, by the instance it was sent to, and fetched once (the target saw one 200 per URL)
            assertThat(a.resultLines()).map(l -> l.getString("url")).containsExactlyInAnyOrderElementsOf(forA);
            assertThat(b.resultLines()).map(l -> l.getString("url")).containsExactlyInAnyOrderElementsOf(forB);
            assertThat(a.deadLines()).isEmpty();
            assertThat(b.deadLines()).isEmpty();
            List<Hit> hits = site.target().hits();
            assertThat(hits).hasSize(36).allMatch(h -> h.status() == 200);
            for (String proxy : List.of("p1", "p2", "p3")) {
                List<Long> times = hits.stream().filter(h -> h.client().equals(proxy)).map(Hit::nanos).toList();
                // both instances used every proxy: the limit really was shared, not just split
                assertThat(Stream.of(a, b).map(s -> s.stats().fetchedByProxy().getOrDefault(proxy, 0L)))
                        .as("URLs via %s per instance", proxy).allMatch(n -> n > 0);
                // the shared bucket's schedule, both instances together, measured at the target: 2 at once, then
                // 250 ms each; two instances each with a bucket of its own would run a burst and more ahead of it
                assertThat(aheadOfBucket(times, 2, 500, sent)).as("requests via %s ahead of its bucket (most in a"
                        + " second: %d)", proxy, maxInAnyWindow(times, 1000)).isLessThanOrEqualTo(0);
            }
        }
    }

    @Test
    void a429PenalisesThePairsSharedBucketSoTheOtherInstanceWaitsToo() throws Exception {
        // one proxy, a bucket that would allow 10 per second, a target that allows 2 per second and answers the
        // third with 429 and Retry-After: 1
        try (DemoSite site = new DemoSite(dir, 1, "10/1s", 0, 2, 1000);
             ScraperHarness a = new ScraperHarness("java", dir, site, shared(2, Map.of()));
             ScraperHarness b = new ScraperHarness("yaml", dir, site, shared(2, Map.of()))) {
            NotifyBuilder aDone = a.send(a.pages(3));
            assertThat(site.target().awaitHits(3, 20_000)).isTrue();
            Hit refused = site.target().hits().get(2);
            assertThat(refused.status()).isEqualTo(429);

            // instance A sends penalize to the shared bucket; B never saw the 429, and its own pool still calls
            // p1 healthy. Wait (with a deadline) until B's view of the shared bucket shows the penalty
            long untilToken = awaitUntil("instance B to see the penalty on the bucket of p1 at the target",
                    () -> b.millisUntilPairToken("p1"),
                    ms -> ms > 0, Duration.ofSeconds(5));
            assertThat(untilToken).as("ms until p1's next token, seen by instance B").isPositive();
            assertThat(b.pool().health().get("p1")).isEqualTo("healthy");

            b.scrape(a.pages(4).subList(3, 4)); // page 4, through p1, the only proxy
            a.await(aDone, 3);

            JsonObject bLine = b.resultLines().get(0);
            assertThat(bLine.getInteger("status")).isEqualTo(200);
            assertThat(bLine.getInteger("attempts")).as("B never met the 429").isEqualTo(1);
            assertThat(bLine.getLong("waitedMs")).as("B waited in the bucket for the penalty").isPositive();
            // nothing reached the target through p1 until the penalty (from A's 429) was over: not B's page, not
            // A's retry of page 3. The penalty starts after the 429 was answered, so no slack is needed.
            List<Hit> hits = site.target().hits();
            assertThat(hits).hasSize(5);
            assertThat(hits.subList(3, 5)).allSatisfy(h -> {
                assertThat(TimeUnit.NANOSECONDS.toMillis(h.nanos() - refused.nanos())).as("ms after the 429")
                        .isGreaterThanOrEqualTo(1_000);
                assertThat(h.status()).isEqualTo(200);
            });
            assertThat(a.resultLines()).hasSize(3).allMatch(l -> l.getInteger("status") == 200);
            assertThat(a.stats().tooManyRequests()).isEqualTo(1);
        }
    }

    @Test
    void aProxyLeavingOneInstancesFileKeepsThePenaltyAnotherInstanceStored() throws Exception {
        // one proxy, a bucket that would allow 10 per second; a target that asks it to rest 2 s. B reads a proxy
        // file of its own, with the same p1
        Path bFile = dir.resolve("b-proxies.txt");
        try (DemoSite site = new DemoSite(dir, 1, "10/1s", 0, 1000, 1000);
             ScraperHarness a = new ScraperHarness("java", dir, site, shared(3, Map.of("example.maxAttempts", "1")));
             ScraperHarness b = new ScraperHarness("yaml", dir, site, shared(3, Map.of("example.proxyFile",
                     Files.copy(site.proxyFile(), bFile).toString())))) {
            a.scrape(List.of(site.target().baseUrl() + "/retry-after/2"));
            Hit refused = site.target().hits().get(0);
            assertThat(refused.status()).isEqualTo(429);
            // A's penalize reaches Redis asynchronously
            awaitUntil("instance B to see A's penalty on the bucket of p1 at the target",
                    () -> b.millisUntilPairToken("p1"), ms -> ms > 0,
                    Duration.ofSeconds(5));

            // B's operator takes p1 out of B's proxy file, then puts it back: B forgets p1's health, not its bucket
            String lines = Files.readString(bFile);
            Files.writeString(bFile, "# p1 out for a moment\n");
            b.pool().refresh();
            assertThat(b.pool().ids()).isEmpty();
            Files.writeString(bFile, lines);
            b.pool().refresh();
            assertThat(b.pool().health()).containsEntry("p1", "healthy");
            assertThat(b.millisUntilPairToken("p1")).as("ms until p1's next token: the penalty A stored").isPositive();

            b.scrape(a.pages(1)); // through p1, which B's own pool never saw answer 429

            List<Hit> hits = site.target().hits();
            assertThat(hits).hasSize(2);
            assertThat(hits.get(1).status()).isEqualTo(200);
            // the page reached the target only once the 2 s A's 429 asked for were over (no slack: the penalty
            // starts after the 429 was answered)
            assertThat(TimeUnit.NANOSECONDS.toMillis(hits.get(1).nanos() - refused.nanos())).as("ms after the 429")
                    .isGreaterThanOrEqualTo(2_000);
        }
    }
}
