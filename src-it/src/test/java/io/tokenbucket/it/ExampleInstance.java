package io.tokenbucket.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.camel.util.json.JsonObject;
import org.apache.camel.util.json.Jsoner;

/**
 * One instance of the example application in a JVM of its own, started from the built artifacts the way a user
 * runs them: {@code java -cp 'example-app/*' io.tokenbucket.example.ExampleApp} with {@code -D} settings, where
 * {@code example-app} is the folder Maven filled in {@code pre-integration-test} with the routes-example and
 * camel-tokenbucket jars and their runtime dependencies (system property {@code example.app}). Nothing of the
 * test classpath reaches it.
 *
 * <p>It runs with {@code example.demo=false}: it reads its URLs from {@code example.urlFile}, its proxies from
 * {@code example.proxyFile}, writes {@code results.jsonl} and {@code dead-letter.jsonl} into a folder of its own,
 * and ends by itself once every URL has an outcome (exit code 0; not 0 when one has none).
 */
final class ExampleInstance implements AutoCloseable {

    /** The folder with the application's jars. */
    static final Path APP = Path.of(System.getProperty("example.app", "target/example-app"));

    private final String name;
    private final Path dir;
    private final Process process;
    private final Path urlFile;

    private ExampleInstance(String name, Path dir, Process process, Path urlFile) {
        this.name = name;
        this.dir = dir;
        this.process = process;
        this.urlFile = urlFile;
    }

    /**
     * Starts an instance.
     *
     * @param name     its name (its folder under {@code root}, and in messages)
     * @param root     where its folder is made
     * @param settings {@code example.*} and {@code camel.*} settings, passed as system properties
     */
    static ExampleInstance start(String name, Path root, Map<String, String> settings) throws IOException {
        if (!Files.isDirectory(APP)) {
            throw new IllegalStateException("No application folder " + APP.toAbsolutePath() + ": run through"
                    + " `mvn verify` (its pre-integration-test phase copies the built jars there)");
        }
        Path dir = Files.createDirectories(root.resolve(name));
        Map<String, String> all = new LinkedHashMap<>();
        all.put("example.demo", "false");
        all.put("example.outputDir", dir.toString());
        all.put("example.progressInterval", "0");
        all.putAll(settings);
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
        all.forEach((key, value) -> command.add("-D" + key + "=" + value));
        command.addAll(List.of("-cp", APP.toAbsolutePath().resolve("*").toString(), "io.tokenbucket.example.ExampleApp"));
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("output.log").toFile()).start();
        return new ExampleInstance(name, dir, process, Path.of(all.get("example.urlFile")));
    }

    /**
     * Waits until the instance has ended by itself.
     *
     * @return its exit code
     * @throws AssertionError when it is still running after {@code timeout} (it is killed; its log in the message)
     */
    int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError(name + " still running after " + timeout + ": " + logTail());
        }
        return process.exitValue();
    }

    /** The fetched URLs' lines ({@code results.jsonl}), parsed. */
    List<JsonObject> results() {
        return lines("results.jsonl");
    }

    /** The dead letters' lines ({@code dead-letter.jsonl}), parsed. */
    List<JsonObject> deadLetters() {
        return lines("dead-letter.jsonl");
    }

    private List<JsonObject> lines(String file) {
        Path path = dir.resolve(file);
        if (!Files.exists(path)) {
            return List.of();
        }
        try {
            return Files.readAllLines(path).stream().filter(line -> !line.isBlank())
                    .map(line -> (JsonObject) Jsoner.deserialize(line, (JsonObject) null)).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Its standard output and error (the log and the final summary). */
    String log() {
        try {
            return Files.readString(dir.resolve("output.log"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The last lines of its log, for failure messages. */
    String logTail() {
        String log = log();
        return System.lineSeparator() + "--- " + name + " (" + dir.resolve("output.log") + ") ---"
                + System.lineSeparator() + log.substring(Math.max(0, log.length() - 4000));
    }

    /** The file of URLs it was given ({@code example.urlFile}). */
    Path urlFile() {
        return urlFile;
    }

    /** Whether it is still running. */
    boolean isAlive() {
        return process.isAlive();
    }

    /** Its process id (in broker mode its result lines name it: {@code "instance":"<pid>@<host>"}). */
    long pid() {
        return process.pid();
    }

    /** Kills it at once (SIGKILL: no shutdown hook, no commit, its sockets closed by the kernel); returns once gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    /** Its name. */
    String name() {
        return name;
    }

    /** Kills it if it is still running. */
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
