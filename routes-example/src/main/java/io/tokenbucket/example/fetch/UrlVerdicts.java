package io.tokenbucket.example.fetch;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.SetArgs;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fleet's word on a URL whose 429s are its own ({@link FetchOutcome}: refused through two proxies while the
 * host's other pages passed through both): kept in the buckets' Redis for {@code example.maxRetryAfter}, so every
 * instance treats that page, not its pairs, from its first 429, whatever it has seen itself. Without Redis each
 * instance judges alone. Keys: {@code {scraper}url429:<SHA-256 of the URL>}, bounded whatever the URL.
 * A Redis that does not answer (within {@value RedisLease#TIMEOUT_MILLIS} ms) knows nothing: the instance judges
 * as it would alone, and asks again only a second later, so a frozen Redis holds a route thread one wait per second,
 * not one per 429.
 */
public class UrlVerdicts {

    /** No Redis: nothing is shared. */
    public static final UrlVerdicts NONE = new UrlVerdicts(null, 0);

    private static final Logger LOG = LoggerFactory.getLogger(UrlVerdicts.class);
    private static final String PREFIX = "{scraper}url429:";

    private final RedisLease redis;
    private final long ttlMillis;
    /** Until when ({@link System#nanoTime()}) asks answer "not known" without asking: a second after one failed. */
    private volatile long quietUntilNanos = System.nanoTime();

    /**
     * @param redis     the buckets' Redis
     * @param ttlMillis how long a verdict holds, {@code example.maxRetryAfter}
     */
    public UrlVerdicts(RedisLease redis, long ttlMillis) {
        this.redis = redis;
        this.ttlMillis = Math.max(1, ttlMillis);
    }

    /**
     * Whether an instance found {@code url}'s 429s to be its own within the verdict's time. Asked on a 429 only, on
     * the thread that judges it, waiting at most {@value RedisLease#TIMEOUT_MILLIS} ms; false without asking for a
     * second after an ask failed.
     */
    public boolean knows(String url) {
        RedisClusterAsyncCommands<String, String> commands = redis == null ? null : redis.commands();
        if (commands == null || url == null || System.nanoTime() - quietUntilNanos < 0) {
            return false;
        }
        try {
            return commands.exists(key(url)).get(RedisLease.TIMEOUT_MILLIS, TimeUnit.MILLISECONDS) > 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (Exception e) {
            quietUntilNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RedisLease.TIMEOUT_MILLIS);
            LOG.debug("No shared verdict on a URL: {}", e.toString());
            return false;
        }
    }

    /** Tells the fleet that {@code url}'s 429s are its own; not waited for. */
    public void tell(String url) {
        RedisClusterAsyncCommands<String, String> commands = redis == null ? null : redis.commands();
        if (commands != null && url != null) {
            commands.set(key(url), "1", SetArgs.Builder.px(ttlMillis));
        }
    }

    private static String key(String url) {
        try {
            return PREFIX + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(url.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JVM", e);
        }
    }
}
