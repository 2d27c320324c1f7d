package io.tokenbucket.math;

/**
 * The outcome of {@link BucketMath#reserve(long[], long, long, Limits, long)} on a bucket with several limits.
 *
 * @param granted   true when every limit's tokens are reserved, false when refused (nothing consumed)
 * @param waitTicks ticks until every limit has the tokens: the latest of the limits
 * @param remaining whole tokens left after this decision: the fewest of any limit, never negative
 * @param tats      the state to store, one {@code tat} per limit (the old state when refused)
 */
public record MultiDecision(boolean granted, long waitTicks, long remaining, long[] tats) {
}
