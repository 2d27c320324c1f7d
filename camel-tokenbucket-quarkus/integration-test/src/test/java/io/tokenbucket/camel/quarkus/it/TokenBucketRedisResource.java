package io.tokenbucket.camel.quarkus.it;

import java.util.Map;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;

/**
 * A real redis-server with a password for the application under test, started before it boots and closed after it
 * stops; its URI reaches the application as {@code camel.component.tokenbucket.redis-uri}, as a user's would.
 */
public class TokenBucketRedisResource implements QuarkusTestResourceLifecycleManager {

    /** The server's password: characters a URI must escape, and a text no log may show. */
    static final String PASSWORD = "qu@rkus/S3cret:x";

    /** The running server, for the tests that stop it or look into it. */
    static volatile RedisHandle redis;

    @Override
    public Map<String, String> start() {
        redis = RedisServers.withPassword(PASSWORD);
        return Map.of("camel.component.tokenbucket.redis-uri", redis.authenticatedUri());
    }

    @Override
    public void stop() {
        if (redis != null) {
            redis.close();
        }
    }
}
