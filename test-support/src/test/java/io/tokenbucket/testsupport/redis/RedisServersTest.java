package io.tokenbucket.testsupport.redis;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.resource.ClientResources;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

/**
 * The real servers the Redis store tests run against: standalone, with a password, and a 3-master cluster. The tests
 * run at once (each starts its own servers, and the cluster's and the Sentinels' mostly wait for them to agree).
 */
@Execution(ExecutionMode.CONCURRENT)
class RedisServersTest {

    private static ClientResources resources;

    @BeforeAll
    static void clientResources() {
        resources = ClientResources.create();
        System.out.printf("redis-server %s (%s) at %s%n", RedisServers.version(),
                RedisServers.embedded() ? "embedded" : "system", RedisServers.binary());
    }

    @AfterAll
    static void shutdownClientResources() {
        resources.shutdown(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
    }

    @Test
    void standaloneAnswersPingAndRunsLuaOnTheServerClock() {
        long began = System.nanoTime();
        try (RedisHandle redis = RedisServers.standalone()) {
            System.out.printf("standalone started in %d ms%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
            assertThat(redis.uri()).isEqualTo("redis://127.0.0.1:" + redis.port());
            assertThat(redis.port()).isLessThan(ephemeralPortsFrom());

            RedisClient client = RedisClient.create(redis.uri());
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                assertThat(connection.sync().ping()).isEqualTo("PONG");

                List<Object> time = connection.sync().eval("return redis.call('TIME')", ScriptOutputType.MULTI);
                assertThat(time).hasSize(2);
                long seconds = Long.parseLong(String.valueOf(time.get(0)));
                long micros = Long.parseLong(String.valueOf(time.get(1)));
                assertThat(seconds).isCloseTo(System.currentTimeMillis() / 1000, within(5L));
                assertThat(micros).isBetween(0L, 999_999L);
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }

            // persists nothing, and only in its own temporary directory
            assertThat(redis.command("CONFIG", "GET", "save")).isEqualTo(List.of("save", ""));
            assertThat(redis.command("CONFIG", "GET", "appendonly")).isEqualTo(List.of("appendonly", "no"));
            assertThat(redis.directory()).startsWith(Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath());
            assertThat(redis.directory().startsWith(Path.of("").toAbsolutePath())).isFalse();
        }
    }

    @Test
    void stopRefusesConnectionsAndStartComesBackOnTheSamePortWithNoData() throws Exception {
        try (RedisHandle redis = RedisServers.standalone()) {
            RedisClient client = RedisClient.create(resources, redis.uri());
            client.setOptions(ClientOptions.builder()
                    .socketOptions(SocketOptions.builder().connectTimeout(Duration.ofSeconds(2)).build())
                    .build());
            try (StatefulRedisConnection<String, String> old = client.connect()) {
                old.setTimeout(Duration.ofSeconds(1));
                old.sync().set("k", "v");
                int port = redis.port();
                long pid = redis.pid();

                long began = System.nanoTime();
                redis.stop();
                System.out.printf("stop took %d ms%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
                assertThat(redis.isRunning()).isFalse();
                assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
                assertThatThrownBy(() -> new Socket(RedisServers.HOST, port).close()).isInstanceOf(ConnectException.class);
                assertThatThrownBy(() -> client.connect().close()).isInstanceOf(RedisConnectionException.class);

                began = System.nanoTime();
                redis.start();
                System.out.printf("restart took %d ms%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
                assertThat(redis.port()).isEqualTo(port);
                assertThat(redis.pid()).isNotEqualTo(pid);
                try (StatefulRedisConnection<String, String> fresh = client.connect()) {
                    assertThat(fresh.sync().get("k")).isNull();
                    assertThat(fresh.sync().dbsize()).isZero();
                }
                // Lettuce's connection from before the crash reconnects by itself
                await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
                        .until(() -> "PONG".equals(old.sync().ping()));
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    @Test
    void passwordServerRejectsUnauthenticatedCommands() {
        try (RedisHandle redis = RedisServers.withPassword("s3cret")) {
            assertThat(redis.password()).isEqualTo("s3cret");
            assertThat(redis.authenticatedUri()).isEqualTo("redis://:s3cret@127.0.0.1:" + redis.port());

            // the server's own replies, on raw connections: Lettuce 7.7 reports 1 in 10 to 20 refused handshakes on a
            // loaded machine as "Connection closed prematurely" or "RedisHandshakeHandler not registered" (a race in
            // its handshake, measured with 300 connects in a loop), so its exception does not always name the reply
            assertThatThrownBy(() -> RedisServers.call(redis.port(), false, null, Duration.ofSeconds(10), "GET", "k"))
                    .isInstanceOf(RedisServers.RedisErrorReply.class).hasMessageStartingWith("NOAUTH");
            assertThatThrownBy(() -> RedisServers.call(redis.port(), false, "wrong", Duration.ofSeconds(10), "PING"))
                    .isInstanceOf(RedisServers.RedisErrorReply.class).hasMessageStartingWith("WRONGPASS");

            RedisClient anonymous = RedisClient.create(resources, redis.uri());
            RedisClient wrong = RedisClient.create(resources, "redis://:wrong@127.0.0.1:" + redis.port());
            RedisClient authenticated = RedisClient.create(resources, "redis://:s3cret@127.0.0.1:" + redis.port());
            try {
                assertThatThrownBy(() -> {
                    try (StatefulRedisConnection<String, String> connection = anonymous.connect()) {
                        connection.sync().get("k");
                    }
                }).isInstanceOf(RedisException.class);
                assertThatThrownBy(() -> wrong.connect().close()).isInstanceOf(RedisConnectionException.class);
                try (StatefulRedisConnection<String, String> connection = authenticated.connect()) {
                    assertThat(connection.sync().ping()).isEqualTo("PONG");
                    assertThat(connection.sync().set("k", "v")).isEqualTo("OK");
                }
            } finally {
                anonymous.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                wrong.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                authenticated.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
            assertThat(redis.command("GET", "k")).isEqualTo("v"); // command() authenticates by itself
        }
    }

    @Test
    void aclUserFromSettings() {
        try (RedisHandle redis = RedisServers.standalone("user alice on >wonderland ~* +@all", "user default off")) {
            // the server's own reply on a raw connection (see passwordServerRejectsUnauthenticatedCommands)
            assertThatThrownBy(() -> RedisServers.call(redis.port(), false, null, Duration.ofSeconds(10), "GET", "k"))
                    .isInstanceOf(RedisServers.RedisErrorReply.class).hasMessageStartingWith("NOAUTH");
            RedisClient alice = RedisClient.create(resources, "redis://alice:wonderland@127.0.0.1:" + redis.port());
            RedisClient anonymous = RedisClient.create(resources, redis.uri());
            try (StatefulRedisConnection<String, String> connection = alice.connect()) {
                assertThat(connection.sync().aclWhoami()).isEqualTo("alice");
                assertThat(connection.sync().ping()).isEqualTo("PONG");
                assertThatThrownBy(() -> {
                    try (StatefulRedisConnection<String, String> c = anonymous.connect()) {
                        c.sync().get("k");
                    }
                }).isInstanceOf(RedisException.class);
            } finally {
                alice.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                anonymous.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
    }

    @Test
    void clusterOfThreeMastersServesEveryMasterAndHashTaggedScriptsAndSurvivesARestart() {
        long began = System.nanoTime();
        List<Path> directories;
        List<Long> pids;
        try (RedisClusterHandle cluster = RedisServers.cluster()) {
            System.out.printf("cluster started in %d ms%n", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
            directories = cluster.nodes().stream().map(RedisHandle::directory).toList();
            pids = cluster.nodes().stream().map(RedisHandle::pid).toList();
            assertThat(cluster.uris()).hasSize(3).doesNotHaveDuplicates();
            assertThat(cluster.seedUri()).isEqualTo(cluster.uris().get(0));
            assertThat(cluster.ports()).allSatisfy(port -> assertThat(port + 10000).isLessThan(ephemeralPortsFrom()));

            RedisClient plain = RedisClient.create(resources);
            try {
                for (String uri : cluster.uris()) {
                    try (StatefulRedisConnection<String, String> node = plain.connect(RedisURI.create(uri))) {
                        assertThat(node.sync().clusterInfo())
                                .contains("cluster_state:ok", "cluster_known_nodes:3", "cluster_size:3",
                                        "cluster_slots_assigned:16384");
                        assertThat(node.sync().clusterNodes().lines().filter(line -> !line.isBlank()))
                                .hasSize(3).allMatch(line -> line.contains("master") && !line.contains("slave"));
                    }
                }
            } finally {
                plain.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }

            RedisClusterClient client = RedisClusterClient.create(resources, cluster.seedUri());
            try (StatefulRedisClusterConnection<String, String> connection = client.connect()) {
                Map<Integer, String> keyByPort = new TreeMap<>();
                for (int i = 0; keyByPort.size() < 3; i++) {
                    String key = "key:" + i;
                    int port = connection.getPartitions().getPartitionBySlot(SlotHash.getSlot(key)).getUri().getPort();
                    keyByPort.putIfAbsent(port, key);
                }
                assertThat(keyByPort.keySet()).containsExactlyInAnyOrderElementsOf(cluster.ports());
                keyByPort.forEach((port, key) -> assertThat(connection.sync().set(key, "v" + port)).isEqualTo("OK"));
                for (RedisHandle node : cluster.nodes()) {
                    String key = keyByPort.get(node.port());
                    assertThat(connection.sync().get(key)).isEqualTo("v" + node.port());
                    assertThat(node.command("GET", key)).isEqualTo("v" + node.port()); // really on that master
                    assertThat(cluster.nodeForSlot(SlotHash.getSlot(key))).isSameAs(node);
                }

                String[] tagged = {"{t}:a", "{t}:b"};
                assertThat(SlotHash.getSlot(tagged[0])).isEqualTo(SlotHash.getSlot(tagged[1]));
                List<Object> counts = connection.sync().eval(
                        "return {redis.call('INCRBY', KEYS[1], ARGV[1]), redis.call('INCRBY', KEYS[2], ARGV[1])}",
                        ScriptOutputType.MULTI, tagged, "5");
                assertThat(counts).containsExactly(5L, 5L);
                List<Object> time = connection.sync().eval("return redis.call('TIME')", ScriptOutputType.MULTI, tagged);
                assertThat(time).hasSize(2).allSatisfy(part -> Long.parseLong(String.valueOf(part)));

                assertThat(SlotHash.getSlot("{t}:a")).isNotEqualTo(SlotHash.getSlot("{u}:b"));
                assertThatThrownBy(() -> connection.sync().eval("return 1", ScriptOutputType.INTEGER, "{t}:a", "{u}:b"))
                        .hasMessageContaining("CROSSSLOT");

                // a master that crashes and starts again rejoins with its slots and no data
                RedisHandle second = cluster.nodes().get(1);
                String itsKey = keyByPort.get(second.port());
                second.stop();
                connection.setTimeout(Duration.ofSeconds(1));
                assertThatThrownBy(() -> connection.sync().get(itsKey)).isInstanceOf(RedisException.class);
                long restarted = System.nanoTime();
                second.start();
                cluster.awaitClusterOk();
                System.out.printf("cluster ok %d ms after a master restarted%n",
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restarted));
                await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
                        .untilAsserted(() -> assertThat(connection.sync().get(itsKey)).isNull());
                assertThat(connection.sync().get(keyByPort.get(cluster.ports().get(0)))).isNotNull();
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }
        }
        assertThat(directories).allSatisfy(directory -> assertThat(directory).doesNotExist());
        assertThat(pids).allSatisfy(pid -> assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty());
    }

    /**
     * The first port of the kernel's ephemeral range, which it hands to outgoing connections: a server's port (and a
     * cluster node's bus port) lies below it, so that no client connection takes it while the server is stopped.
     */
    private static int ephemeralPortsFrom() {
        Path range = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        if (!Files.isReadable(range)) {
            return 32768;
        }
        // one read of the whole line: a sysctl file answers nothing to a read that does not start at offset 0
        try (BufferedReader reader = Files.newBufferedReader(range)) {
            return Integer.parseInt(reader.readLine().trim().split("\\s+")[0]);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void closeKillsTheProcessAndDeletesItsDirectory() {
        RedisHandle redis = RedisServers.standalone();
        long pid = redis.pid();
        Path directory = redis.directory();
        assertThat(directory.resolve("redis.conf")).isRegularFile();

        redis.close();

        assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
        assertThat(directory).doesNotExist();
        assertThat(redis.isRunning()).isFalse();
        assertThatThrownBy(redis::start).isInstanceOf(IllegalStateException.class);
        redis.close(); // idempotent
    }
    /**
     * A Sentinel setup with a password on the data nodes: Lettuce finds the master through the Sentinels (the URI's
     * password applies to the data nodes only), a graceful failover promotes the replica, and the Sentinels name it.
     */
    @Test
    void sentinelSetupServesItsMasterThroughTheSentinelsAndFailsOver() {
        long began = System.nanoTime();
        try (RedisSentinelHandle sentinel = RedisServers.sentinel("requirepass s3cret")) {
            System.out.printf("sentinel setup started in %d ms%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began));
            assertThat(sentinel.uri()).startsWith("redis-sentinel://127.0.0.1:").endsWith("#tbmaster");
            assertThat(sentinel.authenticatedUri()).startsWith("redis-sentinel://:s3cret@127.0.0.1:");
            RedisHandle first = sentinel.master();
            assertThat(first).isSameAs(sentinel.dataNodes().get(0));
            assertThat(sentinel.sentinels()).allMatch(RedisHandle::sentinel);

            RedisClient client = RedisClient.create(resources, sentinel.authenticatedUri());
            try (StatefulRedisConnection<String, String> connection = client.connect()) {
                assertThat(connection.sync().set("k", "v")).isEqualTo("OK");
                assertThat(first.command("GET", "k")).isEqualTo("v");
            } finally {
                client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
            }

            long failover = System.nanoTime();
            assertThat(sentinel.failover()).isSameAs(first);
            RedisHandle second = sentinel.other(first);
            sentinel.awaitMaster(second);
            System.out.printf("every Sentinel names the new master %d ms after SENTINEL FAILOVER%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - failover));
            assertThat(String.valueOf(second.command("INFO", "replication"))).contains("role:master");
            assertThat(second.command("GET", "k")).isEqualTo("v");
        }
    }

    @Test
    void theSharedServerIsOnePerJvmAndNoTestsToEnd() {
        RedisHandle shared = RedisServers.shared();
        assertThat(RedisServers.shared()).isSameAs(shared);
        shared.command("SET", "shared-key", "1");

        shared.close(); // not the test's to end: the server lives on
        assertThat(shared.isRunning()).isTrue();
        assertThat(shared.command("GET", "shared-key")).isEqualTo("1");
        assertThatThrownBy(shared::stop).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("RedisServers.standalone()");
        assertThatThrownBy(() -> shared.command("client", "pause", "100")).isInstanceOf(IllegalStateException.class);
        assertThat(shared.isRunning()).isTrue();
        shared.command("DEL", "shared-key");
    }
}
