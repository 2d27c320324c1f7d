package io.tokenbucket.math;

/**
 * The outcome of {@link AdaptiveMath#reserveAll}: the decision, made at each key's current rate, and the rate state
 * to store with each key it names.
 *
 * @param decision the decision on the keys' {@code tat}s ({@link AllOfDecision}); its states are the ones to store
 *                 when granted
 * @param rates    one rate state per entry of {@code decision.tatTicks()}, in the same order: for a key whose
 *                 limits adapt, its current rate after the step ({@link Adaptive#fresh()}: none to store), with the
 *                 credit the grant earned; for a key of fixed limits, the state it was given (possibly null), to be
 *                 left as it is. Kept, not copied: do not change it
 */
public record AllOfAdapted(AllOfDecision decision, RateState[] rates) {
}
