package io.tokenbucket.math;

/**
 * A decision on an adaptive bucket ({@link AdaptiveMath}): the decision on its {@code tat}s, made at its current
 * rate, and the rate state to store with them.
 *
 * @param decision the decision; its states are the ones to store
 * @param rate     the rate state after the step ({@link Adaptive#fresh()}: none to store)
 * @param cut      true when the step was a {@code throttled} signal that cut the rate (false: ignored, or no signal)
 */
public record Adapted(Decision decision, RateState rate, boolean cut) {
}
