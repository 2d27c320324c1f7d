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
 * factor ({@link AdaptiveMath}). They may also carry an <em>in-flight limit</em>: at most {@link #inFlight()}
 * reservations of the key held at once, each from its grant until it is released ({@link Step.Op#RELEASE}); such a
 * key may have no rate limit at all ({@link #inFlightOnly}).
 *
 * <p>Immutable; equal when the same limits stand in the same order with the same adaptation and in-flight limit.
 */
public final class Limits {

    /** The largest in-flight limit: {@value}, so that a count of held slots fits every store's numbers. */
    public static final long MAX_IN_FLIGHT = 1_000_000_000L;

    private final Limit[] limits;
    private final Adaptive adaptive;
    private final long inFlight;
    /** {@link #capacity()}, computed once: every acquire asks it. */
    private final long capacity;

    private Limits(Limit[] limits, Adaptive adaptive, long inFlight) {
        this.limits = limits;
        this.adaptive = adaptive;
        this.inFlight = inFlight;
        long c = Long.MAX_VALUE;
        for (Limit l : limits) {
            c = Math.min(c, l.capacity());
        }
        this.capacity = c;
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
        return new Limits(limits.clone(), null, 0);
    }

    /**
     * No rate, only an in-flight limit: at most {@code inFlight} reservations held at once, each of any number of
     * tokens.
     *
     * @throws IllegalArgumentException when {@code inFlight} is not between 1 and {@link #MAX_IN_FLIGHT}
     */
    public static Limits inFlightOnly(long inFlight) {
        return new Limits(new Limit[0], null, checkInFlight(inFlight));
    }

    /** The given limits, in order. */
    public static Limits of(List<Limit> limits) {
        return of(limits.toArray(new Limit[0]));
    }

    /**
     * These limits with a rate that adapts as {@code adaptive} says ({@link AdaptiveMath}), or with a fixed rate
     * when it is null; limits without a rate limit ({@link #inFlightOnly}) are returned as they are.
     */
    public Limits withAdaptive(Adaptive adaptive) {
        // limits without a rate (in flight only) have nothing to adapt: they stay as they are
        return Objects.equals(adaptive, this.adaptive) || limits.length == 0 ? this
                : new Limits(limits, adaptive, inFlight);
    }

    /**
     * These limits with an in-flight limit of {@code inFlight} held reservations (0: none).
     *
     * @throws IllegalArgumentException when {@code inFlight} is negative or above {@link #MAX_IN_FLIGHT}, or 0 for
     *                                  limits without a rate limit
     */
    public Limits withInFlight(long inFlight) {
        if (inFlight == this.inFlight) {
            return this;
        }
        if (inFlight != 0 || limits.length == 0) {
            checkInFlight(inFlight);
        }
        return new Limits(limits, adaptive, inFlight);
    }

    private static long checkInFlight(long inFlight) {
        if (inFlight < 1 || inFlight > MAX_IN_FLIGHT) {
            throw new IllegalArgumentException("an in-flight limit must be between 1 and " + MAX_IN_FLIGHT + ", was "
                    + inFlight);
        }
        return inFlight;
    }

    /** The most reservations of the key held at once ({@link Step.Op#RELEASE} gives one back), or 0 for no limit. */
    public long inFlight() {
        return inFlight;
    }

    /** How the rate adapts, or null when it is fixed (the default). */
    public Adaptive adaptive() {
        return adaptive;
    }

    /** How many rate limits: 0 for {@link #inFlightOnly in-flight limits only}. */
    public int size() {
        return limits.length;
    }

    /** The limit at {@code index}. */
    public Limit get(int index) {
        return limits[index];
    }

    /** The smallest capacity: the most tokens one request may take ({@code Long.MAX_VALUE} without a rate limit). */
    public long capacity() {
        return capacity;
    }

    /**
     * Checks that {@code tokens} can ever be granted.
     *
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above a capacity
     */
    public void checkCost(long tokens) {
        if (tokens < 1) {
            throw new IllegalArgumentException("tokens must be at least 1, was " + tokens);
        }
        for (Limit l : limits) {
            l.cost(tokens);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Limits other && Arrays.equals(limits, other.limits)
                && Objects.equals(adaptive, other.adaptive) && inFlight == other.inFlight;
    }

    @Override
    public int hashCode() {
        return (Arrays.hashCode(limits) * 31 + Objects.hashCode(adaptive)) * 31 + Long.hashCode(inFlight);
    }

    @Override
    public String toString() {
        String text = adaptive == null ? Arrays.toString(limits) : Arrays.toString(limits) + ", " + adaptive;
        return inFlight == 0 ? text : text + ", " + inFlight + " in flight";
    }
}
