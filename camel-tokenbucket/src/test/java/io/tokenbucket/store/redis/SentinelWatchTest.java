package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCredentials;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

/**
 * What makes {@link SentinelWatch} move a connection: the first {@code +switch-master} for its master name (through the
 * Sentinel that announced it), and a {@code READONLY} refusal from a real replica, at most once a second. The move
 * itself, with real Sentinels, is {@code TokenBucketRedisSentinelTest}'s.
 */
class SentinelWatchTest {

    /** Sentinels on ports nothing listens on: the watch's subscriptions keep failing, which changes nothing here. */
    private static final String URI = "redis-sentinel://:pw@127.0.0.1:1,127.0.0.1:2,127.0.0.1:3#tbmaster";

    private record Move(RedisURI via, String why) {
    }

    private final List<Move> moves = new CopyOnWriteArrayList<>();
    private final ScheduledExecutorService connector = Executors.newSingleThreadScheduledExecutor();
    private RedisClient client;
    private RedisURI uri;
    private SentinelWatch watch;

    @BeforeEach
    void watch() {
        uri = RedisUris.parse(URI);
        client = RedisClient.create(uri);
        watch = new SentinelWatch(client, uri, () -> connector, (via, why) -> moves.add(new Move(via, why)));
        watch.start();
    }

    @AfterEach
    void close() {
        watch.close();
        connector.shutdownNow();
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }

    @Test
    void followsTheFirstAnnouncementOfItsMasterThroughTheSentinelThatMadeIt() {
        RedisURI second = uri.getSentinels().get(1);
        watch.announced(second, "othermaster 127.0.0.1 6379 127.0.0.1 6380");
        watch.announced(second, "tbmaster 127.0.0.1 6379");
        watch.announced(second, "tbmaster 127.0.0.1 6379 127.0.0.1 6380");
        watch.announced(uri.getSentinels().get(2), "tbmaster 127.0.0.1 6379 127.0.0.1 6380");
        await().atMost(Duration.ofSeconds(5)).until(() -> !moves.isEmpty());
        watch.announced(uri.getSentinels().get(0), "tbmaster 127.0.0.1 6380 127.0.0.1 6381");
        await().atMost(Duration.ofSeconds(5)).until(() -> moves.size() >= 2);

        Move first = moves.get(0);
        assertThat(first.why()).contains("tbmaster from 127.0.0.1:6379 to 127.0.0.1:6380");
        assertThat(first.via().getSentinelMasterId()).isEqualTo("tbmaster");
        assertThat(first.via().getSentinels()).extracting(RedisURI::getPort).containsExactly(2, 1, 3);
        RedisCredentials credentials = first.via().getCredentialsProvider().resolveCredentials().block();
        assertThat(new String(credentials.getPassword())).isEqualTo("pw");
        assertThat(moves.get(1).via().getSentinels()).extracting(RedisURI::getPort).containsExactly(1, 2, 3);
        assertThat(moves).hasSize(2);
    }

    @Test
    void aReadOnlyRefusalFromAReplicaAsksTheSentinelsAgainAtMostOnceASecond() {
        Throwable plain;
        Throwable scripted;
        Throwable again;
        Throwable other;
        try (RedisHandle master = RedisServers.standalone();
             RedisHandle replica = RedisServers.standalone("replicaof " + master.host() + " " + master.port());
             StatefulRedisConnection<String, String> connection = client.connect(RedisURI.create(replica.uri()))) {
            plain = catchThrowable(() -> connection.sync().set("k", "v"));
            scripted = catchThrowable(() -> connection.sync().eval("return redis.call('SET', KEYS[1], '1')",
                    ScriptOutputType.STATUS, "k"));
            again = catchThrowable(() -> connection.sync().set("k", "v2")); // within the second: no second move
            other = catchThrowable(() -> connection.sync().eval("return redis.call('NOPE')", ScriptOutputType.STATUS));
        }
        assertThat(SentinelWatch.isReadOnly(plain)).as(String.valueOf(plain)).isTrue();
        assertThat(SentinelWatch.isReadOnly(scripted)).as(String.valueOf(scripted)).isTrue();
        assertThat(SentinelWatch.isReadOnly(again)).as(String.valueOf(again)).isTrue();
        assertThat(SentinelWatch.isReadOnly(other)).as(String.valueOf(other)).isFalse();
        await().atMost(Duration.ofSeconds(5)).until(() -> !moves.isEmpty());
        assertThat(moves).hasSize(1);
        assertThat(moves.get(0).via()).isSameAs(uri);
        assertThat(moves.get(0).why()).contains("READONLY");
    }
}
