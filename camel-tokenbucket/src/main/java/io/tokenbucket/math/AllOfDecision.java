package io.tokenbucket.math;

import java.util.Arrays;

/**
 * The outcome of {@link BucketMath#reserveAll}.
 *
 * @param chosen    the position of the chosen candidate among the candidates, from 0
 * @param granted   true when every key was charged; false when refused, and then no key was
 * @param waitTicks ticks until every key has the tokens: the common release instant is {@code now + waitTicks}
 * @param remaining the fewest whole tokens left on the chosen candidate's group and the shared keys, never negative
 * @param tatTicks  the states after the decision, one {@code tat} per limit in ticks: the chosen candidate's group
 *                  first (the candidate at index 0, then the keys charged with it, in order), then the shared keys
 *                  (with groups of one key, shared key {@code j} at {@code 1 + j}); when refused, the states given.
 *                  Kept, not copied: do not change them
 */
public record AllOfDecision(int chosen, boolean granted, long waitTicks, long remaining, long[][] tatTicks) {

    /** The states of index {@code index} after the decision (see {@link #tatTicks()}). */
    public long[] tatTicks(int index) {
        return tatTicks[index];
    }

    /** Equal when every field and every state is. */
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
