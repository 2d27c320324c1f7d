package io.tokenbucket.testsupport.redis;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.tokenbucket.testsupport.net.PortLocks;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.embedded.core.ExecutableProvider;

/**
 * Real Redis servers for tests: a {@code redis-server} process per server, on a free loopback port, never a mock
 * and never a container (DESIGN.md §6).
 *
 * <h2>Which binary</h2>
 * <ol>
 * <li>the system property {@value #BINARY_PROPERTY} (or the environment variable {@value #BINARY_ENV}): a path to a
 * {@code redis-server}, or {@code embedded} to force the binary shipped in embedded-redis;</li>
 * <li>otherwise a {@code redis-server} found on the {@code PATH} that answers {@code --version};</li>
 * <li>otherwise the binary inside {@code com.github.codemonstur:embedded-redis}, a dependency of this module
 * (Redis 6.2 for Linux x86_64 and a few other platforms), extracted once per JVM. Nothing is ever downloaded.</li>
 * </ol>
 * {@link #version()} and {@link #binary()} say which one a run used.
 *
 * <h2>What a server looks like</h2>
 * Every server binds {@code 127.0.0.1} only, persists nothing ({@code save ""}, {@code appendonly no}) and runs
 * in its own directory (its {@code dir} and working directory) under one temporary root per JVM
 * ({@code java.io.tmpdir/tokenbucket-redis-*}); that directory holds {@code redis.conf}, {@code redis.log} (the
 * server's stdout and stderr, quoted in any start failure) and, for cluster nodes, {@code nodes.conf}. Nothing is
 * written to the working tree. A server is ready when it answers {@code PING} ({@code PONG}, or {@code NOAUTH}
 * when it has a password), polled with a deadline of {@link #READY_TIMEOUT} (over TLS, with the certificate checked
 * against the test CA, for a {@link #withTls()} server); a cluster is ready when every node
 * reports {@code cluster_state:ok} in {@code CLUSTER INFO}, polled with a deadline of {@link #CLUSTER_TIMEOUT}.
 * No fixed sleeps.
 *
 * <h2>No leaked processes</h2>
 * Close every handle (try-with-resources, or {@code @AfterAll}/{@code @AfterEach}): {@code close()} kills the
 * process and deletes its directory. As a safety net, one JVM shutdown hook kills every server still running and
 * deletes the temporary root, so a forgotten handle dies with the test JVM. A JVM killed with {@code SIGKILL} runs
 * no hook; the next JVM to start a server here finds such a root (its owner JVM is gone), kills the
 * {@code redis-server} processes still running in it (checked by their working directory, Linux only) and deletes it.
 *
 * <h2>Ports</h2>
 * Ports are free loopback ports from 10000 to 19999, below Linux's ephemeral range (32768 and up) and below
 * {@code Ports.free()}'s: the kernel never hands them to an outgoing connection, as it may a port
 * {@code new ServerSocket(0)} chose, so a {@link RedisHandle#stop() stopped} server's port is not taken by some
 * client's connection (a Lettuce reconnect to that very port included) before it {@link RedisHandle#start() starts}
 * again. A port stays reserved in this JVM until its handle is closed, and held against the other test JVMs of the
 * machine ({@link PortLocks}: several modules and forks start servers at once). Should another process grab a port
 * between the probe and the server's first bind, the start is retried on a new port. Cluster nodes also need
 * {@code port + 10000} free (the cluster bus, 20000 to 29999; Redis 6.2 has no {@code cluster-port}).
 *
 * <h2>Why not embedded-redis's own classes</h2>
 * Only the binary and its platform lookup ({@code ExecutableProvider}) come from embedded-redis. Its
 * {@code RedisCluster} is a sentinel/replication setup, not Redis Cluster; its {@code RedisShardedCluster} is, but
 * it forms the cluster through Jedis with 300 ms sleeps and checks only the first node, its shared
 * {@code RedisServerBuilder} piles every node's settings into the next node's config ({@code reset()} clears only
 * {@code slaveOf}), each node extracts its own 9.7 MB copy of the binary into a new temp folder and writes its
 * {@code .conf} into {@code java.io.tmpdir} (both only {@code deleteOnExit}), and a server started without a
 * stdout listener never has its stdout drained after the ready line. Starting processes here keeps the system
 * binary, the directories, the readiness checks and the cleanup the same for standalone servers and clusters.
 *
 * <p>Usage:
 * <pre>{@code
 * try (RedisHandle redis = RedisServers.standalone()) {
 *     RedisClient client = RedisClient.create(redis.uri());
 *     ...
 * }
 * try (RedisHandle redis = RedisServers.withTls()) {   // redis.uri() is rediss://127.0.0.1:PORT
 *     RedisClient client = RedisClient.create(redis.uri() + "?verifyPeer=NONE");   // or trust RedisTls.caCertificate()
 *     ...
 * }
 * try (RedisClusterHandle cluster = RedisServers.cluster()) {
 *     RedisClusterClient client = RedisClusterClient.create(cluster.seedUri());
 *     ...
 * }
 * try (RedisSentinelHandle sentinel = RedisServers.sentinel()) {   // redis-sentinel://...#tbmaster
 *     RedisClient client = RedisClient.create(sentinel.uri());
 *     RedisHandle old = sentinel.failover();
 *     sentinel.awaitMaster(sentinel.other(old));
 * }
 * }</pre>
 */
public final class RedisServers {

    /** System property naming the {@code redis-server} to run, or {@code embedded} for the bundled binary. */
    public static final String BINARY_PROPERTY = "tokenbucket.redis.server";
    /** Environment variable read when {@link #BINARY_PROPERTY} is not set; same values. */
    public static final String BINARY_ENV = "TOKENBUCKET_REDIS_SERVER";
    /** How long a server may take to answer {@code PING} after its process started. */
    public static final Duration READY_TIMEOUT = Duration.ofSeconds(10);
    /** How long a cluster may take to report {@code cluster_state:ok} on every node once its nodes answer. */
    public static final Duration CLUSTER_TIMEOUT = Duration.ofSeconds(20);
    /** The only address servers bind. */
    public static final String HOST = "127.0.0.1";

    static final int CLUSTER_SLOTS = 16384;
    private static final int CLUSTER_BUS_OFFSET = 10000;
    /** Server ports are drawn from {@value #PORT_FROM} (inclusive) to {@value #PORT_TO} (exclusive). */
    private static final int PORT_FROM = 10_000;
    private static final int PORT_TO = 20_000;
    private static final int START_ATTEMPTS = 3;
    private static final String ROOT_PREFIX = "tokenbucket-redis-";
    private static final String OWNER_FILE = "owner.pid";
    static final String PID_FILE = "redis.pid";
    private static final Pattern VERSION = Pattern.compile("v=(\\S+)");
    private static final Logger LOG = LoggerFactory.getLogger(RedisServers.class);

    /** Handles not yet closed: what the shutdown hook kills. */
    private static final Set<RedisHandle> OPEN = ConcurrentHashMap.newKeySet();
    /** Ports held by open handles of this JVM (server ports and cluster bus ports). */
    private static final Set<Integer> RESERVED = new HashSet<>();

    private static Path root;
    private static Binary binary;
    /** This JVM's shared standalone server and cluster, started on first use; see {@link #shared()}. */
    private static RedisHandle shared;
    private static RedisClusterHandle sharedCluster;

    /** The executable, its version and whether it is the embedded one. */
    private record Binary(Path path, String version, boolean embedded) {
    }

    private RedisServers() {
    }

    // ---------------------------------------------------------------- factories

    /**
     * Starts a standalone server on a free loopback port and waits until it answers {@code PING}.
     *
     * @return the running server; close it
     */
    public static RedisHandle standalone() {
        return standalone(new String[0]);
    }

    /**
     * Starts a standalone server with extra {@code redis.conf} lines, appended after the defaults (so they win), e.g.
     * {@code "requirepass s3cret"}, {@code "user alice on >wonderland ~* +@all"}, {@code "maxmemory 10mb"}.
     * A {@code requirepass} line is remembered: {@link RedisHandle#password()},
     * {@link RedisHandle#authenticatedUri()}, and {@link RedisHandle#command} authenticates with it.
     *
     * @param settings redis.conf lines, one directive each
     * @return the running server; close it
     */
    public static RedisHandle standalone(String... settings) {
        return startNode(List.of(settings), false, false);
    }

    /**
     * Starts a standalone server that speaks TLS only: {@code port 0} (no plain TCP), {@code tls-port} on a free
     * loopback port, the test certificate of {@link RedisTls} ({@code tls-cert-file}, {@code tls-key-file},
     * {@code tls-ca-cert-file}) and {@code tls-auth-clients no} (clients need no certificate). Its
     * {@link RedisHandle#uri()} is {@code rediss://127.0.0.1:PORT}; it is ready when {@code PING} over TLS, with the
     * server's certificate verified against the test CA, answers; {@link RedisHandle#command} speaks TLS too.
     * Standalone only: no TLS cluster.
     *
     * @param settings more redis.conf lines, after the TLS ones (so they win), e.g. {@code "requirepass s3cret"}
     * @return the running server; close it
     */
    public static RedisHandle withTls(String... settings) {
        return startNode(List.of(settings), false, true);
    }

    /**
     * Starts a standalone server that requires {@code password} ({@code requirepass}): unauthenticated commands
     * get {@code NOAUTH}; {@link RedisHandle#authenticatedUri()} is {@code redis://:password@127.0.0.1:PORT}.
     *
     * @param password the password of the default user; no whitespace
     * @return the running server; close it
     */
    public static RedisHandle withPassword(String password) {
        if (password.isEmpty() || password.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException("password must be non-empty without whitespace");
        }
        return standalone("requirepass " + password);
    }

    /**
     * The standalone server every test of this JVM may share, started on first use: for a test that needs a Redis but
     * not one of its own. A test that stops, pauses ({@code CLIENT PAUSE}), reconfigures or kills its server starts its
     * own with {@link #standalone()}; the shared handle refuses {@link RedisHandle#stop()} and those commands, and its
     * {@link RedisHandle#close()} does nothing (the server ends with the JVM). Keys stay from one test to the next: a
     * test keeps to keys of its own (a namespace) or calls {@link RedisHandle#flushAll()} first.
     *
     * @return the running shared server
     */
    public static synchronized RedisHandle shared() {
        if (shared == null || !shared.isRunning()) {
            shared = standalone();
            shared.share();
        }
        return shared;
    }

    /**
     * The 3-master cluster every test of this JVM may share, started on first use; as {@link #shared()}: its nodes
     * refuse {@code stop()}, pauses and reconfiguration, and its {@link RedisClusterHandle#close()} does nothing.
     * Forming a cluster takes over 2 s, most of it Redis's own delay before a new master is writable, so sharing one
     * pays.
     *
     * @return the shared cluster, every node reporting {@code cluster_state:ok}
     */
    public static synchronized RedisClusterHandle sharedCluster() {
        if (sharedCluster == null || !sharedCluster.nodes().stream().allMatch(RedisHandle::isRunning)) {
            sharedCluster = cluster();
            sharedCluster.nodes().forEach(RedisHandle::share);
        }
        return sharedCluster;
    }

    /**
     * Starts a Redis Cluster of 3 masters and no replicas; see {@link #cluster(int)}.
     *
     * @return the cluster, every node reporting {@code cluster_state:ok}; close it
     */
    public static RedisClusterHandle cluster() {
        return cluster(3);
    }

    /**
     * Starts a Redis Cluster of {@code masters} masters and no replicas on free loopback ports: each node gets its
     * own config epoch, the first node meets the others, once every node is connected to every other each gets an
     * equal range of the 16384 slots, and this returns once every node reports {@code cluster_state:ok} and knows
     * all the others. Redis refuses {@code ok} until a
     * master has been up for 2 s ({@code CLUSTER_WRITABLE_DELAY}), so expect a little over 2 s.
     *
     * @param masters how many masters, at least 1
     * @return the cluster; close it
     */
    public static RedisClusterHandle cluster(int masters) {
        return cluster(masters, new String[0]);
    }

    /**
     * Starts a Redis Cluster as {@link #cluster(int)} with extra {@code redis.conf} lines for every node, after the
     * defaults ({@code cluster-node-timeout 5000} among them), e.g. {@code "cluster-node-timeout 1000"} for a test
     * that wants a stopped master noticed sooner. No {@code requirepass}: forming the cluster talks to the nodes
     * without a password.
     *
     * @param masters  how many masters, at least 1
     * @param settings redis.conf lines, one directive each
     * @return the cluster; close it
     */
    public static RedisClusterHandle cluster(int masters, String... settings) {
        if (masters < 1) {
            throw new IllegalArgumentException("masters must be at least 1");
        }
        List<String> all = new ArrayList<>(List.of(
                "cluster-enabled yes",
                "cluster-config-file nodes.conf",
                "cluster-node-timeout 5000"));
        all.addAll(List.of(settings));
        if (all.stream().anyMatch(setting -> setting.trim().toLowerCase(Locale.ROOT).startsWith("requirepass"))) {
            throw new IllegalArgumentException("a cluster with requirepass is not supported");
        }
        List<RedisHandle> nodes = new ArrayList<>(masters);
        try {
            for (int i = 0; i < masters; i++) {
                nodes.add(startNode(all, true, false));
            }
            // As redis-cli --cluster create: distinct config epochs (only possible while a node knows nobody) and
            // the slots first, so the handshakes carry them.
            for (int i = 0; i < masters; i++) {
                RedisHandle node = nodes.get(i);
                node.command("CLUSTER", "SET-CONFIG-EPOCH", Integer.toString(i + 1));
                int from = i * CLUSTER_SLOTS / masters;
                int to = (i + 1) * CLUSTER_SLOTS / masters;
                List<String> args = new ArrayList<>(2 + to - from);
                args.add("CLUSTER");
                args.add("ADDSLOTS");
                for (int slot = from; slot < to; slot++) {
                    args.add(Integer.toString(slot));
                }
                node.command(args.toArray(String[]::new));
            }
            // Every pair meets directly rather than through gossip (which travels with a ping a second).
            for (int i = 0; i < masters; i++) {
                for (int j = i + 1; j < masters; j++) {
                    nodes.get(i).command("CLUSTER", "MEET", HOST, Integer.toString(nodes.get(j).port()));
                }
            }
            RedisClusterHandle cluster = new RedisClusterHandle(nodes);
            cluster.awaitClusterOk();
            return cluster;
        } catch (RuntimeException | Error e) {
            nodes.forEach(RedisHandle::close);
            throw e;
        }
    }

    /**
     * Starts a Redis Sentinel setup: a master, its replica ({@code replicaof}) and three Sentinels
     * ({@code redis-server --sentinel}, the same binary) monitoring it as {@value RedisSentinelHandle#MASTER_NAME}, all
     * on free loopback ports of this class's range; returns once the replica is in sync and every Sentinel knows it and
     * the two others (Sentinels find each other through hello messages every 2 s: expect 2 to 3 s). See
     * {@link RedisSentinelHandle} for the timings.
     *
     * @param settings redis.conf lines for both data nodes; a {@code requirepass} there also becomes the replica's
     *                 {@code masterauth} and the Sentinels' {@code auth-pass} (the Sentinels themselves need no password)
     * @return the setup; close it
     */
    public static RedisSentinelHandle sentinel(String... settings) {
        List<RedisHandle> dataNodes = new ArrayList<>(2);
        List<RedisHandle> sentinels = new ArrayList<>(3);
        try {
            RedisHandle master = startNode(List.of(settings), false, false);
            dataNodes.add(master);
            String password = master.password();
            List<String> replica = new ArrayList<>(List.of(settings));
            replica.add("replicaof " + HOST + " " + master.port());
            if (password != null) {
                replica.add("masterauth " + password);
            }
            dataNodes.add(startNode(replica, false, false));
            List<String> sentinelSettings = RedisSentinelHandle.sentinelSettings(master.port(), password);
            for (int i = 0; i < 3; i++) {
                sentinels.add(startNode(sentinelSettings, false, false, true));
            }
            RedisSentinelHandle setup = new RedisSentinelHandle(dataNodes, sentinels, password);
            setup.awaitReplicated();
            return setup;
        } catch (RuntimeException | Error e) {
            sentinels.forEach(RedisHandle::close);
            dataNodes.forEach(RedisHandle::close);
            throw e;
        }
    }

    /**
     * The {@code redis-server} executable this JVM runs (resolving it, and extracting the embedded one, on first use).
     *
     * @return its path
     */
    public static Path binary() {
        return resolveBinary().path();
    }

    /**
     * The version the executable reports ({@code redis-server --version}), e.g. {@code 6.2.11}.
     *
     * @return the version
     */
    public static String version() {
        return resolveBinary().version();
    }

    /**
     * For reports: {@code redis-server <version> (<path>)}.
     *
     * @return the description
     */
    public static String describe() {
        return "redis-server " + version() + " (" + binary() + ")";
    }

    /**
     * Whether the executable is the one bundled in embedded-redis rather than a system one.
     *
     * @return true for the embedded binary
     */
    public static boolean embedded() {
        return resolveBinary().embedded();
    }

    /**
     * A reply to {@code TIME} (the seconds and the microseconds of the server's clock, two strings) in microseconds
     * since the epoch: the unit of {@code bucket.lua}'s {@code now}.
     *
     * @param time the reply, from Lettuce's {@code time()} or {@code RedisHandle.command("TIME")}
     * @return the microseconds
     */
    public static long micros(List<?> time) {
        return Long.parseLong((String) time.get(0)) * 1_000_000 + Long.parseLong((String) time.get(1));
    }

    /** A {@code -ERR ...} style reply from Redis to {@link RedisHandle#command}. */
    public static final class RedisErrorReply extends RuntimeException {

        private static final long serialVersionUID = 1L;

        RedisErrorReply(String message) {
            super(message);
        }
    }

    // ---------------------------------------------------------------- starting nodes

    /** Starts a node, retrying on a new port when the probed one was taken before the server could bind it. */
    private static RedisHandle startNode(List<String> settings, boolean clusterNode, boolean tls) {
        return startNode(settings, clusterNode, tls, false);
    }

    private static RedisHandle startNode(List<String> settings, boolean clusterNode, boolean tls, boolean sentinel) {
        for (int attempt = 1; ; attempt++) {
            RedisHandle handle = new RedisHandle(freePort(clusterNode), settings, clusterNode, tls, sentinel);
            try {
                handle.start();
                return handle;
            } catch (RuntimeException e) {
                handle.close();
                if (!(e instanceof RedisHandle.PortInUse) || attempt == START_ATTEMPTS) {
                    throw e;
                }
                LOG.warn("Port {} was taken before redis-server could bind it, trying another", handle.port());
            }
        }
    }

    /**
     * A port from {@value #PORT_FROM} to {@value #PORT_TO} (exclusive) that is free now and not held by another handle
     * of this JVM nor by another test JVM ({@link PortLocks}), reserved until {@link #release}; for cluster nodes
     * {@code port + 10000} is checked and reserved too.
     */
    static synchronized int freePort(boolean clusterBus) {
        for (int attempt = 0; attempt < 1000; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(PORT_FROM, PORT_TO);
            if (RESERVED.contains(port) || !PortLocks.hold(port)) {
                continue;
            }
            if (!bindable(port)) {
                PortLocks.release(port);
                continue;
            }
            if (clusterBus) {
                int bus = port + CLUSTER_BUS_OFFSET;
                if (RESERVED.contains(bus) || !PortLocks.hold(bus)) {
                    PortLocks.release(port);
                    continue;
                }
                if (!bindable(bus)) {
                    PortLocks.release(bus);
                    PortLocks.release(port);
                    continue;
                }
                RESERVED.add(bus);
            }
            RESERVED.add(port);
            return port;
        }
        throw new IllegalStateException("no free loopback port from " + PORT_FROM + " to " + (PORT_TO - 1)
                + " in 1000 tries");
    }

    private static boolean bindable(int port) {
        try (ServerSocket probe = new ServerSocket(port, 1, InetAddress.getByName(HOST))) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    static synchronized void release(int port, boolean clusterBus) {
        RESERVED.remove(port);
        PortLocks.release(port);
        if (clusterBus) {
            RESERVED.remove(port + CLUSTER_BUS_OFFSET);
            PortLocks.release(port + CLUSTER_BUS_OFFSET);
        }
    }

    static void opened(RedisHandle handle) {
        OPEN.add(handle);
    }

    static void closed(RedisHandle handle) {
        OPEN.remove(handle);
    }

    // ---------------------------------------------------------------- temporary root, binary, shutdown hook

    /** This JVM's temporary root, created (with the shutdown hook, after reaping stale roots) on first use. */
    static synchronized Path root() {
        if (root == null) {
            try {
                Path created = Files.createTempDirectory(ROOT_PREFIX);
                Files.writeString(created.resolve(OWNER_FILE), Long.toString(ProcessHandle.current().pid()));
                reapStaleRoots(created);
                Runtime.getRuntime().addShutdownHook(new Thread(RedisServers::shutdown, "redis-servers-cleanup"));
                root = created;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create a temporary directory for redis-server", e);
            }
        }
        return root;
    }

    private static synchronized Binary resolveBinary() {
        if (binary == null) {
            binary = findBinary();
            LOG.info("redis-server {} ({}) at {}", binary.version(), binary.embedded() ? "embedded" : "system",
                    binary.path());
        }
        return binary;
    }

    private static Binary findBinary() {
        String configured = System.getProperty(BINARY_PROPERTY, System.getenv(BINARY_ENV));
        if (configured != null && !configured.isBlank() && !configured.equals("embedded")) {
            Path path = Path.of(configured);
            String version = versionOf(path);
            if (version == null) {
                throw new IllegalStateException(BINARY_PROPERTY + "=" + configured + " does not run as redis-server");
            }
            return new Binary(path, version, false);
        }
        if (configured == null || configured.isBlank()) {
            Path onPath = findOnPath("redis-server");
            String version = onPath == null ? null : versionOf(onPath);
            if (version != null) {
                return new Binary(onPath, version, false);
            }
        }
        Path extracted = extractEmbedded();
        String version = versionOf(extracted);
        if (version == null) {
            throw new IllegalStateException("the embedded redis-server " + extracted + " does not run here ("
                    + System.getProperty("os.name") + " " + System.getProperty("os.arch")
                    + "); install redis-server or set -D" + BINARY_PROPERTY + "=/path/to/redis-server");
        }
        return new Binary(extracted, version, true);
    }

    /**
     * An executable named {@code name} on the {@code PATH} (e.g. {@code redis-benchmark}), or null.
     *
     * @param name the file name
     * @return its path, or null
     */
    public static Path findOnPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String dir : path.split(File.pathSeparator)) {
            if (dir.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    /** Copies the platform's binary out of the embedded-redis jar into this JVM's root; never downloads anything. */
    private static Path extractEmbedded() {
        try {
            Path bin = Files.createDirectories(root().resolve("bin"));
            return ExecutableProvider.newJarResourceProvider(bin.toFile()).get().toPath();
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot extract the redis-server bundled in embedded-redis for "
                    + System.getProperty("os.name") + " " + System.getProperty("os.arch"), e);
        }
    }

    /** The version {@code path --version} prints, or null when it does not run. */
    private static String versionOf(Path path) {
        try {
            Process process = new ProcessBuilder(path.toString(), "--version").redirectErrorStream(true).start();
            byte[] output = process.getInputStream().readAllBytes();
            if (!process.waitFor(5, TimeUnit.SECONDS) || process.exitValue() != 0) {
                process.destroyForcibly();
                return null;
            }
            Matcher matcher = VERSION.matcher(new String(output, StandardCharsets.UTF_8));
            return matcher.find() ? matcher.group(1) : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** The shutdown hook: kills what is still running, then deletes the root. */
    private static void shutdown() {
        for (RedisHandle handle : List.copyOf(OPEN)) {
            handle.kill();
        }
        Path dir;
        synchronized (RedisServers.class) {
            dir = root;
        }
        if (dir != null) {
            deleteRecursively(dir);
        }
    }

    /**
     * Deletes the roots of JVMs that died without running their hook, killing their redis-server processes first.
     * Best effort: a root whose owner is alive, or that is not ours, is left alone.
     */
    private static void reapStaleRoots(Path ours) {
        try (DirectoryStream<Path> roots = Files.newDirectoryStream(ours.getParent(), ROOT_PREFIX + "*")) {
            for (Path stale : roots) {
                if (stale.equals(ours) || !Files.isDirectory(stale)) {
                    continue;
                }
                long owner = readPid(stale.resolve(OWNER_FILE));
                if (owner < 0 || ProcessHandle.of(owner).map(ProcessHandle::isAlive).orElse(false)) {
                    continue;
                }
                try (DirectoryStream<Path> nodes = Files.newDirectoryStream(stale)) {
                    for (Path node : nodes) {
                        killOrphan(node);
                    }
                }
                deleteRecursively(stale);
                LOG.info("Deleted {} left by a JVM that is gone", stale);
            }
        } catch (IOException | RuntimeException e) {
            LOG.debug("Could not reap stale redis roots", e);
        }
    }

    private static void killOrphan(Path nodeDir) {
        long pid = readPid(nodeDir.resolve(PID_FILE));
        if (pid < 0) {
            return;
        }
        ProcessHandle.of(pid).filter(ProcessHandle::isAlive).ifPresent(process -> {
            try {
                // Only a process still running in that node's directory is ours (pids get reused).
                Path cwd = Files.readSymbolicLink(Path.of("/proc", Long.toString(pid), "cwd"));
                if (cwd.equals(nodeDir.toRealPath())) {
                    process.destroyForcibly();
                    LOG.info("Killed orphan redis-server {} in {}", pid, nodeDir);
                }
            } catch (IOException | UnsupportedOperationException e) {
                // not Linux, or not ours to inspect: leave it
            }
        });
    }

    private static long readPid(Path file) {
        try {
            return Long.parseLong(Files.readString(file).trim());
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException e) {
                    LOG.debug("Could not delete {}", path, e);
                }
            });
        } catch (IOException | UncheckedIOException e) {
            LOG.debug("Could not delete {}", dir, e);
        }
    }

    // ---------------------------------------------------------------- a minimal RESP client

    /**
     * Sends one command on a fresh connection (after {@code AUTH password} when {@code password} is not null) and
     * returns the reply: a {@link String} for simple and bulk strings, a {@link Long} for integers, a {@link List}
     * for arrays, null for nil; an error reply is thrown as {@link RedisErrorReply}. With {@code tls} the connection
     * is TLS, the server's certificate verified against the test CA ({@link RedisTls}); a failed handshake is an
     * {@link IOException} ({@code SSLException}). No Lettuce, so the tests' client is never the thing that checks
     * the server.
     */
    static Object call(int port, boolean tls, String password, Duration timeout, String... args) throws IOException {
        try (Socket plain = new Socket()) {
            int millis = (int) Math.max(1, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
            plain.connect(new InetSocketAddress(InetAddress.getByName(HOST), port), millis);
            plain.setSoTimeout(millis);
            try (Socket socket = tls ? RedisTls.handshake(plain, HOST, port) : null) {
                return exchange(socket != null ? socket : plain, password, args);
            }
        }
    }

    private static Object exchange(Socket socket, String password, String... args) throws IOException {
        OutputStream out = new BufferedOutputStream(socket.getOutputStream());
        InputStream in = new BufferedInputStream(socket.getInputStream());
        if (password != null) {
            writeCommand(out, "AUTH", password);
        }
        writeCommand(out, args);
        out.flush();
        if (password != null) {
            readReply(in);
        }
        return readReply(in);
    }

    private static void writeCommand(OutputStream out, String... args) throws IOException {
        out.write(('*' + Integer.toString(args.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (String arg : args) {
            byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
            out.write(('$' + Integer.toString(bytes.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(bytes);
            out.write('\r');
            out.write('\n');
        }
    }

    private static Object readReply(InputStream in) throws IOException {
        int type = in.read();
        if (type < 0) {
            throw new IOException("connection closed by redis-server");
        }
        String line = readLine(in);
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new RedisErrorReply(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int length = Integer.parseInt(line);
                if (length < 0) {
                    return null;
                }
                byte[] bytes = in.readNBytes(length + 2);
                if (bytes.length != length + 2) {
                    throw new IOException("connection closed inside a bulk string");
                }
                return new String(bytes, 0, length, StandardCharsets.UTF_8);
            }
            case '*': {
                int count = Integer.parseInt(line);
                if (count < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    try {
                        items.add(readReply(in));
                    } catch (RedisErrorReply e) {
                        items.add(e);
                    }
                }
                return items;
            }
            default:
                throw new IOException("unexpected RESP type '" + (char) type + "' " + line);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int previous = -1;
        for (int b; (b = in.read()) >= 0; previous = b) {
            if (previous == '\r' && b == '\n') {
                byte[] bytes = line.toByteArray();
                return new String(bytes, 0, bytes.length - 1, StandardCharsets.UTF_8);
            }
            line.write(b);
        }
        throw new IOException("connection closed inside a reply: " + Arrays.toString(line.toByteArray()));
    }
}
