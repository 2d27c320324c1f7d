package io.tokenbucket.testsupport.redis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One real {@code redis-server} process on {@code 127.0.0.1:}{@link #port()}, from {@link RedisServers}. For a
 * {@link RedisServers#withTls() TLS} server that port is its {@code tls-port} and it has no plain TCP port.
 *
 * <p>{@link #stop()} kills the process ({@code SIGKILL}, like a crash: nothing is saved) and returns once the port
 * refuses connections; {@link #start()} starts it again on the same port with the same configuration and empty data
 * (a cluster node keeps its {@code nodes.conf}, so it rejoins its cluster). {@link #close()} kills the process and
 * deletes its directory; a closed handle cannot start again. A JVM shutdown hook kills any handle left open.
 *
 * <p>Thread-safe.
 */
public final class RedisHandle implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(RedisHandle.class);
    private static final Duration PROBE_TIMEOUT = Duration.ofMillis(500);
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

    private final int port;
    private final boolean clusterNode;
    private final boolean tls;
    private final boolean sentinel;
    private final String password;
    private final Path directory;
    private final Path config;
    private final Path log;
    private volatile Process process;
    private boolean closed;
    /** A server of {@link RedisServers#shared()} or {@link RedisServers#sharedCluster()}: not a test's to end. */
    private volatile boolean shared;

    /** Thrown by {@link #start()} when another process holds the port; {@link RedisServers} retries on a new one. */
    static final class PortInUse extends IllegalStateException {

        private static final long serialVersionUID = 1L;

        PortInUse(String message) {
            super(message);
        }
    }

    /** Writes the node's directory and {@code redis.conf}; the port is already reserved and is released on failure. */
    RedisHandle(int port, List<String> settings, boolean clusterNode, boolean tls) {
        this(port, settings, clusterNode, tls, false);
    }

    /**
     * As {@link #RedisHandle(int, List, boolean, boolean)}; with {@code sentinel} the process runs as a Redis Sentinel
     * ({@code redis-server redis.conf --sentinel}), which rewrites its {@code redis.conf} as it learns.
     */
    RedisHandle(int port, List<String> settings, boolean clusterNode, boolean tls, boolean sentinel) {
        this.port = port;
        this.clusterNode = clusterNode;
        this.tls = tls;
        this.sentinel = sentinel;
        this.password = requirePass(settings);
        try {
            this.directory = Files.createTempDirectory(RedisServers.root(), "node-" + port + "-");
            this.config = directory.resolve("redis.conf");
            this.log = directory.resolve("redis.log");
            StringBuilder conf = new StringBuilder()
                    .append("# written by RedisServers for a test; deleted when its handle closes\n")
                    .append("bind ").append(RedisServers.HOST).append('\n')
                    .append("protected-mode yes\n")
                    .append("daemonize no\n")
                    .append("dir ").append(quote(directory.toAbsolutePath().toString())).append('\n')
                    .append("logfile \"\"\n")
                    .append("save \"\"\n")
                    .append("appendonly no\n");
            if (tls) {
                conf.append("port 0\n")
                        .append("tls-port ").append(port).append('\n')
                        .append("tls-cert-file ").append(quote(RedisTls.serverCertificate().toString())).append('\n')
                        .append("tls-key-file ").append(quote(RedisTls.serverKey().toString())).append('\n')
                        .append("tls-ca-cert-file ").append(quote(RedisTls.caCertificate().toString())).append('\n')
                        .append("tls-auth-clients no\n");
            } else {
                conf.append("port ").append(port).append('\n');
            }
            for (String setting : settings) {
                conf.append(setting).append('\n');
            }
            Files.writeString(config, conf.toString());
        } catch (IOException | RuntimeException e) {
            RedisServers.release(port, clusterNode);
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
        RedisServers.opened(this);
    }

    /** @return {@code 127.0.0.1} */
    public String host() {
        return RedisServers.HOST;
    }

    /** @return the port, the same across {@link #stop()} and {@link #start()} */
    public int port() {
        return port;
    }

    /** @return {@code redis://127.0.0.1:PORT} ({@code rediss://} for a TLS server), without credentials */
    public String uri() {
        return scheme() + RedisServers.HOST + ":" + port;
    }

    /**
     * @return {@code redis://:PASSWORD@127.0.0.1:PORT} ({@code rediss://} for a TLS server) when the server has a
     *         {@code requirepass}, else {@link #uri()}
     */
    public String authenticatedUri() {
        return password == null ? uri()
                : scheme() + ":" + URLEncoder.encode(password, StandardCharsets.UTF_8) + "@" + RedisServers.HOST + ":"
                        + port;
    }

    /**
     * @return whether the server speaks TLS only ({@link RedisServers#withTls}): {@link #port()} is its
     *         {@code tls-port}, its certificate is issued by {@link RedisTls#caCertificate()}
     */
    public boolean tls() {
        return tls;
    }

    /** @return whether the process is a Redis Sentinel ({@link RedisServers#sentinel()}) */
    public boolean sentinel() {
        return sentinel;
    }

    /** @return the {@code requirepass} password, or null */
    public String password() {
        return password;
    }

    /** @return whether the process is running */
    public boolean isRunning() {
        Process current = process;
        return current != null && current.isAlive();
    }

    /** @return the operating system's id of the running process (for signals such as {@code kill -STOP}) */
    public long pid() {
        Process current = process;
        if (current == null) {
            throw new IllegalStateException("redis-server on port " + port + " is not running");
        }
        return current.pid();
    }

    /** @return the server's own directory: {@code redis.conf}, {@code redis.log}, {@code nodes.conf} */
    public Path directory() {
        return directory;
    }

    /** @return what the server has written to stdout and stderr so far, for diagnostics */
    public String log() {
        try {
            return Files.exists(log) ? Files.readString(log) : "";
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
    }

    /**
     * Starts the server, unless it is running, and waits until it answers {@code PING} (at most
     * {@link RedisServers#READY_TIMEOUT}). On the same port as before; data is gone.
     *
     * @throws IllegalStateException when closed, or when the server exits or does not answer in time (its log in
     *                               the message)
     */
    public synchronized void start() {
        if (closed) {
            throw new IllegalStateException("redis-server handle for port " + port + " is closed");
        }
        if (isRunning()) {
            return;
        }
        long began = System.nanoTime();
        long logOffset = logSize();
        Process started;
        try {
            List<String> command = sentinel
                    ? List.of(RedisServers.binary().toString(), config.toString(), "--sentinel")
                    : List.of(RedisServers.binary().toString(), config.toString());
            started = new ProcessBuilder(command)
                    .directory(directory.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + RedisServers.binary(), e);
        }
        process = started;
        try {
            Files.writeString(directory.resolve(RedisServers.PID_FILE), Long.toString(started.pid()));
            awaitReady(started, logOffset);
        } catch (IOException | RuntimeException e) {
            kill();
            throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
        }
        LOG.info("redis-server {} pid {} ready on port {} in {} ms", RedisServers.version(), started.pid(), port,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
    }

    /**
     * Kills the server ({@code SIGKILL}: nothing is saved, clients see the connection drop) and returns once the
     * port refuses connections. Does nothing when it is not running.
     *
     * @throws IllegalStateException for a {@link RedisServers#shared()} server
     */
    public synchronized void stop() {
        refuseIfShared("stop()");
        if (process == null) {
            return;
        }
        kill();
        long deadline = System.nanoTime() + STOP_TIMEOUT.toNanos();
        while (accepts()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("port " + port + " still accepts connections after redis-server died");
            }
            pause();
        }
    }

    /**
     * Kills the process and deletes its directory; idempotent. Does nothing for a {@link RedisServers#shared()} one.
     */
    @Override
    public void close() {
        if (shared) {
            return; // the JVM's shutdown hook ends it
        }
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            kill();
        }
        RedisServers.deleteRecursively(directory);
        RedisServers.release(port, clusterNode);
        RedisServers.closed(this);
    }

    /**
     * Sends one command on a fresh connection (TLS for a TLS server), after {@code AUTH} when the server has a
     * password. Handy for what a test needs besides its client: {@code SCRIPT FLUSH}, {@code CLIENT PAUSE 500},
     * {@code CONFIG SET ...}.
     *
     * @param args the command and its arguments
     * @return a String (simple or bulk string), Long (integer), List (array) or null (nil)
     * @throws RedisServers.RedisErrorReply for an error reply
     * @throws UncheckedIOException         when the server cannot be reached
     */
    public Object command(String... args) {
        if (shared && args.length > 0) {
            String command = String.join(" ", args).toUpperCase(Locale.ROOT);
            if (command.startsWith("CLIENT PAUSE") || command.startsWith("CONFIG SET") || command.startsWith("DEBUG")
                    || command.startsWith("SHUTDOWN")) {
                refuseIfShared(args[0] + " " + (args.length > 1 ? args[1] : ""));
            }
        }
        try {
            return RedisServers.call(port, tls, password, COMMAND_TIMEOUT, args);
        } catch (IOException e) {
            throw new UncheckedIOException("redis-server on port " + port + ": " + String.join(" ", args), e);
        }
    }

    /** Deletes every key ({@code FLUSHALL}), e.g. between tests sharing one server. */
    public void flushAll() {
        command("FLUSHALL");
    }

    @Override
    public String toString() {
        return "redis-server " + uri() + (isRunning() ? " (running)" : closed ? " (closed)" : " (stopped)");
    }

    // ---------------------------------------------------------------- internals

    /** Marks this as a shared server ({@link RedisServers#shared()}). */
    void share() {
        shared = true;
    }

    private void refuseIfShared(String what) {
        if (shared) {
            throw new IllegalStateException(what + " on the shared " + this + ": a test that stops, pauses or"
                    + " reconfigures its server starts its own (RedisServers.standalone())");
        }
    }

    /** Kills the process and waits for it; also what the shutdown hook calls, so it takes no lock. */
    void kill() {
        Process current = process;
        if (current == null) {
            return;
        }
        current.descendants().forEach(ProcessHandle::destroyForcibly);
        current.destroyForcibly();
        try {
            if (!current.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warn("redis-server pid {} on port {} did not die within {}", current.pid(), port, STOP_TIMEOUT);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        process = null;
    }

    private void awaitReady(Process started, long logOffset) {
        long deadline = System.nanoTime() + RedisServers.READY_TIMEOUT.toNanos();
        while (true) {
            if (!started.isAlive()) {
                String output = logSince(logOffset);
                String message = "redis-server on port " + port + " exited with code " + started.exitValue()
                        + " before answering PING. Its output:\n" + output;
                throw output.contains("Address already in use") ? new PortInUse(message)
                        : new IllegalStateException(message);
            }
            Exception probe = probePing();
            if (probe == null) {
                verifyOwnProcess(started);
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("redis-server on port " + port + " did not answer PING"
                        + (tls ? " over TLS" : "") + " within " + RedisServers.READY_TIMEOUT + " (last attempt: "
                        + probe + "). Its output:\n" + logSince(logOffset));
            }
            pause();
        }
    }

    /**
     * Null when the server is serving: PONG, or NOAUTH from a server with a password (over TLS for a TLS server, the
     * certificate verified); else why not, for the message should it never serve.
     */
    private Exception probePing() {
        try {
            Object reply = RedisServers.call(port, tls, null, PROBE_TIMEOUT, "PING");
            return "PONG".equals(reply) ? null : new IllegalStateException("PING answered " + reply);
        } catch (RedisServers.RedisErrorReply e) {
            return e.getMessage().startsWith("NOAUTH") ? null : e;
        } catch (IOException e) {
            return e;
        }
    }

    /**
     * Makes sure the server answering is the process just started, not another one that took the port first (then
     * ours exits with "Address already in use", which {@link #awaitReady} turns into {@link PortInUse}).
     */
    private void verifyOwnProcess(Process started) {
        Object info;
        try {
            info = command("INFO", "server");
        } catch (RuntimeException e) {
            return; // e.g. ACL settings that lock the default user out: cannot tell, trust the PING
        }
        if (!String.valueOf(info).contains("process_id:" + started.pid() + "\r\n")) {
            long deadline = System.nanoTime() + RedisServers.READY_TIMEOUT.toNanos();
            while (started.isAlive() && System.nanoTime() < deadline) {
                pause();
            }
            String message = "another process answers on port " + port + ". Output of ours:\n" + log();
            throw started.isAlive() ? new IllegalStateException(message) : new PortInUse(message);
        }
    }

    private boolean accepts() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(RedisServers.HOST, port), (int) PROBE_TIMEOUT.toMillis());
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private long logSize() {
        try {
            return Files.exists(log) ? Files.size(log) : 0;
        } catch (IOException e) {
            return 0;
        }
    }

    private String logSince(long offset) {
        try {
            byte[] all = Files.exists(log) ? Files.readAllBytes(log) : new byte[0];
            int from = offset <= all.length ? (int) offset : 0;
            return new String(all, from, all.length - from, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
    }

    /** The polling interval of the readiness loops (a poll, not a wait for something to happen by itself). */
    private static void pause() {
        try {
            Thread.sleep(10);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for redis-server", e);
        }
    }

    private String scheme() {
        return tls ? "rediss://" : "redis://";
    }

    private static String requirePass(List<String> settings) {
        String found = null;
        for (String setting : settings) {
            String trimmed = setting.trim();
            if (trimmed.regionMatches(true, 0, "requirepass", 0, 11) && trimmed.length() > 11
                    && Character.isWhitespace(trimmed.charAt(11))) {
                String value = trimmed.substring(12).trim();
                if (value.length() >= 2 && (value.startsWith("\"") && value.endsWith("\"")
                        || value.startsWith("'") && value.endsWith("'"))) {
                    value = value.substring(1, value.length() - 1);
                }
                found = value.isEmpty() ? null : value;
            }
        }
        return found;
    }

    private static String quote(String value) {
        return '"' + value.replace("\\", "\\\\").replace("\"", "\\\"") + '"';
    }
}
