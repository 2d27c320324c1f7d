package io.tokenbucket.store.redis;

import java.time.Duration;

import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.api.sync.RedisCommands;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real redis-server with {@code bucket.lua} loaded, and a synchronous connection to it: what the script's
 * differential tests (batch, adaptive) start once per class.
 */
final class ScriptServer implements AutoCloseable {

    private final RedisHandle redis;
    private final RedisConnections connections;
    /** Synchronous commands on one connection; the script is loaded, so every call can be an EVALSHA. */
    final RedisCommands<String, String> commands;

    private ScriptServer(RedisHandle redis, RedisConnections connections, RedisCommands<String, String> commands) {
        this.redis = redis;
        this.connections = connections;
        this.commands = commands;
    }

    /** Takes the JVM's shared server ({@link RedisServers#shared()}), emptied, and loads the script on it. */
    static ScriptServer start() {
        RedisHandle redis = RedisServers.shared();
        redis.flushAll();
        RedisConnections connections = new RedisConnections();
        RedisCommands<String, String> commands = ((RedisAsyncCommands<String, String>) connections
                .acquire(redis.uri(), Duration.ofSeconds(30)).commands()).getStatefulConnection().sync();
        assertThat(commands.scriptLoad(BucketScript.SOURCE)).isEqualTo(BucketScript.DIGEST);
        return new ScriptServer(redis, connections, commands);
    }

    @Override
    public void close() {
        connections.close();
        redis.close();
    }
}
