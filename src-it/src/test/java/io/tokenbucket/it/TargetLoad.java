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
 * <p>At the target each request arrives some time after its token was due: the release by the instance's timer and
 * the hand-off to a worker (late when the machine is busy), then the fetch through camel-http and the proxy. Neither
 * delay can make a request arrive before its token, and the target cannot tell one from the other, so the check
 * that holds whatever the delays is the bucket's schedule from its first token ({@link #worstLead}): by any moment
 * {@code t}, at most {@code bound(t - first)} requests can have arrived. A count per window
 * ({@link #maxInAnyWindow}) would have to allow for the delays of the requests in it, and a release held up on a
 * loaded machine has no bound: it is printed, not asserted.
 */
record TargetLoad(int capacity, long periodMillis) {

    /** The most a bucket of this limit admits in any window of {@code windowMillis}. */
    int bound(long windowMillis) {
        return capacity + (int) (windowMillis * capacity / periodMillis);
    }

    /**
     * How far the hits that {@code which} takes ran ahead of the bucket's schedule: the largest
     * {@code k - bound(t_k - firstGrant)} over the {@code k}-th of them to arrive, at {@code t_k}. Not positive when
     * the limit held: the {@code k}-th request to arrive cannot come before the {@code k}-th token is due, and no more
     * than {@code bound(t - firstGrant)} tokens are due by {@code t}. Late releases and slow fetches only delay
     * arrivals, so no allowance is needed; {@code firstGrantNanos} must be at most the bucket's first token
     * ({@link #firstGrantNoEarlierThan}). With several moments, the hits took their tokens from as many buckets of
     * this limit, each started no earlier than its moment: by {@code t}, the sum of their bounds.
     */
    int worstLead(List<Hit> hits, Predicate<Hit> which, long... firstGrantNanos) {
        long[] times = hits.stream().filter(which).mapToLong(Hit::nanos).sorted().toArray();
        long intervalNanos = TimeUnit.MILLISECONDS.toNanos(periodMillis) / capacity;
        int worst = Integer.MIN_VALUE;
        for (int k = 1; k <= times.length; k++) {
            int due = 0;
            for (long first : firstGrantNanos) {
                if (times[k - 1] - first >= 0) {
                    due += capacity + (int) ((times[k - 1] - first) / intervalNanos);
                }
            }
            worst = Math.max(worst, k - due);
        }
        return worst;
    }

    /**
     * A moment no later than the first token any of the hits that {@code which} takes was given: a URL's tokens are
     * all taken after it entered the route, which was its result's {@code elapsedMs} before its answer, and its
     * answer came after its last request reached the target. So the earliest of {@code last request - elapsedMs}
     * over the URLs (less a millisecond: the example truncates) is no later than any of their tokens.
     *
     * @param results the result lines of every URL among the hits (a hit of a URL without one fails the check)
     */
    static long firstGrantNoEarlierThan(List<Hit> hits, Predicate<Hit> which,
                                        List<org.apache.camel.util.json.JsonObject> results) {
        Map<String, Long> elapsed = results.stream().collect(Collectors.toMap(
                l -> java.net.URI.create(l.getString("url")).getPath(), l -> l.getLong("elapsedMs")));
        Map<String, Long> last = hits.stream().filter(which)
                .collect(Collectors.toMap(Hit::path, Hit::nanos, Math::max));
        return last.entrySet().stream().mapToLong(e -> {
            Long ms = elapsed.get(e.getKey());
            if (ms == null) {
                throw new AssertionError("no result line for " + e.getKey() + ", requested at the target");
            }
            return e.getValue() - TimeUnit.MILLISECONDS.toNanos(ms + 1);
        }).min().orElse(Long.MIN_VALUE);
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

    /** Each fetched URL's path and its {@code fetchMs}, from the step right after the throttle to the answer. */
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
