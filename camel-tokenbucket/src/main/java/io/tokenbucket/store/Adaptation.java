package io.tokenbucket.store;

import io.tokenbucket.math.Adaptive;

/**
 * A store's answer to a {@code throttled} signal or to a question about a key's rate
 * ({@link BucketStore#throttle}, {@link BucketStore#rate}).
 *
 * @param cut       true when this signal cut the rate; false when it was ignored (a cut within the hold) or when
 *                  nothing was signalled
 * @param factorPpm the key's current rate in parts per million of its configured rate, 1 to {@link Adaptive#PPM}
 * @param starting  true while the key is in its slow start (adaptiveStart below 1 and no cut yet)
 */
public record Adaptation(boolean cut, long factorPpm, boolean starting) {

    /** The answer for a key at its configured rate that nothing cut: a fixed key, or a store that keeps no rate. */
    public static final Adaptation CEILING = new Adaptation(false, Adaptive.PPM);

    /** An answer past (or without) a slow start. */
    public Adaptation(boolean cut, long factorPpm) {
        this(cut, factorPpm, false);
    }

    /** The current rate as a fraction of the configured rate, above 0, at most 1. */
    public double factor() {
        return (double) factorPpm / Adaptive.PPM;
    }
}
