package io.tokenbucket.example;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.KeyValue;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.tokenbucket.example.broker.BrokerQueue;
import io.tokenbucket.example.fetch.RedisLease;
import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fleet's line under each progress table and the summary, with {@code example.broker}: the URLs left in the
 * broker queue ({@link BrokerQueue#urlsLeft}) and, with {@code example.redisUri}, the fleet's totals: every instance
 * adds what it counted since its last report to shared counters in the same Redis as the buckets
 * ({@link RedisLease}), and reads them back. The feeding instance sets the counters to zero as it starts: they are
 * the run's. Bound as {@value #BEAN}; a Camel service. A Redis or broker that does not answer leaves its part out;
 * nothing waits on either longer than {@value RedisLease#TIMEOUT_MILLIS} ms.
 */
public final class FleetTotals extends ServiceSupport {

    /** The registry name. */
    public static final String BEAN = "fleetTotals";

    private static final Logger LOG = LoggerFactory.getLogger(FleetTotals.class);
    /** The counters, in {@link ProxyStats#counts()} order; one hash tag, so one slot on a cluster. */
    private static final String[] NAMES = {"fetched", "failures", "429s", "reconnects", "dead"};

    private final RedisLease redis;
    private final BrokerQueue queue;
    private final String prefix;
    private final long interval;
    private final List<Long> published = new ArrayList<>(List.of(0L, 0L, 0L, 0L, 0L));
    private boolean reset;
    /** The fleet's fetched and dead-lettered URLs as last read; -1 until read. */
    private volatile long recorded = -1;

    /**
     * @param redis the buckets' Redis (without {@code example.redisUri}: no totals, the URLs left only)
     * @param queue the broker queue, whose name the counters carry and whose depth is the URLs left
     * @param interval how often every instance adds its counts ({@code example.progressInterval}), in milliseconds
     */
    public FleetTotals(RedisLease redis, BrokerQueue queue, long interval) {
        this.redis = redis;
        this.queue = queue;
        this.interval = interval;
        this.prefix = "{scraper}fleet:" + queue.settings().queue() + ":";
        this.reset = !queue.settings().feed();
    }

    @Override
    protected synchronized void doStart() {
        resetOnce(redis.commands());
    }

    /** The feeding instance, before it counts anything: a new run. */
    private void resetOnce(RedisClusterAsyncCommands<String, String> commands) {
        if (reset || commands == null) {
            return;
        }
        try {
            commands.del(keys()).get(RedisLease.TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            reset = true;
        } catch (Exception e) {
            LOG.debug("Fleet counters not reset yet: {}", e.toString());
        }
    }

    /**
     * The summary's fleet line. On the recording instance, once the fleet's totals count every line it recorded
     * ({@link BrokerQueue#recorded}): the other instances add their counts with each of their progress tables, so
     * their last ones come up to an interval after the last line: waits for them, two intervals and a second at most.
     */
    public String summary(ProxyStats stats) {
        long outcomes = queue.recorded();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2 * interval + 1_000);
        while (true) {
            String line = report(stats);
            if (recorded >= outcomes || redis.commands() == null || System.nanoTime() - deadline > 0) {
                return line;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return line;
            }
        }
    }

    /**
     * Adds what {@code stats} counted since the last call to the fleet's counters, and returns the fleet's line:
     * its totals and the URLs left; without an answer from Redis, the URLs left alone (or nothing).
     */
    public synchronized String report(ProxyStats stats) {
        long left = queue.urlsLeft(RedisLease.TIMEOUT_MILLIS);
        String leftText = left < 0 ? "" : left + " URLs left in " + queue.settings().queue();
        String leftLine = leftText.isEmpty() ? "" : "fleet: " + leftText + System.lineSeparator();
        RedisClusterAsyncCommands<String, String> commands = redis.commands();
        if (commands == null) {
            return leftLine;
        }
        try {
            resetOnce(commands);
            List<Long> counts = stats.counts();
            for (int i = 0; i < NAMES.length; i++) {
                long delta = counts.get(i) - published.get(i);
                if (delta != 0) {
                    commands.incrby(prefix + NAMES[i], delta).get(RedisLease.TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
                    published.set(i, counts.get(i));
                }
            }
            List<KeyValue<String, String>> totals = commands.mget(keys()).get(RedisLease.TIMEOUT_MILLIS,
                    TimeUnit.MILLISECONDS);
            long[] t = new long[NAMES.length];
            for (int i = 0; i < t.length; i++) {
                t[i] = totals.get(i).hasValue() ? Long.parseLong(totals.get(i).getValue()) : 0;
            }
            recorded = t[0] + t[4];
            return "fleet: " + t[0] + " fetched, " + t[1] + " failed attempts, " + t[2] + " answered 429, " + t[4]
                    + " dead letters" + (leftText.isEmpty() ? "" : "; " + leftText) + System.lineSeparator();
        } catch (Exception e) {
            LOG.debug("No fleet totals from Redis: {}", e.toString());
            return leftLine;
        }
    }

    private String[] keys() {
        String[] keys = new String[NAMES.length];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = prefix + NAMES[i];
        }
        return keys;
    }
}
