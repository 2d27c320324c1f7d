package io.tokenbucket.camel;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@link TokenBucketHostileInputTest} with the buckets in a real redis-server. */
class TokenBucketRedisHostileInputTest extends TokenBucketHostileInputTest {

    private static RedisHandle redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.shared();
        redis.flushAll();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @Override
    String store() {
        return "store=redis&redisUri=" + redis.uri();
    }
}
