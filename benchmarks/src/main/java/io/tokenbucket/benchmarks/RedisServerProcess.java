package io.tokenbucket.benchmarks;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import redis.embedded.core.ExecutableProvider;

/**
 * A {@code redis-server} process for the Redis benchmarks, started on a free loopback port and stopped by
 * {@link #close()} (or, as a safety net, by a JVM shutdown hook). It persists nothing and runs in its own
 * temporary directory, which is deleted on close.
 *
 * <p>Which binary, in this order (the same order as the component's tests, {@code RedisServers}):
 * <ol>
 * <li>the system property {@value #BINARY_PROPERTY} (or environment variable {@value #BINARY_ENV}): a path to a
 * {@code redis-server}, or {@code embedded} for the one shipped in embedded-redis;</li>
 * <li>a {@code redis-server} on the {@code PATH};</li>
 * <li>the binary inside {@code com.github.codemonstur:embedded-redis} (Redis 6.2.x for Linux x86_64), extracted
 * into the temporary directory. Nothing is downloaded.</li>
 * </ol>
 */
final class RedisServerProcess implements AutoCloseable {

    /** System property naming the {@code redis-server} to run, or {@code embedded}. */
    static final String BINARY_PROPERTY = "tokenbucket.redis.server";
    /** Environment variable read when {@link #BINARY_PROPERTY} is not set. */
    static final String BINARY_ENV = "TOKENBUCKET_REDIS_SERVER";

    private static final Pattern VERSION = Pattern.compile("v=(\\S+)");
    private static final long READY_TIMEOUT_MILLIS = 10_000;

    private final Path dir;
    private final Path binary;
    private final String version;
    private final int port;
    private final Process process;
    private final Thread hook;

    private RedisServerProcess(Path dir, Path binary, String version, int port, Process process) {
        this.dir = dir;
        this.binary = binary;
        this.version = version;
        this.port = port;
        this.process = process;
        this.hook = new Thread(this::kill, "redis-server-" + port + "-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** Starts a server on a free loopback port and waits until it answers {@code PING}. */
    static RedisServerProcess start() throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("tokenbucket-bench-redis-");
        try {
            Path binary = findBinary(dir);
            String version = versionOf(binary);
            if (version == null) {
                throw new IllegalStateException(binary + " does not run as redis-server here ("
                        + System.getProperty("os.name") + " " + System.getProperty("os.arch") + "); set -D"
                        + BINARY_PROPERTY + "=/path/to/redis-server");
            }
            int port;
            try (ServerSocket probe = new ServerSocket(0)) {
                port = probe.getLocalPort();
            }
            Process process = new ProcessBuilder(binary.toString(), "--port", Integer.toString(port), "--bind",
                    "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString())
                    .directory(dir.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("redis.log").toFile())
                    .start();
            RedisServerProcess server = new RedisServerProcess(dir, binary, version, port, process);
            server.awaitReady();
            return server;
        } catch (IOException | InterruptedException | RuntimeException e) {
            deleteRecursively(dir);
            throw e;
        }
    }

    /** The port the server listens on, on 127.0.0.1. */
    int port() {
        return port;
    }

    /** {@code redis://127.0.0.1:<port>}. */
    String uri() {
        return "redis://127.0.0.1:" + port;
    }

    /** What the binary reports, e.g. {@code 6.2.11}, and where it is. */
    String describe() {
        return "redis-server " + version + " (" + binary + ")";
    }

    /** Kills the server and deletes its directory. */
    @Override
    public void close() {
        kill();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // already shutting down: the hook runs kill() again, harmlessly
        }
    }

    private void kill() {
        process.destroy();
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        deleteRecursively(dir);
    }

    private void awaitReady() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(READY_TIMEOUT_MILLIS);
        while (true) {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server exited with " + process.exitValue() + ": "
                        + Files.readString(dir.resolve("redis.log")));
            }
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
                socket.setSoTimeout(500);
                OutputStream out = socket.getOutputStream();
                out.write("*1\r\n$4\r\nPING\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                InputStream in = socket.getInputStream();
                byte[] reply = in.readNBytes(7);
                if (new String(reply, StandardCharsets.US_ASCII).startsWith("+PONG")) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("redis-server on port " + port + " did not answer PING within "
                        + READY_TIMEOUT_MILLIS + " ms: " + Files.readString(dir.resolve("redis.log")));
            }
            Thread.sleep(10);
        }
    }

    private static Path findBinary(Path dir) throws IOException {
        String configured = System.getProperty(BINARY_PROPERTY, System.getenv(BINARY_ENV));
        if (configured != null && !configured.isBlank() && !configured.equals("embedded")) {
            return Path.of(configured);
        }
        if (configured == null || configured.isBlank()) {
            Path onPath = onPath("redis-server");
            if (onPath != null && versionOf(onPath) != null) {
                return onPath;
            }
        }
        Path bin = Files.createDirectories(dir.resolve("bin"));
        return ExecutableProvider.newJarResourceProvider(bin.toFile()).get().toPath();
    }

    /** {@code name} on the {@code PATH}, or null. */
    static Path onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String d : path.split(File.pathSeparator)) {
            if (!d.isEmpty()) {
                Path candidate = Path.of(d, name);
                if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                    return candidate;
                }
            }
        }
        return null;
    }

    private static String versionOf(Path binary) {
        try {
            Process p = new ProcessBuilder(List.of(binary.toString(), "--version")).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(5, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                return null;
            }
            Matcher m = VERSION.matcher(out);
            return m.find() ? m.group(1) : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static void deleteRecursively(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // best effort: a temporary directory
        }
    }
}
