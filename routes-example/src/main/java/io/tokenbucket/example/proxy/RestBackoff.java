package io.tokenbucket.example.proxy;

import java.util.concurrent.TimeUnit;
import java.util.random.RandomGenerator;

/**
 * How long a (proxy, host) pair rests after a 429, growing while the 429s keep coming: one instance per pair
 * ({@link ProxyHealth}), on a nanosecond clock and a random generator passed in (so tests need no sleeps and
 * see fixed draws).
 *
 * <p>The first 429 after a quiet period rests the pair exactly what the target asked ({@code asked}: its
 * {@code Retry-After}, or {@code example.penalty}; capped already by {@code RetryAfter}). Each further 429 within
 * {@code forgiveNanos} of the previous one draws the rest with AWS's "decorrelated jitter":
 * {@code rest = min(cap, uniform(floor, 3 * previous rest))}, where {@code floor = max(asked, seed)}: never less
 * than the target asked, growing by up to three times per 429, never above {@code cap}
 * ({@code example.maxRetryAfter}), and spread so that pairs refused together do not all come back together. A
 * quiet period of {@code forgiveNanos} after the last rest ended, without a 429, forgives, and so does a page the
 * host answers through the pair ({@link #success}): the rest was long enough, so the next 429 is a first one
 * again. Not thread
 * safe: its {@link ProxyHealth} locks.
 */
public final class RestBackoff {

    /**
     * The longest rest and quiet period a pair's backoff takes ({@code example.maxRetryAfter},
     * {@code example.forgiveAfter}): one day; a proxy to rest longer is better taken out of the proxy file.
     */
    public static final long CEILING_MILLIS = TimeUnit.DAYS.toMillis(1);

    /**
     * The settings every pair's backoff shares.
     *
     * @param seedMillis    the smallest rest a repeated 429 grows from ({@code example.penalty})
     * @param capMillis     the longest rest ({@code example.maxRetryAfter})
     * @param forgiveMillis the quiet period after which a pair's growth starts over ({@code example.forgiveAfter})
     * @param random        the jitter's draws (shared: {@link java.util.SplittableRandom} is not thread safe, so
     *                      the application passes a thread-safe generator; calls are made under a lock anyway)
     */
    public record Policy(long seedMillis, long capMillis, long forgiveMillis, RandomGenerator random) {

        /** example.penalty 1 s, example.maxRetryAfter 60 s, example.forgiveAfter 10 s. */
        static Policy defaults() {
            return new Policy(1000, 60_000, 10_000, new java.util.Random());
        }

        public Policy {
            if (forgiveMillis < 0 || forgiveMillis > CEILING_MILLIS) {
                throw new IllegalArgumentException("example.forgiveAfter must be between 0 and 1d, was "
                        + forgiveMillis + " ms");
            }
        }

        RestBackoff newBackoff() {
            return new RestBackoff(seedMillis, capMillis, TimeUnit.MILLISECONDS.toNanos(forgiveMillis), random);
        }
    }

    private final long seedMillis;
    private final long capMillis;
    private final long forgiveNanos;
    private final RandomGenerator random;
    private long previousMillis;
    private long restEnd;
    private boolean any;

    /**
     * @param seedMillis   the smallest rest a repeated 429 grows from ({@code example.penalty}), 0 to cap
     * @param capMillis    the longest rest ({@code example.maxRetryAfter})
     * @param forgiveNanos the quiet period after which the growth starts over ({@code example.forgiveAfter})
     * @param random       the jitter's draws
     */
    RestBackoff(long seedMillis, long capMillis, long forgiveNanos, RandomGenerator random) {
        this.seedMillis = Math.min(Math.max(1, seedMillis), capMillis);
        this.capMillis = capMillis;
        this.forgiveNanos = forgiveNanos;
        this.random = random;
    }

    /**
     * A 429 at {@code now} whose target asked for {@code askedMillis} (at most the cap).
     *
     * @return the rest in milliseconds, from {@code askedMillis} to the cap
     */
    long next(long now, long askedMillis) {
        long asked = Math.min(Math.max(0, askedMillis), capMillis);
        long rest;
        if (forgiven(now)) {
            rest = asked;
        } else {
            long floor = Math.max(asked, seedMillis);
            long ceiling = Math.min(capMillis, saturatedTimesThree(Math.max(previousMillis, floor)));
            rest = ceiling <= floor ? floor : floor + random.nextLong(ceiling - floor + 1);
        }
        any = true;
        restEnd = now + rest * 1_000_000L; // at most a day: no overflow
        previousMillis = rest;
        return rest;
    }

    /** Whether the last rest drawn ({@link #next}) ends at {@code nanos}: no later 429 has grown it since. */
    boolean lastRestEndsAt(long nanos) {
        return any && restEnd == nanos;
    }

    /** The host answered through the pair: its next 429 is a first one again. */
    void success() {
        any = false;
    }

    /**
     * Whether the pair has been quiet (no 429) for the forgiving period after its last rest ended, at {@code now}:
     * its next 429 is a first one again, and its state may go.
     */
    boolean forgiven(long now) {
        return !any || now - restEnd >= forgiveNanos;
    }

    private static long saturatedTimesThree(long millis) {
        return millis > Long.MAX_VALUE / 3 ? Long.MAX_VALUE : millis * 3;
    }

    @Override
    public String toString() {
        return "RestBackoff[previous " + previousMillis + " ms, forgives after "
                + TimeUnit.NANOSECONDS.toMillis(forgiveNanos) + " ms]";
    }
}
