package io.tokenbucket.camel;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInfo;

/**
 * A tokenbucket test with a real standalone redis-server: the JVM's shared one ({@link RedisServers#shared()}),
 * emptied when the class starts, or, for a class marked {@link OwnRedis}, one of its own started for the class.
 */
abstract class TokenBucketRedisTestSupport extends TokenBucketTestSupport {

    /**
     * Marks a test class that stops, pauses or reconfigures its redis-server, or counts its clients: it gets its own.
     */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.TYPE)
    @interface OwnRedis {
    }

    /** The class's redis-server. */
    static RedisHandle redis;

    @BeforeAll
    static void startRedis(TestInfo test) {
        if (test.getTestClass().map(c -> c.isAnnotationPresent(OwnRedis.class)).orElse(true)) {
            redis = RedisServers.standalone();
        } else {
            redis = RedisServers.shared();
            redis.flushAll();
        }
    }

    @AfterAll
    static void stopRedis() {
        redis.close(); // the shared server's close does nothing
    }
}
