package io.tokenbucket.camel;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** A tokenbucket test with a real standalone redis-server of its own, started once for the class. */
abstract class TokenBucketRedisTestSupport extends TokenBucketTestSupport {

    /** The class's redis-server. */
    static RedisHandle redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.standalone();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }
}
