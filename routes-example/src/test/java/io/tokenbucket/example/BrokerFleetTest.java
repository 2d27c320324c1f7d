package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.testsupport.jvm.ExampleJvm;
import io.tokenbucket.testsupport.net.Ports;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A broker fleet as an operator meets it: two instances of the example application, each a JVM of its own started as
 * {@code java io.tokenbucket.example.ExampleApp} with {@code -D} settings (this test's class path, test-support's
 * {@link ExampleJvm}), on a real embedded
 * Artemis, one real {@code redis-server} and a real target behind real forward proxies on loopback. The first holds the broker, feeds it the URLs
 * and records every line; the second connects to it. What they print is what is checked: a clean run has no ERROR
 * line and no stack trace; each start-up line says how its instance will end; the holder, once its run is done,
 * leaves nothing that keeps its JVM alive; the other instance says once that the broker is gone and ends by itself
 * after {@code example.brokerWait}, with one line, instead of logging a reconnection failure every few seconds. The
 * progress tables end with the fleet's line (totals shared in Redis, the URLs left in the queue) and are not printed
 * again while nothing changes. (An instance killed mid-run, and the fleet's line after it: {@code src-it}'s
 * {@code BrokerQueueIT}.)
 */
class BrokerFleetTest {

    private static final int URLS = 240;
    /** The peer's bound: short, so that the test does not wait long for its end. */
    private static final String WAIT = "3s";
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);
    /** The instances' class path: this test's own. */
    private static final String CLASS_PATH = System.getProperty("java.class.path");

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

    @Test
    void aFleetRunsStartsAndEndsCleanly() throws Exception {
        int port = freePort();
        // two proxies at 4/s each, shared in Redis by both instances: about 30 s for the run, so the peer, started
        // once the holder has fed the queue, joins mid-run even on a slow machine
        try (DemoSite site = new DemoSite(dir, 2, "4/1s", URLS, 1000, 1000)) {
            // one Redis for both: shared buckets and the fleet's totals; a progress table every second
            Map<String, String> common = Map.of("example.proxyFile", site.proxyFile().toString(),
                    "example.urlFile", site.urlFile().toString(), "example.redisUri", redis.uri(),
                    "example.progressInterval", "1s");
            try (ExampleJvm holder = ExampleJvm.start("holder", dir, CLASS_PATH, with(common, Map.of("example.broker", "embedded",
                         "example.brokerPort", String.valueOf(port), "example.brokerConsumers", "2")))) {
                holder.awaitLine("Sending " + URLS + " URLs", RUN_TIMEOUT);
                try (ExampleJvm peer = ExampleJvm.start("peer", dir, CLASS_PATH, with(common, Map.of("example.broker",
                        "tcp://127.0.0.1:" + port, "example.brokerWait", WAIT)))) {
                    // once its summary is out, nothing may keep the holder's JVM alive: no thread of Artemis or other
                    holder.awaitLine("== summary ==", RUN_TIMEOUT);
                    assertThat(holder.awaitExit(Duration.ofSeconds(15))).as("holder's exit code%s", holder.logTail())
                            .isZero();
                    long holderEnded = System.nanoTime();
                    assertThat(peer.awaitExit(Duration.ofSeconds(60))).as("peer's exit code%s", peer.logTail()).isZero();
                    long peerMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - holderEnded);

                    List<String> lines = Files.readAllLines(holder.dir().resolve("results.jsonl")).stream()
                            .filter(l -> !l.isBlank()).toList();
                    assertThat(lines).as("result lines").hasSize(URLS);
                    assertThat(lines).as("lines fetched by the peer: it took part")
                            .anyMatch(l -> l.contains("\"instance\":\"" + peer.pid() + "@"));

                    String holderLog = holder.log();
                    assertClean(holderLog, holder);
                    assertThat(holderLog).as("holder's start-up line").contains("Sending " + URLS + " URLs from "
                            + site.urlFile() + " to broker queue scraper.urls; this instance ends once each has its"
                            + " result or dead-letter line").doesNotContain("until stopped");

                    String peerLog = peer.log();
                    assertClean(peerLog, peer);
                    assertThat(peerLog).as("peer's start-up line").contains("URLs come from broker queue scraper.urls"
                            + " at tcp://127.0.0.1:" + port + "; this instance takes them until it is stopped or the"
                            + " broker has been unreachable for 3s (example.brokerWait)")
                            .doesNotContain("runs until stopped");
                    // one line when the broker goes away, one when the instance ends: nothing per attempt
                    assertThat(count(peerLog, "Lost the broker at tcp://127.0.0.1:" + port)).as("loss lines%s",
                            peer.logTail()).isEqualTo(1);
                    assertThat(count(peerLog, "(example.brokerWait=" + WAIT + "): this instance ends")).as("end"
                            + " lines%s", peer.logTail()).isEqualTo(1);
                    assertThat(count(peerLog, "AMQ219007")).as("lines naming AMQ219007%s", peer.logTail())
                            .isLessThanOrEqualTo(1);
                    assertThat(peerLog.indexOf("Lost the broker")).as("the loss, then the end")
                            .isLessThan(peerLog.indexOf("this instance ends"));
                    // documented: it ends once the broker has been gone for example.brokerWait, not much later
                    assertThat(peerMillis).as("ms from the holder's exit to the peer's%s", peer.logTail())
                            .isLessThan(3_000 + 20_000);
                    // the fleet's line: the URLs left in the queue, and totals that hold the peer's counts too
                    assertThat(holderLog).as("holder's fleet lines%s", holder.logTail())
                            .containsPattern("fleet: \\d+ fetched, .*; \\d+ URLs left in scraper\\.urls");
                    long own = lastNumber(holderLog, "(?m)^(\\d+) fetched, \\d+ failed attempts");
                    long fleet = lastNumber(holderLog, "fleet: (\\d+) fetched");
                    long dead = lastNumber(holderLog, "fleet: .* (\\d+) dead letters");
                    // the summary waits for the peer's last counts: every URL's line is in the fleet's totals
                    assertThat(fleet + dead).as("the fleet's fetched and dead letters in the holder's summary (its"
                            + " own fetched %d)%s", own, holder.logTail()).isEqualTo(URLS);
                    assertThat(fleet).as("the fleet's fetched above the holder's own").isGreaterThan(own);
                    // nothing changes while the peer waits for the broker that is gone: no table printed again
                    String afterLoss = peerLog.substring(peerLog.indexOf("Lost the broker"));
                    assertThat(count(afterLoss, "-- progress at")).as("tables while waiting%s", peer.logTail())
                            .isLessThanOrEqualTo(1);
                    System.out.printf("[fleet] %d URLs; the peer ended %d ms after the holder (example.brokerWait=%s)%n",
                            URLS, peerMillis, WAIT);
                }
            }
        }
    }

    /** No ERROR line, no stack trace, no thread complaint: what a clean run prints. */
    private static void assertClean(String log, ExampleJvm instance) {
        assertThat(log.lines().filter(l -> l.contains(" ERROR ") || l.startsWith("ERROR")
                || l.matches("\\s+at [\\w.$]+\\(.*") || l.contains("Exception:") || l.contains("Exception ")
                || l.contains("linger")).toList()).as("error lines and stack traces of %s%s", instance,
                        instance.logTail()).isEmpty();
    }

    private static long lastNumber(String log, String regex) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(regex).matcher(log);
        long last = -1;
        while (m.find()) {
            last = Long.parseLong(m.group(1));
        }
        return last;
    }

    private static long count(String log, String text) {
        return log.lines().filter(l -> l.contains(text)).count();
    }

    private static Map<String, String> with(Map<String, String> common, Map<String, String> own) {
        Map<String, String> all = new LinkedHashMap<>(common);
        all.putAll(own);
        return all;
    }

    private static int freePort() {
        return Ports.free();
    }
}
