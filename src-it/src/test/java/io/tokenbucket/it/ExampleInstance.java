package io.tokenbucket.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.tokenbucket.testsupport.jvm.ExampleJvm;
import org.apache.camel.util.json.JsonObject;
import org.apache.camel.util.json.Jsoner;

/**
 * One instance of the example application in a JVM of its own, started from the built artifacts the way a user
 * runs them: {@code java -cp 'example-app/*' io.tokenbucket.example.ExampleApp} with {@code -D} settings, where
 * {@code example-app} is the folder Maven filled in {@code pre-integration-test} with the routes-example and
 * camel-tokenbucket jars and their runtime dependencies (system property {@code example.app}). Nothing of the
 * test classpath reaches it. The JVM is test-support's {@link ExampleJvm} (its defaults: {@code example.demo=false},
 * a folder of its own, no progress table); this adds the folder's check and the instance's results, parsed.
 *
 * <p>It reads its URLs from {@code example.urlFile}, its proxies from {@code example.proxyFile}, writes
 * {@code results.jsonl} and {@code dead-letter.jsonl} into its folder, and ends by itself once every URL has an
 * outcome (exit code 0; not 0 when one has none).
 */
final class ExampleInstance implements AutoCloseable {

    /** The folder with the application's jars. */
    static final Path APP = Path.of(System.getProperty("example.app", "target/example-app"));

    private final ExampleJvm jvm;
    private final Path urlFile;

    private ExampleInstance(ExampleJvm jvm, Path urlFile) {
        this.jvm = jvm;
        this.urlFile = urlFile;
    }

    /**
     * Starts an instance.
     *
     * @param name     its name (its folder under {@code root}, and in messages)
     * @param root     where its folder is made
     * @param settings {@code example.*} and {@code camel.*} settings, passed as system properties; they name
     *                 {@code example.urlFile}
     */
    static ExampleInstance start(String name, Path root, Map<String, String> settings) throws IOException {
        if (!Files.isDirectory(APP)) {
            throw new IllegalStateException("No application folder " + APP.toAbsolutePath() + ": run through"
                    + " `mvn verify` (its pre-integration-test phase copies the built jars there)");
        }
        ExampleJvm jvm = ExampleJvm.start(name, root, APP.toAbsolutePath().resolve("*").toString(), settings);
        return new ExampleInstance(jvm, Path.of(settings.get("example.urlFile")));
    }

    /**
     * Waits until the instance has ended by itself.
     *
     * @return its exit code
     * @throws AssertionError when it is still running after {@code timeout} (it is killed; its log in the message)
     */
    int awaitExit(Duration timeout) throws InterruptedException {
        return jvm.awaitExit(timeout);
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
        Path path = jvm.dir().resolve(file);
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
        return jvm.log();
    }

    /** The last lines of its log, for failure messages. */
    String logTail() {
        return jvm.logTail();
    }

    /** The file of URLs it was given ({@code example.urlFile}). */
    Path urlFile() {
        return urlFile;
    }

    /** Whether it is still running. */
    boolean isAlive() {
        return jvm.isAlive();
    }

    /** Its process id (in broker mode its result lines name it: {@code "instance":"<pid>@<host>"}). */
    long pid() {
        return jvm.pid();
    }

    /** Kills it at once (SIGKILL: no shutdown hook, no commit, its sockets closed by the kernel); returns once gone. */
    void kill() throws InterruptedException {
        jvm.kill();
    }

    /** Its name. */
    String name() {
        return jvm.name();
    }

    /** Kills it if it is still running. */
    @Override
    public void close() throws InterruptedException {
        jvm.close();
    }

    @Override
    public String toString() {
        return jvm.toString();
    }
}
