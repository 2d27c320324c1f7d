package io.tokenbucket.example.proxy;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;


/**
 * The health of one proxy and what it remembers of its (proxy, host) pairs, on a nanosecond clock passed in by the
 * caller (so tests need no sleeps).
 *
 * <p>{@code failuresToUnhealthy} consecutive failures blamed on the proxy ({@code FetchOutcome} says which)
 * make it unhealthy for {@code cooldown}; after it the proxy is offered again ("probing"): one success makes it
 * healthy, one more failure sends it back for another cooldown. A 429 is not a failure of the proxy but the word
 * of one host about this proxy's address: the pair (this proxy, that host) rests, and the proxy stays available for
 * every other host. Of each pair it keeps how long its next rest should be ({@link RestBackoff}: what the host
 * asked, growing with jitter while its 429s keep coming, forgiven after a quiet period), and when the host last
 * passed a page through the pair (a 2xx) and last refused one (its own 429), which tells a 429 of one URL from the
 * host's word about the pair ({@link #passing}, {@link ProxyPool#refused}). The rest itself is not kept here but
 * where the choice reads it ({@link ProxyBuckets}): the pair's bucket with the freest choice, {@link PoolRests} in
 * round robin (with the throttle the bucket is told too). This instance's
 * view only. At most {@value #MAX_HOSTS} hosts are remembered per proxy, the least recently used forgotten first.
 * Synchronized: attempts report on many threads.
 */
final class ProxyHealth {

    /** The most (proxy, host) pairs one proxy remembers. */
    static final int MAX_HOSTS = 10_000;

    private final int failuresToUnhealthy;
    private final long cooldownNanos;
    private final RestBackoff.Policy restPolicy;
    private int consecutiveFailures;
    private long unhealthyUntil;
    private boolean unhealthy;
    private final Map<String, Rest> rests = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Rest> eldest) {
            return size() > MAX_HOSTS;
        }
    };

    /**
     * One pair's record: how its next rest grows, and when the host last passed a page through it and last refused
     * one (for {@link #passing}).
     */
    private static final class Rest {
        final RestBackoff backoff;
        boolean passed;
        long lastPass;
        boolean refused;
        long lastRefusal;
        // the refusal before the last, so that a refusal found to be one URL's own can be taken back
        boolean priorRefused;
        long priorRefusal;

        Rest(RestBackoff backoff) {
            this.backoff = backoff;
        }

        /** Nothing left to remember at {@code now}: no rest running or growing, no recent page passed. */
        boolean idle(long now, long recentNanos) {
            return backoff.forgiven(now) && (!passed || now - lastPass >= recentNanos);
        }
    }

    ProxyHealth(int failuresToUnhealthy, long cooldownNanos, RestBackoff.Policy restPolicy) {
        this.failuresToUnhealthy = failuresToUnhealthy;
        this.cooldownNanos = cooldownNanos;
        this.restPolicy = restPolicy;
    }

    /** Whether the proxy may be handed out at {@code now} for some host (it is not unhealthy). */
    synchronized boolean available(long now) {
        return !unhealthy || now - unhealthyUntil >= 0;
    }

    /** Nanoseconds from {@code now} until the proxy is healthy or probed again (0 when it is available). */
    synchronized long nanosUntilAvailable(long now) {
        return unhealthy ? Math.max(0, unhealthyUntil - now) : 0;
    }

    /**
     * {@code host} answered a page through the proxy with a 2xx at {@code now}: the pair is passing the host's
     * pages ({@link #passing}).
     */
    synchronized void passed(long now, String host) {
        Rest rest = rest(host);
        rest.passed = true;
        rest.lastPass = now;
    }

    /**
     * Whether the pair passes {@code host}'s pages at {@code now}: a page of the host got a 2xx through it within
     * {@code example.forgiveAfter}, and the host refused none through it for as long (no 429 of its own, but those
     * found to be a single URL's). A pair at a host's rate limit passes pages and is refused now and then, which
     * is not passing. The evidence {@link ProxyPool#refused} needs before it calls a 429 one URL's own.
     */
    synchronized boolean passing(long now, String host) {
        Rest rest = host == null ? null : rests.get(host);
        long recent = recentNanos();
        return rest != null && rest.passed && now - rest.lastPass < recent
                && (!rest.refused || now - rest.lastRefusal >= recent);
    }

    /**
     * Whether {@code host} refused a page through the proxy (a 429 counted by {@link #refused}) after {@code since},
     * other than at the instants {@code own} accepts (one URL's own refusals).
     */
    synchronized boolean refusedAfter(String host, long since, java.util.function.LongPredicate own) {
        Rest rest = host == null ? null : rests.get(host);
        return rest != null && rest.refused && rest.lastRefusal - since > 0 && !own.test(rest.lastRefusal);
    }

    /** {@code host} itself refused a page through the proxy at {@code now} (its own 429): no longer passing. */
    synchronized void refused(long now, String host) {
        Rest rest = rest(host);
        rest.priorRefused = rest.refused;
        rest.priorRefusal = rest.lastRefusal;
        rest.refused = true;
        rest.lastRefusal = now;
    }

    /**
     * The 429 marked at {@code refusedAt} ({@link #refused}) that rested the pair {@code restMillis} turned out to
     * be one URL's own: it no longer counts against the pair's passing, and, with {@code forgive} (its rest was
     * told only one short penalty, never more), the pair's backoff starts over, unless a later 429 has grown it
     * since (then that one stands).
     */
    synchronized void release(String host, long refusedAt, long restMillis, boolean forgive) {
        Rest rest = host == null ? null : rests.get(host);
        if (rest == null) {
            return;
        }
        if (rest.refused && rest.lastRefusal == refusedAt) {
            rest.refused = rest.priorRefused;
            rest.lastRefusal = rest.priorRefusal;
        }
        if (forgive && restMillis > 0 && rest.backoff.lastRestEndsAt(refusedAt + restMillis * 1_000_000L)) {
            rest.backoff.success();
        }
    }

    private Rest rest(String host) {
        return rests.computeIfAbsent(host, h -> new Rest(restPolicy.newBackoff()));
    }

    private long recentNanos() {
        return restPolicy.forgiveMillis() * 1_000_000L;
    }

    synchronized void success() {
        consecutiveFailures = 0;
        unhealthy = false;
    }

    /** {@code host} answered through the proxy: also forgives the pair's 429s (its rest was long enough). */
    synchronized void success(String host) {
        success();
        Rest rest = host == null ? null : rests.get(host);
        if (rest != null) {
            rest.backoff.success();
        }
    }

    /**
     * @return true when this failure made the proxy unhealthy (or sent it back after a probe); false for the
     *         failures of attempts already under way through it while it is down (they extend its cooldown only)
     */
    synchronized boolean failure(long now) {
        consecutiveFailures++;
        if (consecutiveFailures >= failuresToUnhealthy) {
            boolean alreadyDown = unhealthy && unhealthyUntil - now > 0;
            unhealthy = true;
            unhealthyUntil = now + cooldownNanos;
            return !alreadyDown;
        }
        return false;
    }

    /**
     * {@code host} answered 429 through this proxy at {@code now}, asking for {@code askedMillis}: how long the
     * pair is to rest, what was asked or (a repeated 429) longer. The caller tells the pair's rest to its keeper.
     *
     * @return the rest in milliseconds
     */
    synchronized long penalize(long now, String host, long askedMillis) {
        return rest(host).backoff.next(now, askedMillis);
    }

    /** A short word for the progress table: healthy, probing, DOWN 4.2s. */
    synchronized String describe(long now) {
        rests.values().removeIf(rest -> rest.idle(now, recentNanos())); // quiet long enough: nothing to remember
        return unhealthy && unhealthyUntil - now > 0
                ? String.format(Locale.ROOT, "DOWN %.1fs", (unhealthyUntil - now) / 1e9)
                : unhealthy ? "probing" : "healthy";
    }
}
