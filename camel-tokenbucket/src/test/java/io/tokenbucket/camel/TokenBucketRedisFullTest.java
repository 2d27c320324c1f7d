package io.tokenbucket.camel;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Endpoint;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A Redis that answers the connect with an outage reply ({@code ERR max number of clients reached} while other
 * clients hold every connection it allows) is down for now, as one that refuses the TCP connection: the endpoint
 * starts, its policy answers, and it connects in the background once a connection is free.
 */
class TokenBucketRedisFullTest extends TokenBucketTestSupport {

    private static RedisHandle redis;

    @BeforeAll
    static void startRedis() {
        // the endpoint's two connections (its store's and its subscription to released slots), and the check's
        redis = RedisServers.standalone("maxclients 3");
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    /** A client holding one of the server's connections, once the server has answered it. */
    private static Socket hold() throws IOException {
        Socket socket = new Socket(RedisServers.HOST, redis.port());
        socket.getOutputStream().write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
        byte[] pong = new byte[7];
        assertThat(socket.getInputStream().readNBytes(pong, 0, pong.length)).isEqualTo(7);
        assertThat(new String(pong, StandardCharsets.US_ASCII)).isEqualTo("+PONG\r\n");
        return socket;
    }

    @Test
    void anEndpointStartsWhileRedisHasNoConnectionLeftAndConnectsOnceOneIsFree() throws Exception {
        List<Socket> held = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                held.add(hold());
            }
            Endpoint endpoint = context.getEndpoint("tokenbucket:full?store=redis&onStoreError=allow&storeTimeout=2s"
                    + "&redisUri=" + redis.uri()); // starts: no exception
            assertThat(template.request(endpoint, e -> { }).getException()).isNull();
            assertThat(((TokenBucketEndpoint) endpoint).getFallbackCount()).isEqualTo(1);
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
        await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(50)).until(() -> {
            template.request("tokenbucket:full?store=redis&onStoreError=allow&storeTimeout=2s&redisUri="
                    + redis.uri(), e -> { });
            return Long.valueOf(1).equals(redis.command("EXISTS", "tokenbucket:full:"));
        });
    }
}
