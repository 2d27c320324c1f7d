package io.tokenbucket.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import io.tokenbucket.testsupport.redis.RedisClusterHandle;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.util.json.JsonObject;
import org.junit.jupiter.api.Test;

/**
 * Scenarios 1 to 4 of the end-to-end proof: three instances of the example application, each a JVM of its own
 * started from the built jars ({@link ExampleInstance}), each fed a third of the URLs, sharing one real Redis (or a
 * real 3-master Redis Cluster) and fetching through three real forward proxies from a target that records every
 * request with its proxy and time. Everything is measured at the target.
 *
 * <p>Each proxy's bucket: 3 at once, then 3 per second, for the three instances together, checked at the target
 * against the bucket's schedule from its first token ({@link TargetLoad#worstLead}: the {@code k}-th request via a
 * proxy arrives no earlier than the {@code k}-th token is due; three buckets of their own would run ahead of it
 * within the first second). The target itself answers 429 to a proxy over 15 requests in a second: above what the
 * shared bucket lets arrive (6 in a second, a few more when releases or first fetches are late and bunch), far
 * below what the instances send without a throttle (24 fetches at once).
 */
class DistributedScrapingIT {

    private static final int URLS = 90;
    private static final int INSTANCES = 3;
    private static final String PROXY_LIMIT = "3/1s";
    private static final TargetLoad BUCKET = new TargetLoad(3, 1000);
    private static final int TARGET_LIMIT = 15;
    private static final List<String> PROXIES = List.of("p1", "p2", "p3");
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    /**
     * The instance started during an outage books its tokens at most a second ahead (maxWait; a URL booked out is
     * redelivered to the throttle every 200 ms): it keeps asking the store until its last URL, so it shows when the
     * store answers again after the restart, whatever the policy.
     */
    private static final Map<String, String> LATE_INSTANCE = Map.of("camel.component.tokenbucket.max-wait", "1s",
            "example.storeRetryDelay", "200", "example.storeRetries", "10000");

    /** Kept after the run: each instance's log, results and dead letters, under target/e2e/<scenario>. */
    private static final Path DIR = Path.of(System.getProperty("basedir", "."), "target", "e2e");

    @Test
    void threeInstancesOnOneRedisHoldEachProxysLimitAtTheTarget() throws Exception {
        try (RedisHandle redis = RedisServers.standalone()) {
            Outcome run = scrape("redis", redis.uri(), Map.of(), fleet -> { });

            run.assertEveryUrlFetchedOnce();
            run.assertNo429s();
            run.assertEveryInstanceUsedEveryProxy();
            run.assertBoundHolds(PROXIES);
            run.print("1. 3 JVMs, one Redis", "");
        }
    }

    @Test
    void threeInstancesOnARedisClusterHoldEachProxysLimitAtTheTarget() throws Exception {
        try (RedisClusterHandle cluster = RedisServers.cluster()) {
            String uri = "redis-cluster://" + cluster.uris().stream().map(u -> u.substring("redis://".length()))
                    .collect(Collectors.joining(","));
            Map<String, Long> keysPerNode = new HashMap<>();
            Outcome run = scrape("cluster", uri, Map.of(), fleet -> {
                // mid-run, where the buckets are: all in the slot of the example's hash tag {scraper}, one node
                assertThat(fleet.site().target().awaitHits(20, RUN_TIMEOUT.toMillis())).isTrue();
                for (RedisHandle node : cluster.nodes()) {
                    keysPerNode.put(node.uri(), (long) ((List<?>) node.command("KEYS", "tokenbucket:*")).size());
                }
            });

            run.assertEveryUrlFetchedOnce();
            run.assertNo429s();
            run.assertEveryInstanceUsedEveryProxy();
            run.assertBoundHolds(PROXIES);
            assertThat(keysPerNode.values()).as("bucket keys per cluster node, mid-run").filteredOn(n -> n > 0)
                    .singleElement();
            run.print("2. 3 JVMs, 3-master Redis Cluster", "; bucket keys per node mid-run " + keysPerNode.values());
        }
    }

    @Test
    void redisDiesMidRunWithOnStoreErrorFailNothingIsAdmittedWithoutATokenAndTheRunCompletes() throws Exception {
        try (RedisHandle redis = RedisServers.standalone()) {
            Outage outage = new Outage(redis, false);
            Outcome run = scrape("fail", URLS, redis.uri(), Map.of("camel.component.tokenbucket.on-store-error", "fail"),
                    true, outage::run);

            // every URL has an outcome, fetched once: the late instance's exchanges that failed during the outage
            // were redelivered by the route's error handler until Redis was back
            run.assertEveryUrlFetchedOnce();
            run.assertNo429s();
            // nothing admitted without a token: none of the late instance's URLs reached the target while Redis
            // was dead (the others had booked their turns before)
            assertThat(outage.lateHitsDuringOutage(run)).as("requests of the instance that started during the"
                    + " outage, while Redis was dead").isZero();
            assertThat(outage.lateInstanceFailures).as("store failures the late instance logged").isPositive();
            // a Redis that comes back without its data forgets every turn booked in it (the reference: buckets
            // start full after Redis loses its data), so the turns the first instances booked before the kill and
            // those the late instance took from the new Redis each hold the bound, not both together
            Predicate<Hit> late = outage.lateHits();
            // the late instance's tokens all come from the new Redis: none before it was started again
            run.assertBoundHolds(PROXIES, late, outage.restartCalledAt, " of the instance started during the outage");
            run.assertBoundHolds(PROXIES, late.negate(), Long.MIN_VALUE, " of the instances started before it");
            assertThat(outage.recoveryMillis).as("ms from restart to the first bucket in Redis").isBetween(0L, 10_000L);
            run.print("3a. Redis killed mid-run, onStoreError=fail", outage.describe(run));
        }
    }

    @Test
    void redisDiesMidRunWithOnStoreErrorLocalTheRunContinuesThrottledLocally() throws Exception {
        try (RedisHandle redis = RedisServers.standalone()) {
            Outage outage = new Outage(redis, true);
            // twice the URLs: the late instance, throttled by local buckets during the outage, must still be busy
            // when Redis is back
            Outcome run = scrape("local", 2 * URLS, redis.uri(), Map.of("camel.component.tokenbucket.on-store-error",
                    "local"), true, outage::run);

            // the target may refuse some (a local bucket beside the shared one allows more): those URLs take another
            // attempt; each still ends fetched or dead-lettered, and fetched once
            run.assertEveryUrlHasOneOutcome();
            // the late instance went on with local buckets while Redis was dead
            assertThat(outage.lateHitsDuringOutage(run)).as("requests of the instance that started during the"
                    + " outage, while Redis was dead").isPositive();
            // throttled: the late instance's requests took their tokens from its local bucket (from its first
            // token) and, once Redis was back, from the new Redis's (shared, from the restart): per proxy, no more
            // than those two buckets grant, however late its requests (the instances started before it mix the lost
            // Redis's booked turns, local buckets of their own and the new Redis's: their windows are printed)
            Predicate<Hit> late = outage.lateHits();
            long lateFirst = Math.max(outage.killedAt, TargetLoad.firstGrantNoEarlierThan(run.hits, late,
                    Stream.concat(run.results.stream(), run.dead.stream()).toList()));
            for (String proxy : PROXIES) {
                assertThat(BUCKET.worstLead(run.hits, h -> h.client().equals(proxy) && late.test(h), lateFirst,
                        outage.restartCalledAt)).as("requests of the instance started during the outage via %s, ahead"
                                + " of its local bucket's and the new Redis's schedules together", proxy)
                        .isLessThanOrEqualTo(0);
            }
            // and the late instance's store went back to Redis once it was up again
            assertThat(outage.recoveryMillis).as("ms from restart to the first bucket in Redis").isBetween(0L, 10_000L);
            run.print("3b. Redis killed mid-run, onStoreError=local", outage.describe(run));
        }
    }

    @Test
    void aProxyDiesMidRunItsUrlsMoveToTheOthersAndTheLimitsHold() throws Exception {
        try (RedisHandle redis = RedisServers.standalone()) {
            long[] stoppedAt = new long[2]; // when p3's stop began, when it was over
            Outcome run = scrape("proxy", redis.uri(), Map.of(), fleet -> {
                assertThat(fleet.site().target().awaitHits(20, RUN_TIMEOUT.toMillis())).isTrue();
                stoppedAt[0] = System.nanoTime();
                fleet.site().proxies().get(2).stop();
                stoppedAt[1] = System.nanoTime();
            });

            // each URL one outcome, fetched: a URL whose request through p3 reached the target while p3 was dying
            // lost its answer on the way back, so it was fetched again elsewhere (at least once, as HTTP through a
            // dying proxy goes); no other URL was fetched twice
            assertThat(run.results).map(l -> l.getString("url")).containsExactlyInAnyOrderElementsOf(run.urls);
            assertThat(run.dead).isEmpty();
            Map<String, Long> fetches = TargetLoad.fetchesPerPath(run.hits);
            for (Map.Entry<String, Long> twice : fetches.entrySet()) {
                if (twice.getValue() > 1) {
                    assertThat(run.hits).as("requests for %s, fetched %d times", twice.getKey(), twice.getValue())
                            .filteredOn(h -> h.path().equals(twice.getKey()) && h.status() == 200)
                            .hasSize(2).first().satisfies(h -> {
                                assertThat(h.client()).isEqualTo("p3");
                                assertThat(h.nanos()).isLessThanOrEqualTo(stoppedAt[1]);
                            });
                }
            }
            long twice = fetches.values().stream().filter(n -> n > 1).count();
            run.assertNo429s();
            assertThat(run.hits).filteredOn(h -> h.client().equals("p3") && h.nanos() > stoppedAt[1]).isEmpty();
            // the URLs that met the dead proxy were fetched through another one
            assertThat(run.results).anyMatch(l -> l.getInteger("attempts") > 1);
            long viaP3 = run.results.stream().filter(l -> "p3".equals(l.getString("proxy"))).count();
            assertThat(viaP3).as("URLs fetched via p3 before it died").isLessThan(URLS / 3);
            run.assertBoundHolds(List.of("p1", "p2"));
            run.print("4. p3 killed mid-run", "; fetched via p3 before it died " + viaP3 + ", retried URLs "
                    + run.results.stream().filter(l -> l.getInteger("attempts") > 1).count() + ", fetched twice"
                    + " (answer lost as p3 died) " + twice);
        }
    }

    /** What happens while the instances run (in the test's thread); returns when it is done. */
    @FunctionalInterface
    private interface MidRun {
        void during(Fleet fleet) throws Exception;
    }

    /** The site and the instances of a run; the last instance starts when {@link #startLast()} is called. */
    private interface Fleet {
        DemoSite site();

        /** Starts the last instance (only when the scenario holds it back); returns it. */
        ExampleInstance startLast() throws Exception;
    }

    /**
     * Scenario 3's outage. Each instance books every URL's turn in its first second (a waiting exchange holds its
     * reservation, not a thread), so an outage later in the run meets no request from the instances already running.
     * So: Redis is killed once the target has seen 20 requests of the first two instances; the third instance starts
     * while it is dead and sends all its URLs into the outage; Redis comes back (same port, no data, no script) once
     * that instance has sent them and met the store's failures for 3 seconds (fail), or fetched its first URL with a
     * local bucket and a second more (local). Recovery: from the restart to the first
     * bucket key in the new Redis.
     */
    private static final class Outage {
        private final RedisHandle redis;
        private ExampleInstance late;
        private long killedAt;
        private long restartCalledAt;
        private long restartedAt;
        private long recoveryMillis = -1;
        private long lateInstanceFailures;

        private final boolean local;

        /** @param local whether the policy is local (the late instance then fetches during the outage) */
        Outage(RedisHandle redis, boolean local) {
            this.redis = redis;
            this.local = local;
        }

        void run(Fleet fleet) throws Exception {
            assertThat(fleet.site().target().awaitHits(20, RUN_TIMEOUT.toMillis())).isTrue();
            redis.stop();
            killedAt = System.nanoTime();
            late = fleet.startLast();
            long deadline = System.nanoTime() + RUN_TIMEOUT.toNanos();
            while (!late.log().contains("Sending ") && late.isAlive() && System.nanoTime() < deadline) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
            assertThat(late.log()).as("the late instance, started while Redis is dead, sent its URLs")
                    .contains("Sending ");
            if (!local) {
                Thread.sleep(3_000); // the rest of the outage: the late instance meets the dead store for 3 s
            } else {
                // local: the outage lasts until the late instance's first URL, throttled locally, reached the
                // target, and a second more
                List<String> lateUrls = Files.readAllLines(late.urlFile()).stream()
                        .map(u -> URI.create(u).getPath()).toList();
                deadline = System.nanoTime() + RUN_TIMEOUT.toNanos();
                while (fleet.site().target().hits().stream().noneMatch(h -> lateUrls.contains(h.path()))
                        && System.nanoTime() < deadline) {
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
                }
                Thread.sleep(1_000); // the rest of the outage
            }
            lateInstanceFailures = late.log().lines().filter(l -> l.contains("Cannot reconnect")
                    || l.contains("Connection refused")).count();
            restartCalledAt = System.nanoTime();
            redis.start();
            restartedAt = System.nanoTime();
            deadline = restartedAt + TimeUnit.SECONDS.toNanos(30);
            while ((Long) redis.command("DBSIZE") == 0 && System.nanoTime() < deadline) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
            if ((Long) redis.command("DBSIZE") > 0) {
                recoveryMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restartedAt);
            }
        }

        /** The requests of the URLs of the instance started during the outage. */
        Predicate<Hit> lateHits() {
            Set<String> lateUrls = late.results().stream().map(l -> URI.create(l.getString("url")).getPath())
                    .collect(Collectors.toSet());
            return h -> lateUrls.contains(h.path());
        }

        /** Requests at the target, between the kill and the restart, of the URLs of the instance started then. */
        long lateHitsDuringOutage(Outcome run) {
            Predicate<Hit> lateHits = lateHits();
            return run.hits.stream().filter(h -> h.nanos() > killedAt && h.nanos() < restartedAt
                    && lateHits.test(h)).count();
        }

        String describe(Outcome run) {
            long during = run.hits.stream().filter(h -> h.nanos() > killedAt && h.nanos() < restartedAt).count();
            return "; Redis dead for " + TimeUnit.NANOSECONDS.toMillis(restartedAt - killedAt) + " ms from "
                    + TimeUnit.NANOSECONDS.toMillis(killedAt - run.began) + " ms into the run; requests at the target"
                    + " during the outage " + during + " (of them from the instance started in it: "
                    + lateHitsDuringOutage(run) + "); recovery (restart to first bucket in Redis) "
                    + (recoveryMillis < 0 ? "none within 30 s" : recoveryMillis + " ms");
        }
    }

    /**
     * Runs {@link #INSTANCES} instances, each with a third of the URLs, against a new demo site, and waits until
     * each has ended by itself (every URL of its share has an outcome).
     */
    private Outcome scrape(String label, String redisUri, Map<String, String> settings, MidRun midRun)
            throws Exception {
        return scrape(label, URLS, redisUri, settings, false, midRun);
    }

    /**
     * @param count    how many URLs, shared out evenly
     * @param holdLast true: the last instance starts only when {@code midRun} calls {@link Fleet#startLast()}
     */
    private Outcome scrape(String label, int count, String redisUri, Map<String, String> settings,
                           boolean holdLast, MidRun midRun) throws Exception {
        Path runDir = DIR.resolve(label);
        if (Files.exists(runDir)) {
            try (Stream<Path> old = Files.walk(runDir)) {
                old.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        Files.createDirectories(runDir);
        try (DemoSite site = new DemoSite(runDir, PROXIES.size(), PROXY_LIMIT, count, TARGET_LIMIT, 1000)) {
            List<String> urls = Files.readAllLines(site.urlFile()).stream().filter(l -> !l.isBlank()).toList();
            List<ExampleInstance> instances = new ArrayList<>();
            List<Map<String, String>> configs = new ArrayList<>();
            for (int i = 0; i < INSTANCES; i++) {
                Path share = runDir.resolve("urls-" + (i + 1) + ".txt");
                int first = i;
                Files.write(share, urls.stream().filter(u -> urls.indexOf(u) % INSTANCES == first).toList());
                Map<String, String> all = new HashMap<>(settings);
                all.put("example.proxyFile", site.proxyFile().toString());
                all.put("example.urlFile", share.toString());
                all.put("example.redisUri", redisUri);
                if (holdLast && i == INSTANCES - 1) {
                    all.putAll(LATE_INSTANCE);
                }
                configs.add(all);
            }
            try {
                int now = holdLast ? INSTANCES - 1 : INSTANCES;
                for (int i = 0; i < now; i++) {
                    instances.add(ExampleInstance.start(label + "-" + (i + 1), runDir, configs.get(i)));
                }
                long began = System.nanoTime();
                midRun.during(new Fleet() {
                    @Override
                    public DemoSite site() {
                        return site;
                    }

                    @Override
                    public ExampleInstance startLast() throws Exception {
                        ExampleInstance last = ExampleInstance.start(label + "-" + INSTANCES, runDir,
                                configs.get(INSTANCES - 1));
                        instances.add(last);
                        return last;
                    }
                });
                assertThat(instances).as("instances started").hasSize(INSTANCES);
                for (ExampleInstance instance : instances) {
                    assertThat(instance.awaitExit(RUN_TIMEOUT)).as("exit code of %s%s", instance,
                            instance.logTail()).isZero();
                }
                long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began);
                List<Hit> hits = site.target().hits();
                // for a look after a failure: what the target saw, ms since the run began
                Files.write(runDir.resolve("target-hits.tsv"), hits.stream().map(h -> TimeUnit.NANOSECONDS.toMillis(
                        h.nanos() - began) + "\t" + h.client() + "\t" + h.path() + "\t" + h.status()).toList());
                return new Outcome(urls, hits, instances, began, millis);
            } finally {
                for (ExampleInstance instance : instances) {
                    instance.close();
                }
            }
        }
    }

    /** A finished run: the URLs, what the target saw, what each instance wrote. */
    private static final class Outcome {
        final List<String> urls;
        final List<Hit> hits;
        final List<ExampleInstance> instances;
        final List<JsonObject> results;
        final List<JsonObject> dead;
        final Map<String, Long> fetchMillis;
        final long began;
        final long millis;

        Outcome(List<String> urls, List<Hit> hits, List<ExampleInstance> instances, long began, long millis) {
            this.began = began;
            this.urls = urls;
            this.hits = hits;
            this.instances = instances;
            this.results = instances.stream().flatMap(i -> i.results().stream()).toList();
            this.dead = instances.stream().flatMap(i -> i.deadLetters().stream()).toList();
            // each fetched URL's fetch, from the step right after the throttle to the answer (printed only)
            this.fetchMillis = TargetLoad.fetchMillisByPath(results);
            this.millis = millis;
        }

        void assertEveryUrlHasOneOutcome() {
            assertThat(Stream.concat(results.stream(), dead.stream()).map(l -> l.getString("url")))
                    .as("URLs with an outcome (fetched or dead-lettered)").containsExactlyInAnyOrderElementsOf(urls);
            assertThat(TargetLoad.fetchesPerPath(hits).values()).as("200s per URL at the target").containsOnly(1L);
        }

        void assertEveryUrlFetchedOnce() {
            assertEveryUrlHasOneOutcome();
            assertThat(dead).as("dead letters").isEmpty();
            assertThat(TargetLoad.fetchesPerPath(hits)).as("URLs fetched at the target").hasSize(urls.size());
        }

        void assertNo429s() {
            assertThat(hits).as("requests the target refused").noneMatch(h -> h.status() == 429);
        }

        void assertEveryInstanceUsedEveryProxy() {
            // the limit was shared, not split: every instance fetched through every proxy
            for (ExampleInstance instance : instances) {
                assertThat(instance.results().stream().map(l -> l.getString("proxy")).distinct())
                        .as("proxies %s fetched through", instance.name()).containsExactlyInAnyOrderElementsOf(PROXIES);
            }
        }

        void assertBoundHolds(List<String> proxies) {
            assertBoundHolds(proxies, h -> true, Long.MIN_VALUE, "");
        }

        /**
         * The bucket's schedule, over the hits that {@code which} takes, from their first token: no earlier than
         * their URLs' starts allow ({@link TargetLoad#firstGrantNoEarlierThan}) nor than {@code notBefore};
         * {@code whose} says which in the failure message.
         */
        void assertBoundHolds(List<String> proxies, Predicate<Hit> which, long notBefore, String whose) {
            long first = Math.max(notBefore, TargetLoad.firstGrantNoEarlierThan(hits, which, results));
            for (String proxy : proxies) {
                assertThat(BUCKET.worstLead(hits, h -> h.client().equals(proxy) && which.test(h), first))
                        .as("most requests%s via %s at the target ahead of the bucket's schedule from %d ms into the"
                                + " run (%s; see %s)", whose, proxy, TimeUnit.NANOSECONDS.toMillis(first - began),
                                TargetLoad.perProxy(hits), "target-hits.tsv")
                        .isLessThanOrEqualTo(0);
            }
        }

        void print(String scenario, String more) {
            String windows = PROXIES.stream().map(p -> p + " " + TargetLoad.maxInAnyWindow(hits, h -> h.client()
                    .equals(p), 1_000) + "/" + TargetLoad.maxInAnyWindow(hits, h -> h.client().equals(p), 5_000))
                    .collect(Collectors.joining(", "));
            List<Long> transits = fetchMillis.values().stream().sorted().toList();
            System.out.printf("[e2e] %s: %d URLs, %d fetched, %d dead-lettered, %d x 429, requests per proxy %s;"
                    + " most per 1 s / 5 s window %s (bucket bound %d / %d, plus 1 per 333 ms a request was late);"
                    + " fetch p50 %d ms, max %d ms; %d ms in all%s%n", scenario, urls.size(), results.size(),
                    dead.size(), hits.stream().filter(h -> h.status() == 429).count(), TargetLoad.perProxy(hits), windows,
                    BUCKET.bound(1_000), BUCKET.bound(5_000), transits.isEmpty() ? 0 : transits.get(transits.size() / 2),
                    transits.isEmpty() ? 0 : transits.get(transits.size() - 1), millis, more);
        }
    }
}
