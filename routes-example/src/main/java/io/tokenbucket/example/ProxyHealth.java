package io.tokenbucket.example;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The health of one proxy and the rests of its (proxy, host) pairs, on a nanosecond clock passed in by the caller
 * (so tests need no sleeps).
 *
 * <p>{@code failuresToUnhealthy} consecutive failures blamed on the proxy ({@link FetchOutcome} says which)
 * make it unhealthy for {@code cooldown}; after it the proxy is offered again ("probing"): one success makes it
 * healthy, one more failure sends it back for another cooldown. A 429 is not a failure of the proxy but the word
 * of one host about this proxy's address: the pair (this proxy, that host) rests ({@link RestBackoff}: what the
 * host asked, growing with jitter while its 429s keep coming, forgiven after a quiet period), and the proxy stays
 * available for every other host. Health and rests are this instance's view only; the rest also goes to the
 * pair's bucket ({@link ProxyPool}), which every instance sharing the store sees. At most {@value #MAX_HOSTS}
 * hosts are remembered per proxy, the least recently refused forgotten first. Synchronized: attempts report on
 * many threads.
 */
final class ProxyHealth {

    /** The most (proxy, host) rests one proxy remembers. */
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

    /** One pair's rest: until when, and how its next one grows. */
    private static final class Rest {
        final RestBackoff backoff;
        long until;

        Rest(RestBackoff backoff) {
            this.backoff = backoff;
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

    /** Whether the proxy may be handed out at {@code now} for {@code host}: healthy and the pair not resting. */
    synchronized boolean available(long now, String host) {
        return available(now) && nanosResting(now, host) == 0;
    }

    /** Nanoseconds from {@code now} until the proxy is available for {@code host} again (0 when it is). */
    synchronized long nanosUntilAvailable(long now, String host) {
        long wait = unhealthy ? unhealthyUntil - now : 0;
        return Math.max(0, Math.max(wait, nanosResting(now, host)));
    }

    private long nanosResting(long now, String host) {
        Rest rest = host == null ? null : rests.get(host);
        return rest == null ? 0 : Math.max(0, rest.until - now);
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
     * {@code host} answered 429 through this proxy at {@code now}, asking for {@code askedMillis}: the pair rests,
     * for what was asked or (a repeated 429) longer; a longer rest already running is kept.
     *
     * @return the rest in milliseconds
     */
    synchronized long penalise(long now, String host, long askedMillis) {
        Rest rest = rests.computeIfAbsent(host, h -> new Rest(restPolicy.newBackoff()));
        long millis = rest.backoff.next(now, askedMillis);
        long until = now + millis * 1_000_000L; // at most a day in nanoseconds: no overflow
        if (until - rest.until > 0) {
            rest.until = until;
        }
        return millis;
    }

    /** A short word for the progress table: healthy, probing, DOWN 4.2s; and "rests on N hosts" while any do. */
    synchronized String describe(long now) {
        int resting = 0;
        for (Iterator<Rest> it = rests.values().iterator(); it.hasNext(); ) {
            Rest rest = it.next();
            if (rest.until - now > 0) {
                resting++;
            } else if (rest.backoff.forgiven(now)) {
                it.remove(); // quiet long enough: nothing left to remember
            }
        }
        String word = unhealthy && unhealthyUntil - now > 0
                ? String.format(Locale.ROOT, "DOWN %.1fs", (unhealthyUntil - now) / 1e9)
                : unhealthy ? "probing" : "healthy";
        return resting == 0 ? word : word + ", rests on " + resting + (resting == 1 ? " host" : " hosts");
    }
}
