package io.tokenbucket.math;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The limits of one bucket: one or more {@link Limit}s checked and reserved together, for example
 * {@code 10 per second} and {@code 1000 per hour}. A reservation waits for the latest of them and a refusal
 * consumes nothing from any. The state of a bucket is one {@code tat} per limit, in the same order.
 *
 * <p>The limits may carry an {@link Adaptive}: then their rate is the configured one scaled by the bucket's current
 * factor ({@link AdaptiveMath}).
 *
 * <p>Immutable; equal when the same limits stand in the same order with the same adaptation.
 */
public final class Limits {

    private final Limit[] limits;
    private final Adaptive adaptive;

    private Limits(Limit[] limits, Adaptive adaptive) {
        this.limits = limits;
        this.adaptive = adaptive;
    }

    /**
     * The given limits, in order.
     *
     * @throws IllegalArgumentException when there is none
     */
    public static Limits of(Limit... limits) {
        if (limits.length == 0) {
            throw new IllegalArgumentException("a bucket needs at least one limit");
        }
        return new Limits(limits.clone(), null);
    }

    /** The given limits, in order. */
    public static Limits of(List<Limit> limits) {
        return of(limits.toArray(new Limit[0]));
    }

    /**
     * These limits with a rate that adapts as {@code adaptive} says ({@link AdaptiveMath}), or with a fixed rate
     * when it is null.
     */
    public Limits withAdaptive(Adaptive adaptive) {
        return Objects.equals(adaptive, this.adaptive) ? this : new Limits(limits, adaptive);
    }

    /** How the rate adapts, or null when it is fixed (the default). */
    public Adaptive adaptive() {
        return adaptive;
    }

    /** How many limits. */
    public int size() {
        return limits.length;
    }

    /** The limit at {@code index}. */
    public Limit get(int index) {
        return limits[index];
    }

    /** The smallest capacity: the most tokens one request may take. */
    public long capacity() {
        long c = Long.MAX_VALUE;
        for (Limit l : limits) {
            c = Math.min(c, l.capacity());
        }
        return c;
    }

    /**
     * Checks that {@code tokens} can ever be granted.
     *
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above a capacity
     */
    public void checkCost(long tokens) {
        for (Limit l : limits) {
            l.cost(tokens);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Limits other && Arrays.equals(limits, other.limits)
                && Objects.equals(adaptive, other.adaptive);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(limits) * 31 + Objects.hashCode(adaptive);
    }

    @Override
    public String toString() {
        return adaptive == null ? Arrays.toString(limits) : Arrays.toString(limits) + ", " + adaptive;
    }
}
