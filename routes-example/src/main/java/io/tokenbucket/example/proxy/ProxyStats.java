package io.tokenbucket.example.proxy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;


/**
 * What each proxy did: URLs fetched, bytes, time waited for tokens, failures and 429s. Bound in the registry
 * as {@value #BEAN}; {@code FetchOutcome} records every attempt. Its clock starts with the first attempt, so
 * the rates show the throttle, not how long Camel took to start. {@link #table} renders the progress table
 * and the final summary.
 */
public class ProxyStats {

    /** The registry name. */
    public static final String BEAN = "proxyStats";

    /** The header the routes put the chosen proxy id in (and the key header of {@code tokenbucket:}). */
    public static final String PROXY_HEADER = "proxyId";

    private static final long NOT_STARTED = Long.MIN_VALUE;

    private final ConcurrentMap<String, Tally> tallies = new ConcurrentHashMap<>();
    private final AtomicLong deadLetters = new AtomicLong();
    private final AtomicLong startNanos = new AtomicLong(NOT_STARTED);

    /** An attempt through {@code proxy} got the URL's answer. */
    public void fetched(String proxy, long waitedMs, long bytes) {
        tally(proxy).add(1, 0, 0, waitedMs, bytes);
    }

    /** An attempt through {@code proxy} failed, whoever was to blame ({@code FetchOutcome}); 429s are counted apart. */
    public void failure(String proxy, long waitedMs) {
        tally(proxy).add(0, 1, 0, waitedMs, 0);
    }

    /** The target answered 429 through {@code proxy}. */
    public void tooManyRequests(String proxy, long waitedMs) {
        tally(proxy).add(0, 0, 1, waitedMs, 0);
    }

    /**
     * A fetch through {@code proxy} met a pooled connection the proxy had closed and was sent again on another,
     * inside HttpClient ({@link StaleConnectionRetry}): not an attempt, not a failure.
     */
    public void staleConnection(String proxy) {
        tally(proxy).staleConnection();
    }

    /** A URL went to the dead letter. */
    public void deadLetter() {
        deadLetters.incrementAndGet();
    }

    private Tally tally(String proxy) {
        startNanos.compareAndSet(NOT_STARTED, System.nanoTime());
        return tallies.computeIfAbsent(proxy == null ? "(none)" : proxy, p -> new Tally());
    }

    /** URLs fetched per proxy id, sorted by id. */
    public Map<String, Long> fetchedByProxy() {
        Map<String, Long> counts = new TreeMap<>();
        tallies.forEach((proxy, tally) -> counts.put(proxy, tally.snapshot().fetched));
        return counts;
    }

    /** URLs fetched in all. */
    public long fetched() {
        return tallies.values().stream().mapToLong(t -> t.snapshot().fetched).sum();
    }

    /** 429 answers in all. */
    public long tooManyRequests() {
        return tallies.values().stream().mapToLong(t -> t.snapshot().tooMany).sum();
    }

    /** Failed attempts in all. */
    public long failures() {
        return tallies.values().stream().mapToLong(t -> t.snapshot().failures).sum();
    }

    /** Fetches sent again on another connection, in all. */
    public long staleConnections() {
        return tallies.values().stream().mapToLong(t -> t.snapshot().stale).sum();
    }

    /** URLs sent to the dead letter. */
    public long deadLetters() {
        return deadLetters.get();
    }

    /**
     * URLs fetched per proxy now, and when: where a later {@link #table(Map, Mark)} counts its rate from.
     *
     * @param nanos   {@code System.nanoTime()} of the mark
     * @param fetched URLs fetched per proxy id at that time
     */
    public record Mark(long nanos, Map<String, Long> fetched) {
    }

    /** The counts now, for a later table's rate over the seconds in between. */
    public Mark mark() {
        return new Mark(System.nanoTime(), fetchedByProxy());
    }

    /**
     * The totals now (fetched, failed attempts, 429s, reconnects, dead letters): equal totals, equal table but for
     * the clock, so the progress table is not printed again while they stay the same.
     */
    public List<Long> counts() {
        Snapshot all = new Snapshot(0, 0, 0, 0, 0, 0);
        for (Tally t : tallies.values()) {
            all = all.plus(t.snapshot());
        }
        return List.of(all.fetched, all.failures, all.tooMany, all.stale, deadLetters.get());
    }

    /**
     * As {@link #table(Map)}, with each rate counted over the seconds since {@code since} (null: since the first
     * attempt): what the progress table shows while the run goes on.
     */
    public String table(Map<String, String> health, Mark since) {
        return render(health, since);
    }

    /**
     * The per-proxy table: fetched, rate per second since the first attempt, mean wait for tokens per attempt,
     * failures, 429s, fetches sent again on another connection (the proxy had closed the pooled one) and health;
     * then a total line.
     *
     * @param health the health word per proxy (from {@link ProxyPool#health()}); proxies only in one of the
     *               two still get a row
     */
    public String table(Map<String, String> health) {
        return render(health, null);
    }

    private String render(Map<String, String> health, Mark since) {
        Map<String, Snapshot> rows = new TreeMap<>();
        tallies.forEach((proxy, tally) -> rows.put(proxy, tally.snapshot()));
        Map<String, String> order = new LinkedHashMap<>();
        health.keySet().forEach(id -> order.put(id, health.get(id)));
        rows.keySet().forEach(id -> order.putIfAbsent(id, "removed"));
        long first = startNanos.get();
        long now = System.nanoTime();
        double seconds = first == NOT_STARTED ? 0 : (now - first) / 1e9;
        // the rates: over the seconds since the mark, or since the first attempt
        double window = since == null ? seconds : (now - since.nanos()) / 1e9;
        Map<String, Long> before = since == null ? Map.of() : since.fetched();
        StringBuilder table = new StringBuilder();
        table.append(String.format(Locale.ROOT, "%-12s %8s %7s %9s %8s %5s %10s  %s%n", "proxy", "fetched", "rate/s",
                "wait ms", "failures", "429s", "reconnects", "health"));
        Snapshot all = new Snapshot(0, 0, 0, 0, 0, 0);
        for (Map.Entry<String, String> row : order.entrySet()) {
            Snapshot s = rows.getOrDefault(row.getKey(), new Snapshot(0, 0, 0, 0, 0, 0));
            table.append(line(row.getKey(), s, s.fetched - before.getOrDefault(row.getKey(), 0L), window,
                    row.getValue()));
            all = all.plus(s);
        }
        long allBefore = before.values().stream().mapToLong(Long::longValue).sum();
        table.append(line("all", all, all.fetched - allBefore, window, deadLetters.get() + " dead letters"));
        table.append(String.format(Locale.ROOT, "%d fetched, %d failed attempts, %d answered 429, %d dead letters"
                + " in %.1f s%n", all.fetched, all.failures, all.tooMany, deadLetters.get(), seconds));
        return table.toString();
    }

    private static String line(String name, Snapshot s, long fetchedInWindow, double window, String health) {
        String rate = window > 0 ? String.format(Locale.ROOT, "%.2f", fetchedInWindow / window) : "-";
        long attempts = s.fetched + s.failures + s.tooMany;
        String wait = attempts > 0 ? String.format(Locale.ROOT, "%.0f", (double) s.waitedMs / attempts) : "-";
        return String.format(Locale.ROOT, "%-12s %8d %7s %9s %8d %5d %10d  %s%n", name, s.fetched, rate, wait,
                s.failures, s.tooMany, s.stale, health);
    }

    /** One proxy's running totals; synchronized because attempts end on many threads. */
    private static final class Tally {
        private long fetched;
        private long failures;
        private long tooMany;
        private long waitedMs;
        private long bytes;
        private long stale;

        synchronized void staleConnection() {
            stale++;
        }

        synchronized void add(long fetched, long failures, long tooMany, long waitedMs, long bytes) {
            this.fetched += fetched;
            this.failures += failures;
            this.tooMany += tooMany;
            this.waitedMs += waitedMs;
            this.bytes += bytes;
        }

        synchronized Snapshot snapshot() {
            return new Snapshot(fetched, failures, tooMany, waitedMs, bytes, stale);
        }
    }

    private record Snapshot(long fetched, long failures, long tooMany, long waitedMs, long bytes, long stale) {
        Snapshot plus(Snapshot o) {
            return new Snapshot(fetched + o.fetched, failures + o.failures, tooMany + o.tooMany,
                    waitedMs + o.waitedMs, bytes + o.bytes, stale + o.stale);
        }
    }
}
