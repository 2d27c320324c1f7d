package io.tokenbucket.it;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import io.tokenbucket.example.demo.DemoTarget.Hit;

/**
 * What the demo target saw, per proxy, measured against a token bucket's bound: {@code capacity} requests at
 * once, then {@code capacity} per {@code periodMillis}. In any window of {@code w} ms a bucket admits at most
 * {@code capacity + floor(w / interval)} (a full bucket, then one per interval).
 *
 * <p>At the target each request arrives some time after its token was granted: the fetch through camel-http and
 * the proxy, a few milliseconds once warm, up to several hundred for a JVM's first fetches (class loading, the
 * HTTP client's start). So the requests that arrive in a window of {@code w} were admitted in a window of
 * {@code w + d}, where {@code d} is the longest of their transits, and that is the bound they are checked against.
 * A request's transit is at most its URL's {@code fetchMs} in the example's result line (from the step right after
 * the throttle to the answer).
 */
record TargetLoad(int capacity, long periodMillis) {

    /** The most a bucket of this limit admits in any window of {@code windowMillis}. */
    int bound(long windowMillis) {
        return capacity + (int) (windowMillis * capacity / periodMillis);
    }

    /**
     * The largest excess over the bound of the hits that {@code which} takes, over every window of
     * {@code windowMillis} at the target: {@code count - bound(windowMillis + longest transit in it)}. Not positive
     * when the limit held.
     *
     * @param transitMillis each fetched path's upper bound of transit (0 for a path not in it)
     */
    int worstExcess(List<Hit> hits, Predicate<Hit> which, long windowMillis, Map<String, Long> transitMillis) {
        List<Hit> taken = hits.stream().filter(which).sorted(java.util.Comparator.comparingLong(Hit::nanos)).toList();
        long window = TimeUnit.MILLISECONDS.toNanos(windowMillis);
        int worst = Integer.MIN_VALUE;
        for (int start = 0; start < taken.size(); start++) {
            long transit = 0;
            for (int end = start; end < taken.size() && taken.get(end).nanos() - taken.get(start).nanos() <= window;
                    end++) {
                // +1: the example's milliseconds are truncated
                transit = Math.max(transit, transitMillis.getOrDefault(taken.get(end).path(), 0L) + 1);
                worst = Math.max(worst, end - start + 1 - bound(windowMillis + transit));
            }
        }
        return worst;
    }

    /** The most of the hits that {@code which} takes in any window of {@code windowMillis} (both ends included). */
    static int maxInAnyWindow(List<Hit> hits, Predicate<Hit> which, long windowMillis) {
        long[] times = hits.stream().filter(which).mapToLong(Hit::nanos).sorted().toArray();
        long window = TimeUnit.MILLISECONDS.toNanos(windowMillis);
        int max = 0;
        int start = 0;
        for (int end = 0; end < times.length; end++) {
            while (times[end] - times[start] > window) {
                start++;
            }
            max = Math.max(max, end - start + 1);
        }
        return max;
    }

    /** Each fetched URL's path and its {@code fetchMs}: the transit allowance of {@link #worstExcess}. */
    static Map<String, Long> fetchMillisByPath(List<org.apache.camel.util.json.JsonObject> results) {
        return results.stream().collect(Collectors.toMap(l -> java.net.URI.create(l.getString("url")).getPath(),
                l -> l.getLong("fetchMs")));
    }

    /** Requests per proxy. */
    static Map<String, Long> perProxy(List<Hit> hits) {
        return hits.stream().collect(Collectors.groupingBy(Hit::client, TreeMap::new, Collectors.counting()));
    }

    /** How often each path was answered 200 (a URL fetched twice shows up as 2). */
    static Map<String, Long> fetchesPerPath(List<Hit> hits) {
        return hits.stream().filter(h -> h.status() == 200)
                .collect(Collectors.groupingBy(Hit::path, TreeMap::new, Collectors.counting()));
    }
}
