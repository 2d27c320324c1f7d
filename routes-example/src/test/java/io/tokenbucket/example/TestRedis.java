package io.tokenbucket.example;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import redis.embedded.core.ExecutableProvider;

/**
 * A real {@code redis-server} process on a free loopback port for the tests that run two scraper instances
 * against one store: a {@code redis-server} on the {@code PATH}, else the binary shipped in embedded-redis
 * (extracted into the given directory; nothing is downloaded). The way camel-tokenbucket's own
 * {@code RedisServers} does it, reduced to one standalone server: binds 127.0.0.1, persists nothing, ready when
 * it answers {@code PING}. {@link #close()} kills it.
 */
final class TestRedis implements AutoCloseable {

    private final Process process;
    private final int port;

    TestRedis(Path dir) throws Exception {
        Path binary = onPath();
        if (binary == null) {
            binary = ExecutableProvider.newJarResourceProvider(Files.createDirectories(dir.resolve("bin")).toFile())
                    .get().toPath();
        }
        try (ServerSocket probe = new ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        process = new ProcessBuilder(binary.toString(), "--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", dir.toString())
                .redirectErrorStream(true).redirectOutput(dir.resolve("redis.log").toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!answersPing()) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                process.destroyForcibly();
                throw new IllegalStateException("redis-server " + binary + " did not start on port " + port + ": "
                        + Files.readString(dir.resolve("redis.log")));
            }
            process.waitFor(20, TimeUnit.MILLISECONDS); // returns at once if it died
        }
    }

    /** {@code redis://127.0.0.1:PORT}. */
    String uri() {
        return "redis://127.0.0.1:" + port;
    }

    private boolean answersPing() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 500);
            socket.setSoTimeout(1000);
            OutputStream out = socket.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            byte[] reply = in.readNBytes(7);
            return new String(reply, StandardCharsets.US_ASCII).equals("+PONG\r\n");
        } catch (IOException e) {
            return false;
        }
    }

    private static Path onPath() {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String dir : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir.isEmpty() ? "." : dir, "redis-server");
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    @Override
    public void close() throws Exception {
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
    }
}
