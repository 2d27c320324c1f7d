package io.tokenbucket.math;

import java.util.Arrays;

/**
 * The outcome of a {@link BucketMath} step, for a bucket of one limit or of several: whether the tokens are
 * granted, how long the caller must wait for them, how many whole tokens remain, and the state to store (one
 * {@code tat} per limit, in ticks).
 *
 * <p>One type for one limit or several. A decision of the one-limit functions keeps its single state as a number
 * rather than an array: a store's fast path reads it with {@link #tatTicks(int)}, and the JIT then removes the
 * whole decision from the hot path, which it does not do for a decision holding an array (24 bytes more per
 * acquire, measured with JMH's gc profiler on {@code LocalAcquire}).
 *
 * <p>Immutable; equal when every field and every state is.
 */
public final class Decision {

    private final boolean granted;
    private final long waitTicks;
    private final long remaining;
    private final long firstTatTicks;
    /** Every limit's state, or null for a decision on one limit (then {@link #firstTatTicks} is its state). */
    private final long[] tatTicks;

    private Decision(boolean granted, long waitTicks, long remaining, long firstTatTicks, long[] tatTicks) {
        this.granted = granted;
        this.waitTicks = waitTicks;
        this.remaining = remaining;
        this.firstTatTicks = firstTatTicks;
        this.tatTicks = tatTicks;
    }

    /**
     * A decision on a bucket of several limits (or of one, kept as an array).
     *
     * @param tatTicks the states to store, one per limit; kept, not copied
     */
    public static Decision of(boolean granted, long waitTicks, long remaining, long[] tatTicks) {
        return new Decision(granted, waitTicks, remaining, tatTicks[0], tatTicks);
    }

    /** A decision on a bucket of one limit whose state is {@code tatTicks}. */
    static Decision ofOne(boolean granted, long waitTicks, long remaining, long tatTicks) {
        return new Decision(granted, waitTicks, remaining, tatTicks, null);
    }

    /**
     * True when the reservation holds on every limit (the caller proceeds after {@link #waitTicks()}); false when
     * it was refused because the wait exceeded the caller's maximum (nothing was consumed).
     */
    public boolean granted() {
        return granted;
    }

    /**
     * Ticks until every limit has the tokens (the latest of the limits): to wait when granted, the wait that was
     * refused otherwise.
     */
    public long waitTicks() {
        return waitTicks;
    }

    /** Whole tokens left after this decision: the fewest of any limit, never negative. */
    public long remaining() {
        return remaining;
    }

    /** The state of limit {@code limit} after the decision, in ticks (the input's when refused or peeked). */
    public long tatTicks(int limit) {
        if (tatTicks == null) {
            if (limit != 0) {
                throw new IndexOutOfBoundsException("a decision on one limit has no limit " + limit);
            }
            return firstTatTicks;
        }
        return tatTicks[limit];
    }

    /**
     * The states after the decision, one per limit, in ticks. For a decision of the several-limit functions this
     * is the array itself (do not change it): the one passed in when refused or peeked, so a caller can tell
     * that there is nothing to store by identity.
     */
    public long[] tatTicks() {
        return tatTicks != null ? tatTicks : new long[] {firstTatTicks};
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Decision d && granted == d.granted && waitTicks == d.waitTicks
                && remaining == d.remaining && Arrays.equals(tatTicks(), d.tatTicks());
    }

    @Override
    public int hashCode() {
        return Boolean.hashCode(granted) + 31 * Long.hashCode(waitTicks) + 961 * Long.hashCode(remaining)
                + 29791 * Arrays.hashCode(tatTicks());
    }

    /** For example {@code Decision[granted=true, waitTicks=0, remaining=4, tatTicks=[200]]}. */
    @Override
    public String toString() {
        return "Decision[granted=" + granted + ", waitTicks=" + waitTicks + ", remaining=" + remaining
                + ", tatTicks=" + Arrays.toString(tatTicks()) + "]";
    }
}
