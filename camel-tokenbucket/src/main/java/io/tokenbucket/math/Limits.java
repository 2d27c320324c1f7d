package io.tokenbucket.math;

import java.util.Arrays;
import java.util.List;

/**
 * The limits of one bucket: one or more {@link Limit}s checked and reserved together, for example
 * {@code 10 per second} and {@code 1000 per hour}. A reservation waits for the latest of them and a refusal
 * consumes nothing from any. The state of a bucket is one {@code tat} per limit, in the same order.
 *
 * <p>Immutable; equal when the same limits stand in the same order.
 */
public final class Limits {

    private final Limit[] limits;

    private Limits(Limit[] limits) {
        this.limits = limits;
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
        return new Limits(limits.clone());
    }

    /** The given limits, in order. */
    public static Limits of(List<Limit> limits) {
        return of(limits.toArray(new Limit[0]));
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
        return o instanceof Limits other && Arrays.equals(limits, other.limits);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(limits);
    }

    @Override
    public String toString() {
        return Arrays.toString(limits);
    }
}
