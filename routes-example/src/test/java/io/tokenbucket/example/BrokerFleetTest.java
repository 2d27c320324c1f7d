package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.example.demo.DemoSite;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A broker fleet as an operator meets it: two instances of the example application, each a JVM of its own started as
 * {@code java io.tokenbucket.example.ExampleApp} with {@code -D} settings (this test's class path), on a real embedded
 * Artemis and a real target behind real forward proxies on loopback. The first holds the broker, feeds it the URLs
 * and records every line; the second connects to it. What they print is what is checked: a clean run has no ERROR
 * line and no stack trace; each start-up line says how its instance will end; the holder, once its run is done,
 * leaves nothing that keeps its JVM alive; the other instance says once that the broker is gone and ends by itself
 * after {@code example.brokerWait}, with one line, instead of logging a reconnection failure every few seconds.
 */
class BrokerFleetTest {

    private static final int URLS = 240;
    /** The peer's bound: short, so that the test does not wait long for its end. */
    private static final String WAIT = "3s";
    private static final Duration RUN_TIMEOUT = Duration.ofSeconds(120);

    @TempDir
    Path dir;

    @Test
    void aFleetRunsStartsAndEndsCleanly() throws Exception {
        int port = freePort();
        // two proxies at 4/s each (each instance has its own buckets here): the holder alone would need about 30 s,
        // so the peer, started once the holder has fed the queue, joins mid-run even on a slow machine
        try (DemoSite site = new DemoSite(dir, 2, "4/1s", URLS, 1000, 1000)) {
            Map<String, String> common = Map.of("example.proxyFile", site.proxyFile().toString(),
                    "example.urlFile", site.urlFile().toString());
            try (Instance holder = Instance.start("holder", dir, with(common, Map.of("example.broker", "embedded",
                         "example.brokerPort", String.valueOf(port), "example.brokerConsumers", "2")))) {
                holder.awaitLine("Sending " + URLS + " URLs", RUN_TIMEOUT);
                try (Instance peer = Instance.start("peer", dir, with(common, Map.of("example.broker",
                        "tcp://127.0.0.1:" + port, "example.brokerWait", WAIT)))) {
                    // once its summary is out, nothing may keep the holder's JVM alive: no thread of Artemis or other
                    holder.awaitLine("== summary ==", RUN_TIMEOUT);
                    assertThat(holder.awaitExit(Duration.ofSeconds(15))).as("holder's exit code%s", holder.logTail())
                            .isZero();
                    long holderEnded = System.nanoTime();
                    assertThat(peer.awaitExit(Duration.ofSeconds(60))).as("peer's exit code%s", peer.logTail()).isZero();
                    long peerMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - holderEnded);

                    List<String> lines = Files.readAllLines(holder.dir.resolve("results.jsonl")).stream()
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
                    System.out.printf("[fleet] %d URLs; the peer ended %d ms after the holder (example.brokerWait=%s)%n",
                            URLS, peerMillis, WAIT);
                }
            }
        }
    }

    /** No ERROR line, no stack trace, no thread complaint: what a clean run prints. */
    private static void assertClean(String log, Instance instance) {
        assertThat(log.lines().filter(l -> l.contains(" ERROR ") || l.startsWith("ERROR")
                || l.matches("\\s+at [\\w.$]+\\(.*") || l.contains("Exception:") || l.contains("Exception ")
                || l.contains("linger")).toList()).as("error lines and stack traces of %s%s", instance,
                        instance.logTail()).isEmpty();
    }

    private static long count(String log, String text) {
        return log.lines().filter(l -> l.contains(text)).count();
    }

    private static Map<String, String> with(Map<String, String> common, Map<String, String> own) {
        Map<String, String> all = new LinkedHashMap<>(common);
        all.putAll(own);
        return all;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /** The example application in a JVM of its own, on this test's class path; its output in {@code output.log}. */
    private static final class Instance implements AutoCloseable {
        private final String name;
        private final Path dir;
        private final Process process;

        private Instance(String name, Path dir, Process process) {
            this.name = name;
            this.dir = dir;
            this.process = process;
        }

        static Instance start(String name, Path root, Map<String, String> settings) throws IOException {
            Path dir = Files.createDirectories(root.resolve(name));
            Map<String, String> all = new LinkedHashMap<>();
            all.put("example.demo", "false");
            all.put("example.outputDir", dir.toString());
            all.put("example.progressInterval", "0");
            all.putAll(settings);
            List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                    .toString(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
            all.forEach((key, value) -> command.add("-D" + key + "=" + value));
            command.addAll(List.of("-cp", System.getProperty("java.class.path"), ExampleApp.class.getName()));
            Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("output.log").toFile()).start();
            return new Instance(name, dir, process);
        }

        /** Waits (checking every 20 ms) until a line of the output contains {@code text}. */
        void awaitLine(String text, Duration timeout) {
            ScraperHarness.awaitUntil(name + "'s line '" + text + "'", this::log,
                    log -> log.contains(text) || !process.isAlive(), timeout);
            assertThat(log()).as("%s's output%s", name, logTail()).contains(text);
        }

        int awaitExit(Duration timeout) throws InterruptedException {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new AssertionError(name + " still running after " + timeout + logTail() + nonDaemonThreads());
            }
            return process.exitValue();
        }

        /** What keeps the JVM alive: its non-daemon threads, from {@code jcmd <pid> Thread.print}. */
        private String nonDaemonThreads() {
            try {
                Path dump = dir.resolve("threads.txt");
                Process jcmd = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                        String.valueOf(process.pid()), "Thread.print").redirectErrorStream(true)
                        .redirectOutput(dump.toFile()).start();
                if (!jcmd.waitFor(30, TimeUnit.SECONDS)) {
                    jcmd.destroyForcibly();
                }
                StringBuilder text = new StringBuilder(System.lineSeparator() + "--- non-daemon threads of " + name
                        + " ---" + System.lineSeparator());
                for (String thread : Files.readString(dump).split("\\R\\R")) {
                    if (thread.startsWith("\"") && !thread.lines().findFirst().orElse("").contains(" daemon ")) {
                        text.append(thread).append(System.lineSeparator());
                    }
                }
                return text.toString();
            } catch (IOException | InterruptedException | RuntimeException e) {
                return System.lineSeparator() + "(no thread dump: " + e + ")";
            }
        }

        long pid() {
            return process.pid();
        }

        String log() {
            try {
                return Files.readString(dir.resolve("output.log"));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        String logTail() {
            String log = log();
            return System.lineSeparator() + "--- " + name + " ---" + System.lineSeparator()
                    + log.substring(Math.max(0, log.length() - 6000));
        }

        @Override
        public void close() throws InterruptedException {
            if (process.isAlive()) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }

        @Override
        public String toString() {
            return name + " (pid " + process.pid() + ")";
        }
    }
}
