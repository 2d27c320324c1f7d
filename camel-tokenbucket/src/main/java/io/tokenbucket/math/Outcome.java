package io.tokenbucket.math;

/**
 * The answer of one {@link Step} ({@link BucketMath#decide}), and what every store answers for every command: one
 * type for one key or many, a fixed or an adaptive rate, any operation.
 *
 * @param granted   true when the tokens are reserved (the caller proceeds after {@code waitTicks}); false when the
 *                  wait exceeded the caller's maximum and nothing was consumed. For a peek (and the answers of
 *                  penalize, throttle and rate, which are peeks of one token): true when the tokens are there now
 * @param chosen    the position of the chosen group among the step's groups, from 0 (0 with one group)
 * @param waitTicks ticks until every key of the chosen group and every shared key has the tokens: the wait to
 *                  observe when granted, the refused wait otherwise; ticks are nanoseconds in every store
 * @param remaining the fewest whole tokens left on the chosen group's keys and the shared keys after the step,
 *                  never negative; on a key with an in-flight limit, at most its free slots
 * @param factorPpm the rate of the chosen group's first key after the step, in parts per million of its configured
 *                  rate ({@link Adaptive#PPM} for a key whose rate is fixed)
 * @param starting  true while that key is in its slow start ({@link AdaptiveMath})
 * @param cut       true when this step cut a rate (a {@code throttled} signal outside the hold)
 * @param slotless  true when a reservation (or peek) was refused because every group had a key whose in-flight slots
 *                  were all held: no wait can be computed, it lasts until a slot is released ({@code waitTicks} is
 *                  then the wait the tokens alone would have)
 * @param fromTicks the instant {@code waitTicks} counts from, on the clock of the caller: the step's own
 *                  {@code now} where the store runs the math in this JVM, the reply's arrival where it runs it
 *                  elsewhere (never before the decision, so a wait counted from it never ends early). A caller that
 *                  waits until {@code fromTicks + waitTicks} releases in the order the store decided, however late
 *                  it reads the answer; meaningless when {@code waitTicks} is 0
 */
public record Outcome(boolean granted, int chosen, long waitTicks, long remaining, long factorPpm, boolean starting,
                      boolean cut, boolean slotless, long fromTicks) {

    /** An answer with every slot it needed free (or no in-flight limit), its wait counted from {@code fromTicks}. */
    public Outcome(boolean granted, int chosen, long waitTicks, long remaining, long factorPpm, boolean starting,
                   boolean cut, long fromTicks) {
        this(granted, chosen, waitTicks, remaining, factorPpm, starting, cut, false, fromTicks);
    }

    /** A grant without wait on a key at its configured rate, with {@code remaining} tokens left. */
    public static Outcome granted(long remaining) {
        return new Outcome(true, 0, 0, remaining, Adaptive.PPM, false, false, 0);
    }

    /** The rate as a fraction of the configured rate, above 0, at most 1. */
    public double factor() {
        return (double) factorPpm / Adaptive.PPM;
    }
}
