package io.tokenbucket.store.redis;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.protocol.ProtocolVersion;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A server on loopback that speaks the Redis protocol but answers the bucket script with an array of the right
 * length whose entries are bulk strings, not integers: a reply no Redis gives for {@code bucket.lua}, as a proxy or
 * a look-alike server might. Every reservation must still complete exactly once, failed with a message naming the
 * reply; none may hang.
 */
class RedisHostileReplyTest {

    private static final long MS = 1_000_000;

    private ServerSocket server;
    private Thread serving;
    private RedisClient client;
    private StatefulRedisConnection<String, String> connection;

    @BeforeEach
    void start() throws IOException {
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        serving = new Thread(this::serve, "hostile-redis");
        serving.setDaemon(true);
        serving.start();
        client = RedisClient.create(RedisURI.create("redis://127.0.0.1:" + server.getLocalPort()));
        client.setOptions(ClientOptions.builder().protocolVersion(ProtocolVersion.RESP2).build());
        connection = client.connect();
    }

    @AfterEach
    void stop() throws Exception {
        if (connection != null) {
            connection.close();
        }
        if (client != null) {
            client.shutdown();
        }
        server.close();
        serving.join(5_000);
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aReservationAnsweredWithStringsFailsInsteadOfHanging(boolean batching) throws Exception {
        RedisBucketStore store = new RedisBucketStore(connection::async, false, "hostile:", Duration.ofSeconds(2),
                batching, size -> { });
        Limits limits = Limits.of(Limit.of(10, 10, 1000 * MS));
        List<CompletableFuture<Outcome>> answers = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            answers.add(store.reserve("k" + (i % 3), limits, 1, 0).toCompletableFuture());
        }
        for (CompletableFuture<Outcome> answer : answers) {
            // within the store timeout and then some: a stage left pending here would hold its exchange forever
            Throwable failure = catchThrowable(() -> answer.get(10, TimeUnit.SECONDS));
            assertThat(failure).as("the answer to a reply of strings").isInstanceOf(ExecutionException.class);
            assertThat(failure.getCause()).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("not an answer the script gives");
        }
    }

    /** Answers every connection: the script with six bulk strings, anything else +OK. */
    private void serve() {
        while (!server.isClosed()) {
            try {
                Socket socket = server.accept();
                Thread t = new Thread(() -> answer(socket), "hostile-redis-connection");
                t.setDaemon(true);
                t.start();
            } catch (IOException closed) {
                return;
            }
        }
    }

    private static void answer(Socket socket) {
        try (socket; InputStream in = new BufferedInputStream(socket.getInputStream());
             OutputStream out = socket.getOutputStream()) {
            while (true) {
                List<String> command = readCommand(in);
                if (command == null) {
                    return;
                }
                String name = command.get(0).toUpperCase();
                String reply;
                if (name.equals("EVALSHA") || name.equals("EVAL")) {
                    // the script's own numbers, but as strings: each reservation's three (one key each), then the
                    // script's now and the clock again
                    int members = Integer.parseInt(command.get(2));
                    StringBuilder b = new StringBuilder("*" + (members * ScriptReply.reservedFields(1) + 2) + "\r\n");
                    for (int m = 0; m < members; m++) {
                        for (String v : new String[] {"1", "0", "9"}) {
                            b.append('$').append(v.length()).append("\r\n").append(v).append("\r\n");
                        }
                    }
                    b.append("$16\r\n1700000000000000\r\n");
                    b.append("$16\r\n1700000000000001\r\n");
                    reply = b.toString();
                } else if (name.equals("PING")) {
                    reply = "+PONG\r\n";
                } else {
                    reply = "+OK\r\n";
                }
                out.write(reply.getBytes(StandardCharsets.US_ASCII));
                out.flush();
            }
        } catch (IOException gone) {
            // the client closed the connection
        }
    }

    /** One command of the protocol (an array of bulk strings), or null at the end of the stream. */
    private static List<String> readCommand(InputStream in) throws IOException {
        String header = readLine(in);
        if (header == null) {
            return null;
        }
        int count = Integer.parseInt(header.substring(1));
        List<String> parts = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int length = Integer.parseInt(readLine(in).substring(1));
            byte[] data = in.readNBytes(length + 2);
            parts.add(new String(data, 0, length, StandardCharsets.UTF_8));
        }
        return parts;
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\r') {
                in.read();
                return line.toString();
            }
            line.append((char) c);
        }
        return null;
    }
}
