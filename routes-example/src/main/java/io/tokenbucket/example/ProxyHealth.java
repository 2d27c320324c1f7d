package io.tokenbucket.example;

import java.util.Locale;

/**
 * The health of one proxy, on a nanosecond clock passed in by the caller (so tests need no sleeps).
 *
 * <p>{@code failuresToUnhealthy} consecutive failures blamed on the proxy ({@link FetchOutcome} says which)
 * make it unhealthy for {@code cooldown}; after it the proxy is offered again ("probing"): one success makes it
 * healthy, one more failure sends it back for another cooldown. A 429 is not a failure of the proxy but a
 * penalty: the proxy rests for the time the target asked for. Health and penalty are this instance's view only;
 * neither touches the proxy's bucket except the penalty, which {@link ProxyPool} also sends to it. Synchronized:
 * attempts report on many threads.
 */
final class ProxyHealth {

    private final int failuresToUnhealthy;
    private final long cooldownNanos;
    private int consecutiveFailures;
    private long unhealthyUntil;
    private boolean unhealthy;
    private long penaltyUntil;
    private boolean penalised;

    ProxyHealth(int failuresToUnhealthy, long cooldownNanos) {
        this.failuresToUnhealthy = failuresToUnhealthy;
        this.cooldownNanos = cooldownNanos;
    }

    /** Whether the proxy may be handed out at {@code now}. */
    synchronized boolean available(long now) {
        return (!unhealthy || now - unhealthyUntil >= 0) && (!penalised || now - penaltyUntil >= 0);
    }

    /** Nanoseconds from {@code now} until the proxy is available again (0 when it is). */
    synchronized long nanosUntilAvailable(long now) {
        long wait = 0;
        if (unhealthy) {
            wait = Math.max(wait, unhealthyUntil - now);
        }
        if (penalised) {
            wait = Math.max(wait, penaltyUntil - now);
        }
        return Math.max(0, wait);
    }

    synchronized void success() {
        consecutiveFailures = 0;
        unhealthy = false;
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

    /** Rests the proxy until {@code now + nanos}; a longer penalty already running is kept. */
    synchronized void penalise(long now, long nanos) {
        long until = now + nanos;
        if (!penalised || until - penaltyUntil > 0) {
            penaltyUntil = until;
        }
        penalised = true;
    }

    /** A short word for the progress table: healthy, probing, rests 0.8s, DOWN 4.2s. */
    synchronized String describe(long now) {
        if (unhealthy && unhealthyUntil - now > 0) {
            return String.format(Locale.ROOT, "DOWN %.1fs", (unhealthyUntil - now) / 1e9);
        }
        if (penalised && penaltyUntil - now > 0) {
            return String.format(Locale.ROOT, "rests %.1fs", (penaltyUntil - now) / 1e9);
        }
        return unhealthy ? "probing" : "healthy";
    }
}
