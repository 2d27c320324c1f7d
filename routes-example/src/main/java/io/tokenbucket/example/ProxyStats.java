package io.tokenbucket.example;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.camel.TokenBucketConstants;
import org.apache.camel.Exchange;

/**
 * What passed the throttle, per proxy: how many exchanges, how long they waited for their tokens and when the
 * last one arrived. Bound in the registry as {@value #BEAN}; the routes call {@link #record(Exchange)} right
 * after {@code tokenbucket:}. Its clock starts with the first exchange recorded, so the rates show the
 * throttle, not how long Camel took to start.
 */
public class ProxyStats {

    /** The registry name the routes refer to. */
    public static final String BEAN = "proxyStats";

    /** The header the routes put the chosen proxy id in (and the key header of {@code tokenbucket:}). */
    public static final String PROXY_HEADER = "proxyId";

    private static final long NOT_STARTED = Long.MIN_VALUE;

    private final ConcurrentMap<String, Tally> tallies = new ConcurrentHashMap<>();
    private final AtomicLong total = new AtomicLong();
    private final AtomicLong startNanos = new AtomicLong(NOT_STARTED);

    /** Counts one exchange that passed the throttle, under its proxy and with its wait. */
    public void record(Exchange exchange) {
        String proxy = exchange.getMessage().getHeader(PROXY_HEADER, "(none)", String.class);
        Long waited = exchange.getMessage().getHeader(TokenBucketConstants.WAITED, 0L, Long.class);
        long now = System.nanoTime();
        startNanos.compareAndSet(NOT_STARTED, now);
        tallies.computeIfAbsent(proxy, p -> new Tally()).add(waited, now);
        total.incrementAndGet();
    }

    /** How many exchanges passed in all. */
    public long total() {
        return total.get();
    }

    /** How many exchanges passed per proxy id, sorted by id. */
    public Map<String, Long> counts() {
        Map<String, Long> counts = new TreeMap<>();
        tallies.forEach((proxy, tally) -> counts.put(proxy, tally.snapshot().count));
        return counts;
    }

    /**
     * The per-proxy table: count, rate per second (from the first exchange recorded to the proxy's last one,
     * so it includes the initial burst of {@code capacity}) and mean wait for tokens.
     */
    public String summary() {
        Map<String, Snapshot> rows = new TreeMap<>();
        tallies.forEach((proxy, tally) -> rows.put(proxy, tally.snapshot()));
        long first = startNanos.get();
        long start = first == NOT_STARTED ? System.nanoTime() : first;
        StringBuilder table = new StringBuilder();
        table.append(String.format(Locale.ROOT, "%-10s %6s %8s %13s%n", "proxy", "count", "rate/s", "mean wait ms"));
        long count = 0;
        long waited = 0;
        long last = start;
        for (Map.Entry<String, Snapshot> row : rows.entrySet()) {
            Snapshot s = row.getValue();
            table.append(line(row.getKey(), s.count, s.waitedMillis, s.lastNanos - start));
            count += s.count;
            waited += s.waitedMillis;
            if (s.lastNanos - last > 0) { // nanoTime values compare by difference only
                last = s.lastNanos;
            }
        }
        table.append(line("all", count, waited, last - start));
        table.append(String.format(Locale.ROOT, "%d passed in %.2f s%n", count, (last - start) / 1e9));
        return table.toString();
    }

    private static String line(String name, long count, long waitedMillis, long spanNanos) {
        String rate = spanNanos > 0 ? String.format(Locale.ROOT, "%.2f", count / (spanNanos / 1e9)) : "-";
        String meanWait = count > 0 ? String.format(Locale.ROOT, "%.0f", (double) waitedMillis / count) : "-";
        return String.format(Locale.ROOT, "%-10s %6d %8s %13s%n", name, count, rate, meanWait);
    }

    /** One proxy's running totals; synchronized because exchanges pass on many threads. */
    private static final class Tally {
        private long count;
        private long waitedMillis;
        private long lastNanos;

        synchronized void add(long waited, long now) {
            count++;
            waitedMillis += waited;
            if (count == 1 || now - lastNanos > 0) { // exchanges of one proxy may record out of order
                lastNanos = now;
            }
        }

        synchronized Snapshot snapshot() {
            return new Snapshot(count, waitedMillis, lastNanos);
        }
    }

    private record Snapshot(long count, long waitedMillis, long lastNanos) {
    }
}
