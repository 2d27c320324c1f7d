package io.tokenbucket.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import io.tokenbucket.testsupport.redis.RedisClusterHandle;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.Test;

/**
 * In-flight caps across JVMs, measured at the target: instances of the example application, each a JVM of its own,
 * share one Redis (or a 3-master Redis Cluster) and fetch slow pages through real forward proxies; the target counts
 * the requests it is answering at once per proxy address and per host. A killed instance's slots come back after
 * the lease time, and not before.
 */
class InFlightFleetIT {

    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    private static final Path DIR = Path.of(System.getProperty("basedir", "."), "target", "e2e");

    @Test
    void threeInstancesOnOneRedisNeverPassAProxysOrAHostsCap() throws Exception {
        try (RedisHandle redis = RedisServers.standalone()) {
            fleet("inflight-redis", redis.uri());
        }
    }

    @Test
    void threeInstancesOnARedisClusterNeverPassAProxysOrAHostsCap() throws Exception {
        try (RedisClusterHandle cluster = RedisServers.cluster()) {
            fleet("inflight-cluster", "redis-cluster://" + cluster.uris().stream()
                    .map(u -> u.substring("redis://".length())).collect(Collectors.joining(",")));
        }
    }

    /** Three instances, 20 slow pages each over two hosts; each proxy 2 in flight, each host 3. */
    private void fleet(String label, String redisUri) throws Exception {
        Path runDir = fresh(label);
        try (DemoSite site = new DemoSite(runDir, 3, "100/1s,2inflight", 0, DemoTarget.hiddenPerIp(1000, 2, true),
                DemoProxy.Mode.KEEPALIVE)) {
            List<String> hosts = site.target().baseUrls();
            List<ExampleInstance> instances = new ArrayList<>();
            try {
                for (int i = 1; i <= 3; i++) {
                    List<String> urls = new ArrayList<>();
                    for (int n = 1; n <= 20; n++) {
                        urls.add(hosts.get(n % 2) + "/delay/150?instance=" + i + "&n=" + n);
                    }
                    Path urlFile = Files.write(runDir.resolve("urls-" + i + ".txt"), urls);
                    instances.add(ExampleInstance.start(label + "-" + i, runDir, Map.of(
                            "example.proxyFile", site.proxyFile().toString(), "example.urlFile", urlFile.toString(),
                            "example.redisUri", redisUri, "example.hostInFlight", "3", "example.proxyLimit", "100/1s")));
                }
                for (ExampleInstance instance : instances) {
                    assertThat(instance.awaitExit(RUN_TIMEOUT)).as(instance.logTail()).isZero();
                    assertThat(instance.results()).as(instance.logTail()).hasSize(20)
                            .allMatch(r -> r.getInteger("status") == 200);
                }
            } finally {
                for (ExampleInstance instance : instances) {
                    instance.close();
                }
            }
            long busiestProxy = 0;
            for (int i = 1; i <= 3; i++) {
                long peak = site.target().peakConcurrent(DemoSite.sourceAddress(i), null);
                assertThat(peak).as("requests through p%d at once, all instances together", i)
                        .isLessThanOrEqualTo(2);
                busiestProxy = Math.max(busiestProxy, peak);
            }
            long busiestHost = 0;
            for (String host : hosts) {
                long peak = site.target().peakConcurrent(null, host.substring("http://".length()));
                assertThat(peak).as("requests to %s at once, all instances together", host).isLessThanOrEqualTo(3);
                busiestHost = Math.max(busiestHost, peak);
            }
            assertThat(busiestProxy).as("a proxy's cap reached").isEqualTo(2);
            assertThat(busiestHost).as("a host's cap reached").isEqualTo(3);
            System.out.printf("%s: 3 JVMs, 60 pages of 150 ms, most at once per proxy %d (cap 2), per host %d"
                    + " (cap 3)%n", label, busiestProxy, busiestHost);
        }
    }

    /**
     * Two instances, one slot, each a slow page: whichever gets the slot first holds it (and renews its lease) while
     * the other waits. Once the slot has outlived a lease, with its holder alive and the other not let through (so
     * the lease was renewed), the holder is killed: the slot reaches the other one only after what was left of the
     * lease. Both start together, so the holder's page (10 s, the target's longest) is still being answered when the
     * other is ready, even where a JVM takes seconds to start.
     */
    @Test
    void aKilledInstancesSlotComesBackAfterItsLeaseAndNotBefore() throws Exception {
        Path runDir = fresh("inflight-kill");
        long leaseMs = 3000;
        try (RedisHandle redis = RedisServers.standalone();
             DemoSite site = new DemoSite(runDir, 1, "100/1s,1inflight", 0, DemoTarget.hiddenPerIp(1000, 1, true),
                     DemoProxy.Mode.KEEPALIVE)) {
            String host = site.target().baseUrls().get(0);
            Map<String, String> common = Map.of("example.proxyFile", site.proxyFile().toString(),
                    "example.redisUri", redis.uri(), "camel.component.tokenbucket.in-flight-lease", leaseMs + "ms");
            List<ExampleInstance> both = new ArrayList<>();
            try {
                for (String who : List.of("a", "b")) {
                    Path urls = Files.write(runDir.resolve("urls-" + who + ".txt"),
                            List.of(host + "/delay/10000?who=" + who));
                    both.add(ExampleInstance.start("slot-" + who, runDir, with(common, urls)));
                }
                Hit held = firstHit(site, both);
                int holding = held.query().equals("who=a") ? 0 : 1;
                ExampleInstance holder = both.get(holding);
                ExampleInstance waiter = both.get(1 - holding);
                String waiterQuery = holding == 0 ? "who=b" : "who=a";
                awaitStarted(waiter); // its URL then waits for the slot the holder has
                // the slot outlives a lease while its holder runs: only a renewed lease keeps the waiter out
                long outlived = held.nanos() + TimeUnit.MILLISECONDS.toNanos(leaseMs * 4 / 3);
                while (System.nanoTime() - outlived < 0) {
                    site.target().awaitHits(site.target().hits().size() + 1, 50);
                }
                assertThat(holder.isAlive()).as("%s still fetching its page when killed%s", holder.name(),
                        holder.logTail()).isTrue();
                long killed = System.nanoTime();
                holder.kill();
                assertThat(site.target().hits()).as("requests of the waiting instance while the holder lived")
                        .noneMatch(h -> waiterQuery.equals(h.query()) && h.nanos() - killed < 0);
                assertThat(waiter.awaitExit(RUN_TIMEOUT)).as(waiter.logTail()).isZero();
                Hit admitted = site.target().hits().stream().filter(h -> waiterQuery.equals(h.query()))
                        .findFirst().orElseThrow(() -> new AssertionError("the waiter never fetched"
                                + waiter.logTail()));
                long afterKillMs = TimeUnit.NANOSECONDS.toMillis(admitted.nanos() - killed);
                // the holder renewed its lease every third of it while it ran, so the slot expires between two
                // thirds and the whole of the lease after the kill (a second less for a renewal held up on a loaded
                // machine); the waiter tries every 20 ms (3 s more for it on such a machine)
                assertThat(afterKillMs).as("ms from the kill to the waiter's request at the target")
                        .isGreaterThanOrEqualTo(leaseMs * 2 / 3 - 1000 - 100).isLessThan(leaseMs + 3000);
                System.out.printf("inflight-kill: lease %d ms, the killed instance's slot reached the other one"
                        + " %d ms after the SIGKILL%n", leaseMs, afterKillMs);
            } finally {
                for (ExampleInstance instance : both) {
                    instance.close();
                }
            }
        }
    }

    /** The first request at the target of the instances' slow pages (each page's query is {@code who=...}). */
    private static Hit firstHit(DemoSite site, List<ExampleInstance> instances) throws Exception {
        long deadline = System.nanoTime() + RUN_TIMEOUT.toNanos();
        while (true) {
            java.util.Optional<Hit> first = site.target().hits().stream()
                    .filter(h -> h.query() != null && h.query().startsWith("who=")).findFirst();
            if (first.isPresent()) {
                return first.get();
            }
            if (System.nanoTime() > deadline || instances.stream().noneMatch(ExampleInstance::isAlive)) {
                throw new AssertionError("neither instance fetched its page" + instances.get(0).logTail()
                        + instances.get(1).logTail());
            }
            site.target().awaitHits(site.target().hits().size() + 1, 100);
        }
    }

    /** Waits until {@code instance} is starting its routes (its log says so). */
    private static void awaitStarted(ExampleInstance instance) {
        long deadline = System.nanoTime() + RUN_TIMEOUT.toNanos();
        while (!instance.log().contains("Property-placeholders summary")) { // logged as its routes start
            if (System.nanoTime() > deadline || !instance.isAlive()) {
                throw new AssertionError(instance.name() + " did not start" + instance.logTail());
            }
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    private static Map<String, String> with(Map<String, String> common, Path urlFile) {
        Map<String, String> all = new java.util.HashMap<>(common);
        all.put("example.urlFile", urlFile.toString());
        return all;
    }

    private static Path fresh(String label) throws Exception {
        Path runDir = DIR.resolve(label);
        if (Files.exists(runDir)) {
            try (Stream<Path> old = Files.walk(runDir)) {
                old.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return Files.createDirectories(runDir);
    }
}
