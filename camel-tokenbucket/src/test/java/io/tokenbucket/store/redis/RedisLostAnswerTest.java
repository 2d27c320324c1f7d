package io.tokenbucket.store.redis;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.cluster.SlotHash;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.testsupport.redis.RedisClusterHandle;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A reservation that Redis (a standalone one, or a Redis Cluster node) ran but whose answer was lost (the connection killed between the run and
 * the reply) is charged once and refused, never run again after the reconnect: Lettuce re-sends the commands a lost
 * connection had in flight unless commands are rejected while disconnected. The order on the node is made certain
 * without sleeping: the node sleeps ({@code DEBUG SLEEP}) while the reservation and then the {@code CLIENT KILL}
 * reach its sockets (seen in {@code /proc/net/tcp}), and it reads them in that order when it wakes, so the kill frees
 * the connection after the script ran and before its reply is written.
 */
@EnabledOnOs(OS.LINUX)
class RedisLostAnswerTest {

    private static final Limits LIMITS = Limits.of(Limit.of(5, 1, TimeUnit.SECONDS.toNanos(60)));

    @Test
    void onAStandaloneRedis() throws Exception {
        try (RedisHandle node = RedisServers.standalone()) {
            RedisConnections connections = new RedisConnections();
            try {
                RedisConnections.Lease lease = connections.acquire(node.uri(), Duration.ofSeconds(5));
                chargedOnceAndRefused(new RedisBucketStore(lease::commands, false, "lost:", Duration.ofSeconds(10),
                        true, size -> { }), node);
            } finally {
                connections.close();
            }
        }
    }

    @Test
    void onARedisClusterNode() throws Exception {
        try (RedisClusterHandle cluster = RedisServers.cluster()) {
            RedisConnections connections = new RedisConnections();
            try {
                String seeds = String.join(",", cluster.uris()).replace("redis://", "");
                RedisConnections.Lease lease = connections.acquire("redis-cluster://" + seeds, Duration.ofSeconds(5));
                chargedOnceAndRefused(new RedisBucketStore(lease::commands, true, "lost:", Duration.ofSeconds(10),
                        true, size -> { }), cluster.nodeForSlot(SlotHash.getSlot("lost:k")));
            } finally {
                connections.close();
            }
        }
    }

    /** The reservation on {@code lost:k}, run by {@code node}, its answer lost: charged once, refused. */
    private static void chargedOnceAndRefused(RedisBucketStore store, RedisHandle node) throws Exception {
        try (Socket admin = new Socket(RedisServers.HOST, node.port())) {
            await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() ->
                    store.reserve("k", LIMITS, 1, 0).toCompletableFuture().get(5, TimeUnit.SECONDS).granted());
            assertThat(send(admin, "PING")).isEqualTo("+PONG");
            int component = clientPort((String) node.command("CLIENT", "LIST"), "cmd=eval");
            node.command("CONFIG", "RESETSTAT");

            CompletableFuture<Object> sleep = CompletableFuture.supplyAsync(() ->
                    node.command("DEBUG", "SLEEP", "2"));
            // the node is in DEBUG SLEEP once a PING gets no answer
            await().atMost(Duration.ofSeconds(5)).until(() -> sleeping(node.port()));
            CompletableFuture<Outcome> call = store.reserve("k", LIMITS, 1, 0).toCompletableFuture();
            await().atMost(Duration.ofSeconds(1)).until(() -> unread(node.port(), component) > 0);
            admin.getOutputStream().write(resp("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"));
            admin.getOutputStream().flush();
            await().atMost(Duration.ofSeconds(1)).until(() -> unread(node.port(), admin.getLocalPort()) > 0);
            assertThat(sleep).isNotDone();
            assertThat(sleep.get(10, TimeUnit.SECONDS)).isEqualTo("OK");

            // the script ran, its answer never came: the call fails (the policy answers) and is not re-sent
            assertThatThrownBy(() -> call.get(15, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class);
            // once reconnected (until then commands are rejected at once)
            Outcome next = await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() ->
                    store.reserve("k", LIMITS, 1, 0).toCompletableFuture().get(5, TimeUnit.SECONDS), o -> true);
            assertThat(next.remaining()).as("tokens left of 5 after the warm-up, the lost call and this one")
                    .isEqualTo(2);
            assertThat((String) node.command("INFO", "commandstats")).contains("cmdstat_evalsha:calls=2,");
        }
    }

    /** Whether the node is inside DEBUG SLEEP: a command sent to it gets no answer within 200 ms. */
    private static boolean sleeping(int port) {
        try (Socket probe = new Socket(RedisServers.HOST, port)) {
            probe.setSoTimeout(200);
            probe.getOutputStream().write(resp("PING"));
            probe.getOutputStream().flush();
            probe.getInputStream().read();
            return false;
        } catch (java.net.SocketTimeoutException e) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The port of the client whose CLIENT LIST line contains {@code marker}. */
    private static int clientPort(String clients, String marker) {
        String line = clients.lines().filter(l -> l.contains(marker)).findFirst().orElseThrow();
        String addr = line.substring(line.indexOf("addr=") + 5, line.indexOf(' ', line.indexOf("addr=")));
        return Integer.parseInt(addr.substring(addr.lastIndexOf(':') + 1));
    }

    /** Bytes the node has not read yet on its socket from {@code clientPort} ({@code rx_queue} of /proc/net/tcp). */
    private static long unread(int serverPort, int clientPort) throws IOException {
        String local = String.format(":%04X", serverPort);
        String remote = String.format(":%04X", clientPort);
        for (String line : Files.readAllLines(Path.of("/proc/net/tcp"))) {
            String[] f = line.trim().split("\\s+");
            if (f.length > 4 && f[1].endsWith(local) && f[2].endsWith(remote)) {
                return Long.parseLong(f[4].substring(f[4].indexOf(':') + 1), 16);
            }
        }
        return 0;
    }

    private static String send(Socket socket, String... args) throws IOException {
        socket.getOutputStream().write(resp(args));
        socket.getOutputStream().flush();
        InputStream in = socket.getInputStream();
        StringBuilder line = new StringBuilder();
        for (int c = in.read(); c != '\r' && c >= 0; c = in.read()) {
            line.append((char) c);
        }
        in.read();
        return line.toString();
    }

    private static byte[] resp(String... args) {
        StringBuilder b = new StringBuilder("*" + args.length + "\r\n");
        for (String a : args) {
            b.append('$').append(a.length()).append("\r\n").append(a).append("\r\n");
        }
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }
}
