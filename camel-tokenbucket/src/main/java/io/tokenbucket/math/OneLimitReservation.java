package io.tokenbucket.math;

/**
 * The one special path of the rate math: a reservation on one key of one fixed limit, in scalars, for a store that
 * commits one number by a compare-and-set (the local store's lock-free hot path). It is exactly
 * {@link BucketMath#decide} on such a step, which BucketMathPropertyTest checks case by case.
 */
public final class OneLimitReservation {

    private OneLimitReservation() {
    }

    /**
     * The state after reserving {@code tokens} at {@code nowTicks} on state {@code tatTicks}. With one key the wait
     * {@code W = max(0, debt + n*T - C*T)} never exceeds the debt ({@code n*T <= C*T}), so the charge
     * {@code now + max(debt, W) + n*T} is {@code now + debt + n*T}.
     *
     * @param maxWaitTicks the longest wait accepted, as {@link Step#maxWaitTicks()}
     * @return the new state when granted; {@code tatTicks} itself when refused. A grant always moves the state
     *         ({@code n*T} of at least 1 tick past {@code max(tat, now)}, which no wrap brings back to {@code tat}),
     *         so the two are told apart by {@code !=}; {@link #answer} gives the answer
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above the capacity
     */
    public static long reserve(long tatTicks, long nowTicks, long tokens, Limit limit, long maxWaitTicks) {
        long debtTicks = BucketMath.debt(tatTicks, nowTicks);
        long costTicks = limit.cost(tokens);
        long waitTicks = Math.max(0, debtTicks + costTicks - limit.burst());
        return waitTicks > Math.min(maxWaitTicks, BucketMath.MAX_WAIT_TICKS) ? tatTicks
                : nowTicks + debtTicks + costTicks;
    }

    /**
     * {@link BucketMath#decide}'s answer to the reservation {@link #reserve} made from {@code tatTicks} to
     * {@code nextTatTicks} at {@code nowTicks}: granted when the state moved, the wait, the tokens left after it.
     */
    public static Outcome answer(long tatTicks, long nextTatTicks, long nowTicks, long tokens, Limit limit) {
        long waitTicks = Math.max(0, BucketMath.debt(tatTicks, nowTicks) + limit.cost(tokens) - limit.burst());
        long remaining = limit.available(nextTatTicks, nowTicks);
        return new Outcome(nextTatTicks != tatTicks, 0, waitTicks, remaining, Adaptive.PPM, false, false, nowTicks);
    }
}
