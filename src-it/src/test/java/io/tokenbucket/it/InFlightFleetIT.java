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
            Path slow = Files.write(runDir.resolve("urls-holder.txt"), List.of(host + "/delay/10000?who=holder"));
            Path quick = Files.write(runDir.resolve("urls-waiter.txt"), List.of(host + "/delay/10?who=waiter"));
            try (ExampleInstance holder = ExampleInstance.start("holder", runDir, with(common, slow));
                 ExampleInstance waiter = startWhenHolderFetches(site, runDir, with(common, quick))) {
                awaitStarted(waiter); // its URL then waits for the slot the holder has
                long killed = System.nanoTime();
                holder.kill();
                assertThat(waiter.awaitExit(RUN_TIMEOUT)).as(waiter.logTail()).isZero();
                Hit admitted = site.target().hits().stream().filter(h -> "who=waiter".equals(h.query()))
                        .findFirst().orElseThrow(() -> new AssertionError("the waiter never fetched"
                                + waiter.logTail()));
                long afterKillMs = TimeUnit.NANOSECONDS.toMillis(admitted.nanos() - killed);
                // the holder renewed its lease every third of it while it ran: the slot expires between two thirds
                // and the whole of the lease after the kill, and the waiter tries every 20 ms
                assertThat(afterKillMs).as("ms from the kill to the waiter's request at the target")
                        .isGreaterThanOrEqualTo(leaseMs * 2 / 3 - 100).isLessThan(leaseMs + 3000);
                System.out.printf("inflight-kill: lease %d ms, the killed instance's slot reached the other one"
                        + " %d ms after the SIGKILL%n", leaseMs, afterKillMs);
            }
        }
    }

    /** Starts the waiter once the holder's slow page is at the target (the holder holds the only slot). */
    private static ExampleInstance startWhenHolderFetches(DemoSite site, Path runDir, Map<String, String> settings)
            throws Exception {
        long deadline = System.nanoTime() + RUN_TIMEOUT.toNanos();
        while (site.target().hits().stream().noneMatch(h -> "who=holder".equals(h.query()))) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the holder never fetched its page");
            }
            site.target().awaitHits(site.target().hits().size() + 1, 100);
        }
        return ExampleInstance.start("waiter", runDir, settings);
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
