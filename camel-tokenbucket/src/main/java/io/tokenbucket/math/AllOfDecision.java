package io.tokenbucket.math;

import java.util.Arrays;

/**
 * The outcome of {@link BucketMath#reserveAll}: which candidate was chosen, whether the tokens are granted on it
 * and on every shared key, how long the caller must wait, the fewest whole tokens any of those keys has left,
 * and the states to store: the chosen candidate's first, then each shared key's, one {@code tat} per limit, in
 * ticks.
 *
 * <p>Immutable (the state arrays are kept, not copied: do not change them).
 */
public final class AllOfDecision {

    private final int chosen;
    private final boolean granted;
    private final long waitTicks;
    private final long remaining;
    private final long[][] tatTicks;

    AllOfDecision(int chosen, boolean granted, long waitTicks, long remaining, long[][] tatTicks) {
        this.chosen = chosen;
        this.granted = granted;
        this.waitTicks = waitTicks;
        this.remaining = remaining;
        this.tatTicks = tatTicks;
    }

    /** The position of the chosen candidate among the candidates, from 0. */
    public int chosen() {
        return chosen;
    }

    /** True when every key was charged; false when refused, and then no key was. */
    public boolean granted() {
        return granted;
    }

    /** Ticks until every key has the tokens: the common release instant is {@code now + waitTicks}. */
    public long waitTicks() {
        return waitTicks;
    }

    /** The fewest whole tokens left on the chosen candidate and the shared keys, never negative. */
    public long remaining() {
        return remaining;
    }

    /**
     * The states after the decision: index 0 is the chosen candidate's, index {@code 1 + j} shared key
     * {@code j}'s; when refused, the states given.
     */
    public long[] tatTicks(int index) {
        return tatTicks[index];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof AllOfDecision d && chosen == d.chosen && granted == d.granted
                && waitTicks == d.waitTicks && remaining == d.remaining && Arrays.deepEquals(tatTicks, d.tatTicks);
    }

    @Override
    public int hashCode() {
        return Arrays.deepHashCode(tatTicks) + 31 * Long.hashCode(waitTicks) + 961 * chosen;
    }

    /** For example {@code AllOfDecision[chosen=0, granted=true, waitTicks=0, remaining=1, tatTicks=[[200], [100]]]}. */
    @Override
    public String toString() {
        return "AllOfDecision[chosen=" + chosen + ", granted=" + granted + ", waitTicks=" + waitTicks
                + ", remaining=" + remaining + ", tatTicks=" + Arrays.deepToString(tatTicks) + "]";
    }
}
