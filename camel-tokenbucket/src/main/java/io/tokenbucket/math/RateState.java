package io.tokenbucket.math;

/**
 * The adaptive part of a bucket's state ({@link AdaptiveMath}): the current factor, the credit towards the next
 * increase, when the last cut was, whether the key is still in its slow start (no cut yet), where the last cut
 * found the target's limit, and the tokens granted since that cut (the rate sent between two signals).
 *
 * @param factorPpm  the current rate as parts per million of the configured rate, 1 to {@link Adaptive#PPM}
 * @param credit     tokens granted since the last step, towards the next increase (fewer than one step's worth)
 * @param cutAtTicks the instant of the last cut, in ticks of the store's clock (read by wrapping difference);
 *                   meaningless at the ceiling and while starting
 * @param starting   true from a key's first decision until its first cut: every two steps double the factor, and
 *                   the first cut halves it once it has doubled ({@link AdaptiveMath})
 * @param maxPpm     the factor the last cut came at (less for a slow start's cut or a cut below the one before,
 *                   1.1 of the measure for a measured cut, {@link AdaptiveMath#cut}), 0 to {@link Adaptive#PPM}: the
 *                   climb after it slows down just below it and probes beyond it ({@link AdaptiveMath#climb}); 0 for
 *                   none
 * @param granted    the tokens granted since the last cut, during its hold too, 0 to {@link AdaptiveMath#MAX_GRANTED}
 *                   (counted up to there): the next cut measures the rate sent between the two signals by them
 *                   ({@link AdaptiveMath#cut}); 0 while starting and at the ceiling, where nothing is counted
 */
public record RateState(long factorPpm, long credit, long cutAtTicks, boolean starting, long maxPpm, long granted) {

    /** The configured rate after (or without) a slow start: what a key without state has when adaptiveStart is 1. */
    public static final RateState CEILING = new RateState(Adaptive.PPM, 0, 0, false, 0, 0);

    /** A state without tokens counted since its last cut ({@code granted} 0). */
    public RateState(long factorPpm, long credit, long cutAtTicks, boolean starting, long maxPpm) {
        this(factorPpm, credit, cutAtTicks, starting, maxPpm, 0);
    }

    /** A state without a remembered cut ({@code maxPpm} 0). */
    public RateState(long factorPpm, long credit, long cutAtTicks, boolean starting) {
        this(factorPpm, credit, cutAtTicks, starting, 0);
    }

    /** A state past its slow start (or without one) and without a remembered cut. */
    public RateState(long factorPpm, long credit, long cutAtTicks) {
        this(factorPpm, credit, cutAtTicks, false, 0);
    }

    /** True at the configured rate, where nothing more is earned (which is not "nothing to store" while starting). */
    public boolean isCeiling() {
        return factorPpm >= Adaptive.PPM;
    }

    /** The factor as a fraction of the configured rate, from just above 0 to 1. */
    public double factor() {
        return (double) factorPpm / Adaptive.PPM;
    }
}
