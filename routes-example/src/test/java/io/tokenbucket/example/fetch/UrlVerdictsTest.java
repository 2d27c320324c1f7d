package io.tokenbucket.example.fetch;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fleet's verdicts on a real redis-server: told by one, known to all; and a Redis that does not answer costs the
 * route thread one wait, not one per 429 that asks (a frozen Redis, held here by {@code CLIENT PAUSE}).
 */
class UrlVerdictsTest {

    private static final Pattern EXISTS_CALLS = Pattern.compile("cmdstat_exists:calls=(\\d+)");

    private static long existsCalls(RedisHandle redis) {
        Matcher m = EXISTS_CALLS.matcher((String) redis.command("INFO", "commandstats"));
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    /** Waits (on Redis's answers, a second each at most) until the paused Redis answers a command of the lease. */
    private static void answeredAfterThePause(RedisLease lease) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                lease.commands().time().get(5, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException | TimeoutException stillPaused) {
                assertThat(System.nanoTime() - deadline).as("Redis answers again within 30 s").isNegative();
            }
        }
    }

    @Test
    void aRedisThatDoesNotAnswerIsAskedOnceASecondNotOnEvery429() throws Exception {
        try (RedisHandle redis = RedisServers.standalone()) {
            RedisLease lease = new RedisLease(redis.uri());
            lease.start();
            try {
                UrlVerdicts verdicts = new UrlVerdicts(lease, 60_000);
                String url = "http://target.example/page?q=1";
                assertThat(lease.commands()).isNotNull(); // Redis is up: connected at the start
                verdicts.tell(url); // not waited for, but sent before the ask on the same connection
                assertThat(verdicts.knows(url)).isTrue();
                redis.command("CONFIG", "RESETSTAT");
                // frozen for 8 s: commands are held, not refused (five asks of a second each would fit in it)
                redis.command("CLIENT", "PAUSE", "8000", "ALL");
                for (int i = 0; i < 5; i++) {
                    assertThat(verdicts.knows(url)).as("ask %d while Redis is frozen", i).isFalse();
                }
                // on one connection Redis answers in order: once this is answered (after the pause), every ask sent
                // before it was run
                answeredAfterThePause(lease);
                assertThat(existsCalls(redis)).as("EXISTS that reached Redis for 5 asks within a second")
                        .isEqualTo(1);
            } finally {
                lease.stop();
            }
        }
    }

    @Test
    void aVerdictExpiresOnRedisOwnClockWhateverTheInstancesClockSays() throws Exception {
        // the expiry is relative (SET ... PX), counted by Redis: an instance whose clock is hours off sets the same
        try (RedisHandle redis = RedisServers.standalone()) {
            RedisLease lease = new RedisLease(redis.uri());
            lease.start();
            try {
                new UrlVerdicts(lease, 60_000).tell("http://target.example/page");
                assertThat(lease.commands().keys("{scraper}url429:*").get(5, TimeUnit.SECONDS)).singleElement()
                        .satisfies(key -> assertThat((Long) redis.command("PTTL", key)).isBetween(1L, 60_000L));
            } finally {
                lease.stop();
            }
        }
    }
}
