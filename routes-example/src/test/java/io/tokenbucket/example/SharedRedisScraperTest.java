package io.tokenbucket.example;

import static io.tokenbucket.example.ScraperRouteTest.maxInAnyWindow;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import io.tokenbucket.store.redis.RedisHandle;
import io.tokenbucket.store.redis.RedisServers;
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
                // never more than burst + rate * window (+1 for rounding) in any second, both instances together;
                // two instances each with a bucket of its own would allow twice that
                assertThat(maxInAnyWindow(times, 1000)).as("most requests via %s in a second", proxy)
                        .isLessThanOrEqualTo(2 + 4 + 1);
                // and the requests after the burst took their 250 ms each (generous for a noisy machine)
                assertThat(TimeUnit.NANOSECONDS.toMillis(times.get(times.size() - 1) - times.get(0)))
                        .as("span of the %d requests via %s", times.size(), proxy)
                        .isGreaterThanOrEqualTo((times.size() - 2) * 250L * 8 / 10);
            }
            // 36 URLs, 6 at once, then 12 per second over the three proxies: at least 2.5 s in all
            long span = TimeUnit.NANOSECONDS.toMillis(hits.get(hits.size() - 1).nanos() - hits.get(0).nanos());
            assertThat(span).as("span of all requests, ms").isGreaterThanOrEqualTo(2_000);
        }
    }

    @Test
    void a429PenalisesTheProxysSharedBucketSoTheOtherInstanceWaitsToo() throws Exception {
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
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            long untilToken;
            do {
                untilToken = b.millisUntilToken("p1");
            } while (untilToken == 0 && System.nanoTime() < deadline);
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
    void anUnhealthyProxysBucketIsRemovedSoItComesBackFull() throws Exception {
        try (DemoSite site = new DemoSite(dir, 1, "3/10s", 0, 1000, 1000);
             ScraperHarness a = new ScraperHarness("java", dir, site, shared(3,
                     Map.of("example.failuresToUnhealthy", "1", "example.maxAttempts", "1")))) {
            a.scrape(a.pages(2)); // two of p1's three tokens: the next one after them would take 3.3 s
            assertThat(a.millisUntilToken("p1")).isZero();
            String url = site.target().baseUrl() + "/status/502";
            a.scrape(List.of(url)); // the last token; the 502 makes p1 unhealthy and its bucket is removed

            assertThat(a.pool().health().get("p1")).startsWith("DOWN");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (a.millisUntilToken("p1") > 0 && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
            // a bucket that was not removed would be empty: 3.3 s until its next token
            assertThat(a.millisUntilToken("p1")).as("ms until p1's next token after its removal").isZero();
            assertThat(a.deadLines()).singleElement().satisfies(l -> assertThat(l.getString("reason"))
                    .contains("HTTP 502"));
        }
    }
}
