package io.tokenbucket.testsupport.jvm;

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
import java.util.concurrent.locks.LockSupport;

/**
 * One instance of the example application ({@value #MAIN_CLASS}) in a JVM of its own, as an operator runs it:
 * {@code java -cp <class path> io.tokenbucket.example.ExampleApp} with {@code -D} settings. The caller gives the
 * class path: routes-example's tests their own ({@code java.class.path}), src-it the folder of built jars Maven
 * filled ({@code example-app/*}). This module does not depend on the example; it only names its main class.
 *
 * <p>The instance runs with {@code example.demo=false} (it reads {@code example.urlFile} and
 * {@code example.proxyFile}), writes its results, dead letters and output into a folder of its own
 * ({@link #dir()}: {@code example.outputDir}, and {@code output.log} for its standard output and error together),
 * prints no progress table ({@code example.progressInterval=0}), and ends by itself once every URL has an outcome
 * (exit code 0). Settings given to {@link #start} override these. Its JVM is small ({@value #HEAP}, serial GC, C1
 * only) so that several fit on a 2-core machine beside the test's.
 *
 * <p>A test waits for it by reading its output ({@link #awaitLine}) or its end ({@link #awaitExit}); both give up
 * after a timeout with an {@link AssertionError} that carries the end of the output. {@link #close()} kills it if it
 * is still running, so a try-with-resources leaves no JVM behind.
 */
public final class ExampleJvm implements AutoCloseable {

    /** The example application's main class. */
    public static final String MAIN_CLASS = "io.tokenbucket.example.ExampleApp";

    /** The child JVM's heap. */
    static final String HEAP = "-Xmx256m";

    /** How much of the end of the output a failure message shows, in characters. */
    static final int TAIL_CHARS = 6000;

    /** How often {@link #awaitLine} reads the output again. */
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private final String name;
    private final Path dir;
    private final Process process;

    private ExampleJvm(String name, Path dir, Process process) {
        this.name = name;
        this.dir = dir;
        this.process = process;
    }

    /**
     * Starts an instance.
     *
     * @param name      its name: its folder under {@code root}, and how messages name it
     * @param root      where its folder is made
     * @param classPath the class path of its JVM (the {@code -cp} argument: paths, or a folder followed by
     *                  {@code *})
     * @param settings  {@code example.*} and {@code camel.*} settings, passed as system properties in this order,
     *                  after (and over) the defaults above
     * @throws IOException when its folder cannot be made or its JVM cannot be started
     */
    public static ExampleJvm start(String name, Path root, String classPath, Map<String, String> settings)
            throws IOException {
        Path dir = Files.createDirectories(root.resolve(name));
        Map<String, String> all = new LinkedHashMap<>();
        all.put("example.demo", "false");
        all.put("example.outputDir", dir.toString());
        all.put("example.progressInterval", "0");
        all.putAll(settings);
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), HEAP, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
        all.forEach((key, value) -> command.add("-D" + key + "=" + value));
        command.addAll(List.of("-cp", classPath, MAIN_CLASS));
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("output.log").toFile()).start();
        return new ExampleJvm(name, dir, process);
    }

    /**
     * Waits until a line of the output contains {@code text}, reading it every 20 ms.
     *
     * @throws AssertionError when the output has no such line once {@code timeout} has passed or the JVM has ended
     */
    public void awaitLine(String text, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!log().contains(text) && process.isAlive() && System.nanoTime() - deadline < 0) {
            LockSupport.parkNanos(POLL_NANOS);
        }
        if (!log().contains(text)) {
            throw new AssertionError(name + "'s output has no line with '" + text + "' after " + timeout.toMillis()
                    + " ms" + (process.isAlive() ? "" : " (it ended with exit code " + process.exitValue() + ")")
                    + logTail());
        }
    }

    /**
     * Waits until the instance has ended by itself.
     *
     * @return its exit code
     * @throws AssertionError when it is still running after {@code timeout}: the message has the end of its output
     *                        and its non-daemon threads (what keeps it alive); it is then killed
     */
    public int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            String threads = nonDaemonThreads();
            kill();
            throw new AssertionError(name + " still running after " + timeout + logTail() + threads);
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
        } catch (IOException | RuntimeException e) {
            return System.lineSeparator() + "(no thread dump: " + e + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return System.lineSeparator() + "(no thread dump: interrupted)";
        }
    }

    /** Its standard output and error together (the log and the final summary), as written so far. */
    public String log() {
        try {
            return Files.readString(dir.resolve("output.log"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The last {@value #TAIL_CHARS} characters of its output, under a line naming it: for failure messages. */
    public String logTail() {
        String log = log();
        return System.lineSeparator() + "--- " + name + " (" + dir.resolve("output.log") + ") ---"
                + System.lineSeparator() + log.substring(Math.max(0, log.length() - TAIL_CHARS));
    }

    /** Its folder: {@code example.outputDir} unless the settings moved it, and {@code output.log}. */
    public Path dir() {
        return dir;
    }

    /** Its name. */
    public String name() {
        return name;
    }

    /** Its process id (in broker mode its result lines name it: {@code "instance":"<pid>@<host>"}). */
    public long pid() {
        return process.pid();
    }

    /** Whether it is still running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /**
     * Kills it at once (SIGKILL: no shutdown hook, no commit, its sockets closed by the kernel); returns once it is
     * gone, or after 10 s.
     */
    public void kill() throws InterruptedException {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    /** Kills it if it is still running. */
    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }

    @Override
    public String toString() {
        return name + " (pid " + process.pid() + ")";
    }
}
