package io.tokenbucket.example.demo;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * How close a run came to the target's hidden limit, measured where it matters, at the target: from its
 * {@link DemoTarget.Hit}s of {@code /page/} requests, per 1 s window from the first one, each proxy's admitted
 * requests (answered 200) and the 429s. Immutable.
 *
 * <ul>
 * <li>{@link #shareUsedAfter10s()}: the admitted rate of the full windows from 10 s on (or, in a run shorter than
 *     11 s, from its middle on), over the hidden limit of the whole fleet ({@code perIp} × proxies × hosts);</li>
 * <li>{@link #share429()}: the 429s over all page requests; {@link #share429After10s()}: over the page requests of
 *     the windows {@link #shareUsedAfter10s()} measures;</li>
 * <li>{@link #secondsTo90()}: the end of the first three windows in a row in each of which the fleet got 90 % of
 *     the hidden limit (one window alone is the first burst), -1 for never.</li>
 * </ul>
 * The last window is left out of the rates: the queue runs dry in it.
 */
public final class Convergence {

    /** The fleet's window of 10 s after which the steady share is measured. */
    static final int STEADY_FROM_SECOND = 10;

    private final Map<String, long[]> admittedByClient;
    private final long[] tooMany;
    private final long[] requestsPerWindow;
    private final double fleetLimit;
    private final long requests;
    private final long refused;

    private Convergence(Map<String, long[]> admittedByClient, long[] tooMany, long[] requestsPerWindow,
                        double fleetLimit, long requests, long refused) {
        this.admittedByClient = admittedByClient;
        this.tooMany = tooMany;
        this.requestsPerWindow = requestsPerWindow;
        this.fleetLimit = fleetLimit;
        this.requests = requests;
        this.refused = refused;
    }

    /**
     * Measures a run.
     *
     * @param hits    what the target saw
     * @param clients the proxies' names as the target's {@code Via} gives them, in order (p1, p2, ...)
     * @param perIp   the hidden limit: pages per client address per host per second
     * @param hosts   how many hosts the target serves
     */
    public static Convergence of(List<DemoTarget.Hit> hits, List<String> clients, int perIp, int hosts) {
        if (perIp < 1 || hosts < 1) {
            throw new IllegalArgumentException("a hidden limit of at least 1 per second on at least 1 host, was "
                    + perIp + " on " + hosts);
        }
        List<DemoTarget.Hit> pages = hits.stream().filter(h -> h.path().startsWith("/page/")).toList();
        long start = pages.isEmpty() ? 0 : pages.get(0).nanos();
        long end = pages.isEmpty() ? 0 : pages.get(pages.size() - 1).nanos();
        int windows = (int) Math.min(3600, TimeUnit.NANOSECONDS.toSeconds(end - start) + 1);
        Map<String, long[]> admitted = new LinkedHashMap<>();
        clients.forEach(c -> admitted.put(c, new long[windows]));
        long[] tooMany = new long[windows];
        long[] requests = new long[windows];
        long refused = 0;
        for (DemoTarget.Hit hit : pages) {
            int w = (int) Math.min(windows - 1, TimeUnit.NANOSECONDS.toSeconds(hit.nanos() - start));
            requests[w]++;
            if (hit.status() == 429) {
                tooMany[w]++;
                refused++;
            } else if (hit.status() == 200 && admitted.containsKey(hit.client())) {
                admitted.get(hit.client())[w]++;
            }
        }
        return new Convergence(admitted, tooMany, requests, (double) perIp * hosts * clients.size(), pages.size(), refused);
    }

    /** Admitted requests per 1 s window, per proxy, in the order given. */
    public Map<String, long[]> admittedByClient() {
        return admittedByClient;
    }

    /** The target's 429s per 1 s window. */
    public long[] tooMany() {
        return tooMany.clone();
    }

    /** The hidden limit of one proxy over all hosts, requests per second: the line the rates should reach. */
    public double limitPerClient() {
        return admittedByClient.isEmpty() ? 0 : fleetLimit / admittedByClient.size();
    }

    /** The whole fleet's admitted requests in window {@code w}. */
    long admitted(int w) {
        return admittedByClient.values().stream().mapToLong(a -> a[w]).sum();
    }

    private int windows() {
        return tooMany.length;
    }

    /** The admitted rate of the steady windows over the fleet's hidden limit, 0 to 1 (more: over-admitted). */
    public double shareUsedAfter10s() {
        int[] steady = steadyWindows();
        if (steady == null || fleetLimit <= 0) {
            return 0;
        }
        long sum = 0;
        for (int w = steady[0]; w < steady[1]; w++) {
            sum += admitted(w);
        }
        return sum / ((steady[1] - steady[0]) * fleetLimit);
    }

    /** The 429s over the page requests of the steady windows ({@link #shareUsedAfter10s()}'s), 0 to 1. */
    public double share429After10s() {
        int[] steady = steadyWindows();
        if (steady == null) {
            return 0;
        }
        long all = 0;
        long refusedThen = 0;
        for (int w = steady[0]; w < steady[1]; w++) {
            all += requestsPerWindow[w];
            refusedThen += tooMany[w];
        }
        return all == 0 ? 0 : (double) refusedThen / all;
    }

    /**
     * The steady windows, {@code [from, to)}: from 10 s (or, in a run shorter than 11 s, from its middle) to the last
     * full window; null when there are none.
     */
    private int[] steadyWindows() {
        int full = windows() - 1; // the last window is where the queue runs dry
        int from = full > STEADY_FROM_SECOND ? STEADY_FROM_SECOND : full / 2;
        return full <= from ? null : new int[] {from, full};
    }

    /** The 429s over all page requests, 0 to 1. */
    public double share429() {
        return requests == 0 ? 0 : (double) refused / requests;
    }

    /**
     * The end (seconds from the first request) of the first three windows in a row with 90 % of the hidden limit
     * each, the last window left out; -1: never.
     */
    public int secondsTo90() {
        int inARow = 0;
        for (int w = 0; w < windows() - 1; w++) {
            inARow = admitted(w) >= 0.9 * fleetLimit ? inARow + 1 : 0;
            if (inARow == 3) {
                return w + 1;
            }
        }
        return -1;
    }

    /** The summary line the demo prints. */
    public String summary() {
        int to90 = secondsTo90();
        boolean steady = windows() - 1 > STEADY_FROM_SECOND;
        return String.format(Locale.ROOT, "Convergence: %.0f %% of the hidden limit (%.0f/s) used %s, with %.1f %% of"
                + " those requests answered 429; %.1f %% of all %d requests answered 429; %s",
                100 * shareUsedAfter10s(), fleetLimit, steady ? "after 10 s" : "in the second half of the run"
                + " (shorter than 11 s)", 100 * share429After10s(), 100 * share429(), requests,
                to90 < 0 ? "no 3 s in a row at 90 % of the limit"
                        : "3 s in a row at 90 % of the limit from " + (to90 - 3) + " s");
    }

    /** Per window: admitted per proxy and 429s, for logs. */
    @Override
    public String toString() {
        Map<String, List<Long>> shown = new TreeMap<>();
        admittedByClient.forEach((c, a) -> {
            List<Long> values = new ArrayList<>();
            for (long v : a) {
                values.add(v);
            }
            shown.put(c, values);
        });
        return "Convergence" + shown + " 429s " + java.util.Arrays.toString(tooMany);
    }
}
