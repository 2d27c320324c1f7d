package io.tokenbucket.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.resource.ClientResources;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Redis at {@code maxclients} writes {@code ERR max number of clients reached} to a new connection and closes it at
 * once. When the close wins the race with Lettuce's connect listener, Lettuce fails the connect with
 * "RedisHandshakeHandler not registered" instead of the reply (1 % to 25 % of connects here, depending on load, with
 * Redis 6.2 and 7.0 alike). The connect is made again at once so that the reply decides; a server that keeps closing
 * unread counts as not serving.
 */
class RedisConnectionsFullTest {

    /** Lettuce's message when the server closed the channel before its answer could be read. */
    private static final String LOST_ANSWER = "RedisHandshakeHandler not registered";

    private static RedisHandle redis;
    private static ClientResources resources;

    @BeforeAll
    static void start() {
        redis = RedisServers.standalone("maxclients 1");
        resources = ClientResources.create();
    }

    @AfterAll
    static void stop() {
        resources.shutdown(0, 2, TimeUnit.SECONDS);
        redis.close();
    }

    /**
     * A client holding the server's one connection, once the server has answered it: the connection of the test
     * before may still hold it until the server has seen its close, so a refused attempt is made again.
     */
    private static Socket hold() {
        AtomicReference<Socket> held = new AtomicReference<>();
        await().atMost(Duration.ofSeconds(10)).until(() -> {
            Socket socket = new Socket(RedisServers.HOST, redis.port());
            socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            if (new String(socket.getInputStream().readNBytes(7), StandardCharsets.US_ASCII).equals("+PONG\r\n")) {
                held.set(socket);
                return true;
            }
            socket.close();
            return false;
        });
        return held.get();
    }

    /**
     * A real client whose first {@code lose} connects fail as Lettuce's do when the server's close wins the race, and
     * whose later ones end with the server's own answer: a real connect to the full server loses that race too at
     * times (up to one in four), so it is made again here until the answer comes, and the component's attempts are
     * exactly the simulated losses and then one answer.
     */
    private static RedisClient losing(int lose, AtomicInteger connects) {
        return new RedisClient(resources, RedisURI.create(redis.uri())) {
            @Override
            public <K, V> StatefulRedisConnection<K, V> connect(RedisCodec<K, V> codec) {
                if (connects.incrementAndGet() <= lose) {
                    throw new RedisConnectionException("Unable to connect to " + redis.uri(),
                            new IllegalStateException(LOST_ANSWER));
                }
                for (int attempt = 1; ; attempt++) {
                    try {
                        return super.connect(codec);
                    } catch (RedisConnectionException e) {
                        if (attempt == 100 || !(rootCause(e) instanceof IllegalStateException lost
                                && LOST_ANSWER.equals(lost.getMessage()))) {
                            throw e;
                        }
                    }
                }
            }
        };
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    @Test
    void everyFirstConnectToAFullRedisIsAnOutageAndConnectsOnceAConnectionIsFree() throws Exception {
        try (RedisConnections connections = new RedisConnections()) {
            Socket held = hold();
            try {
                for (int i = 0; i < 40; i++) {
                    try (RedisConnections.Lease lease = connections.acquire(redis.uri(), Duration.ofSeconds(2))) {
                        assertThat(lease.commands()).as("connect %d", i).isNull();
                        assertThat(lease.notConnected()).as("connect %d", i).isNotNull();
                    }
                }
            } finally {
                held.close();
            }
            try (RedisConnections.Lease lease = connections.acquire(redis.uri(), Duration.ofSeconds(2))) {
                await().atMost(Duration.ofSeconds(15)).until(() -> lease.commands() != null);
                assertThat(lease.commands().ping().get()).isEqualTo("PONG");
            }
        }
    }

    @Test
    void aLostReplyIsAskedForAgainAtOnceAndTheReplyDecides() throws Exception {
        AtomicInteger connects = new AtomicInteger();
        RedisClient client = losing(SharedConnection.LOST_ANSWER_ATTEMPTS - 1, connects);
        try (RedisConnections connections = new RedisConnections()) {
            Socket held = hold();
            try (RedisConnections.Lease lease = connections.acquire(client)) {
                assertThat(lease.commands()).isNull();
                assertThat(lease.notConnected()).hasRootCauseMessage("ERR max number of clients reached");
                assertThat(connects).hasValue(SharedConnection.LOST_ANSWER_ATTEMPTS);
            } finally {
                held.close();
            }
            connects.set(0);
            try (RedisConnections.Lease lease = connections.acquire(client)) {
                assertThat(lease.commands()).as("connected at once, not in the background").isNotNull();
                assertThat(connects).hasValue(SharedConnection.LOST_ANSWER_ATTEMPTS);
            }
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }

    @Test
    void aServerThatKeepsClosingUnreadIsNotServingAndConnectsInTheBackground() throws Exception {
        AtomicInteger connects = new AtomicInteger();
        RedisClient client = losing(SharedConnection.LOST_ANSWER_ATTEMPTS + 1, connects);
        try (RedisConnections connections = new RedisConnections();
             RedisConnections.Lease lease = connections.acquire(client)) {
            assertThat(lease.commands()).isNull();
            assertThat(lease.notConnected()).hasRootCauseMessage("RedisHandshakeHandler not registered");
            assertThat(connects).hasValue(SharedConnection.LOST_ANSWER_ATTEMPTS);
            await().atMost(Duration.ofSeconds(15)).until(() -> lease.commands() != null);
            assertThat(lease.commands().ping().get()).isEqualTo("PONG");
        } finally {
            client.shutdown(0, 2, TimeUnit.SECONDS);
        }
    }
}
