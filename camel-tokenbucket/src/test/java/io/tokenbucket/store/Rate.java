package io.tokenbucket.store;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Outcome;

/**
 * The rate part of an {@link Outcome}, for tests that compare it whole: whether the step cut, the factor and the
 * slow start.
 */
public record Rate(boolean cut, long factorPpm, boolean starting) {

    /** A rate past (or without) a slow start. */
    public Rate(boolean cut, long factorPpm) {
        this(cut, factorPpm, false);
    }

    /** The rate part of {@code outcome}. */
    public static Rate of(Outcome outcome) {
        return new Rate(outcome.cut(), outcome.factorPpm(), outcome.starting());
    }

    /** A key at its configured rate that nothing cut. */
    public static final Rate CEILING = new Rate(false, Adaptive.PPM);
}
