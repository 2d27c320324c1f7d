package io.tokenbucket.example;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

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
 * writes its own counts, whole, to its fields of one hash in the same Redis as the buckets ({@link RedisLease}), and
 * sums every instance's. Whole counts, not increments: a call whose answer was lost, run by Redis and sent again
 * with the next report, counts once, and a Redis started again empty has every live instance's counts back after
 * their next reports. The feeding instance empties the hash as it starts: the totals are the run's. The URLs fetched
 * and dead-lettered are the recording instance's lines ({@link BrokerQueue#recorded}), written once each: an instance
 * killed mid-run neither loses the counts it had not written yet nor counts twice the URLs it had not committed.
 * Bound as {@value #BEAN}; a Camel service. A Redis or broker that does not answer leaves its part out; nothing waits
 * on either longer than {@value RedisLease#TIMEOUT_MILLIS} ms.
 */
public final class FleetTotals extends ServiceSupport {

    /** The registry name. */
    public static final String BEAN = "fleetTotals";

    private static final Logger LOG = LoggerFactory.getLogger(FleetTotals.class);
    /** The counters, in {@link ProxyStats#counts()} order. */
    private static final List<String> NAMES = List.of("fetched", "failures", "429s", "reconnects", "dead");

    /** The recording instance's name in the hash, for its lines: fetched (results) and dead. */
    private static final String LINES = "lines";

    private final RedisLease redis;
    private final BrokerQueue queue;
    /** The hash of every instance's counts, fields {@code <instance> <counter>}; its hash tag picks a cluster slot. */
    private final String key;
    /** This instance's name in the hash. */
    private final String instance = UUID.randomUUID().toString();
    private final long interval;
    private boolean reset;
    /** The instances' own fetched and dead-lettered counts, summed, as last read; -1 until read. */
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
        this.key = "{scraper}fleet:" + queue.settings().queue();
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
            commands.del(key).get(RedisLease.TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
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
     * Writes what {@code stats} counted so far as this instance's counts, and returns the fleet's line:
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
            Map<String, String> own = new HashMap<>();
            for (int i = 0; i < NAMES.size(); i++) {
                own.put(instance + " " + NAMES.get(i), Long.toString(counts.get(i)));
            }
            if (queue.settings().record()) {
                own.put(LINES + " fetched", Long.toString(queue.recordedResults()));
                own.put(LINES + " dead", Long.toString(queue.recorded() - queue.recordedResults()));
            }
            commands.hset(key, own).get(RedisLease.TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            long[] t = new long[NAMES.size()];
            Map<String, String> all = commands.hgetall(key).get(RedisLease.TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            all.forEach((field, count) -> {
                int i = NAMES.indexOf(field.substring(field.lastIndexOf(' ') + 1));
                if (i >= 0 && !field.startsWith(LINES + " ")) {
                    t[i] += Long.parseLong(count);
                }
            });
            // the instances' own counts tell when each has published its last (summary); the lines are the totals
            recorded = t[0] + t[4];
            if (all.containsKey(LINES + " fetched")) {
                t[0] = Long.parseLong(all.get(LINES + " fetched"));
                t[4] = Long.parseLong(all.getOrDefault(LINES + " dead", "0"));
            }
            return "fleet: " + t[0] + " fetched, " + t[1] + " failed attempts, " + t[2] + " answered 429, " + t[4]
                    + " dead letters" + (leftText.isEmpty() ? "" : "; " + leftText) + System.lineSeparator();
        } catch (Exception e) {
            LOG.debug("No fleet totals from Redis: {}", e.toString());
            return leftLine;
        }
    }
}
