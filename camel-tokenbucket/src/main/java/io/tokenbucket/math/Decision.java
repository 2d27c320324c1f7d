package io.tokenbucket.math;

/**
 * The outcome of {@link BucketMath#reserve}: whether the tokens are granted, how long the caller must wait
 * for them, how many whole tokens remain, and the state to store.
 *
 * @param granted   true when the reservation holds (the caller proceeds after {@code waitTicks}); false when it
 *                  was refused because {@code waitTicks} exceeded the caller's maximum (nothing was consumed)
 * @param waitTicks ticks until the tokens are there: to wait when granted, the wait that was refused otherwise
 * @param remaining whole tokens left in the bucket after this decision, never negative
 * @param tat       the bucket's state after the decision: the new {@code tat} when granted, the old one when
 *                  refused
 */
public record Decision(boolean granted, long waitTicks, long remaining, long tat) {
}
