package io.tokenbucket.math;

/**
 * The adaptive part of a bucket's state ({@link AdaptiveMath}): the current factor, the credit towards the next
 * increase, and when the last cut was.
 *
 * @param factorPpm  the current rate as parts per million of the configured rate, 1 to {@link Adaptive#PPM}
 * @param credit     tokens granted since the last step, towards the next increase (fewer than one step's worth)
 * @param cutAtTicks the instant of the last cut, in ticks of the store's clock (read by wrapping difference);
 *                   meaningless at the ceiling
 */
public record RateState(long factorPpm, long credit, long cutAtTicks) {

    /** The configured rate, as a bucket without adaptive state has. */
    public static final RateState CEILING = new RateState(Adaptive.PPM, 0, 0);

    /** True at the configured rate: nothing to store. */
    public boolean isCeiling() {
        return factorPpm >= Adaptive.PPM;
    }

    /** The factor as a fraction of the configured rate, from just above 0 to 1. */
    public double factor() {
        return (double) factorPpm / Adaptive.PPM;
    }
}
