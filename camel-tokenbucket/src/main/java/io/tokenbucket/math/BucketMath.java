package io.tokenbucket.math;

/**
 * The token bucket as a reservation on one number per bucket.
 *
 * <p>A bucket's state is {@code tat}, the "theoretical arrival time": the instant at which the bucket will be
 * full again. A bucket whose {@code tat <= now} is full and is exactly equivalent to no state at all, which is
 * why idle buckets may be dropped (or expire in Redis) without changing any outcome. With {@code T} the
 * interval of one token and {@code C} the capacity ({@link Limit}), the tokens available at {@code now} are
 * {@code C - (tat - now) / T}.
 *
 * <p>To reserve {@code n} tokens at {@code now}:
 * <pre>
 * base   = max(tat, now)
 * newTat = base + n*T
 * wait   = max(0, newTat - C*T - now)
 * wait &gt; maxWait  -&gt; refused, tat unchanged
 * otherwise       -&gt; granted, tat = newTat, proceed after wait
 * </pre>
 * A caller that must wait reserves its slot at once and then waits exactly {@code wait}: waiters are served
 * in reservation order and nobody polls. The Redis store's Lua script is this class, line for line.
 *
 * <p>All functions are pure: time is a parameter in ticks, the result is the state to store.
 *
 * <p><b>No overflow, whatever the input.</b> Every step works on the <em>debt</em> {@code tat - now} (the time
 * until the bucket is full), never on clock readings added together, so any {@code now} (a nanosecond clock may
 * be anywhere in the range of a {@code long}, and wraps) and any stored {@code tat} give an exact answer: a
 * state is read by the wrapping difference {@code tat - now}, and a debt above {@link #MAX_DEBT_TICKS} (no state
 * written here holds one) counts as that much. Waits never exceed {@link #MAX_WAIT_TICKS}: a reservation that
 * would wait longer is refused whatever the caller accepts, and a longer penalty counts as that long. With
 * those bounds every sum below stays under {@code Long.MAX_VALUE}, so a long wait can never wrap into an
 * admission.
 */
public final class BucketMath {

    /** The {@code maxWait} that accepts any wait up to {@link #MAX_WAIT_TICKS}. */
    public static final long NO_LIMIT = Long.MAX_VALUE;

    /**
     * The longest wait, in ticks, ever granted, and the longest penalty: {@code Long.MAX_VALUE / 4} (73 years
     * of nanoseconds). A reservation whose wait would be longer is refused whatever its {@code maxWait}; a
     * longer penalty counts as this long. Callers with a unit in mind set a lower ceiling of their own.
     */
    public static final long MAX_WAIT_TICKS = Long.MAX_VALUE / 4;

    /**
     * The largest debt ({@code tat - now}) a state is read with: the largest burst plus the longest wait. A
     * state further ahead (none written here is) counts as this far ahead, so it admits nothing.
     */
    public static final long MAX_DEBT_TICKS = Limit.MAX_BURST_TICKS + MAX_WAIT_TICKS;

    private BucketMath() {
    }

    /**
     * The debt of state {@code tat} at {@code now}: the ticks until the bucket is full again, between 0 (full)
     * and {@link #MAX_DEBT_TICKS}. The wrapping difference is exact for any two readings less than 2^63 ticks
     * apart, so a clock near {@code Long.MAX_VALUE} or {@code Long.MIN_VALUE} needs no care.
     */
    static long debt(long tat, long now) {
        long debt = tat - now;
        return debt <= 0 ? 0 : Math.min(debt, MAX_DEBT_TICKS);
    }

    /**
     * Reserves {@code tokens} tokens at {@code now}.
     *
     * @param tat     the bucket's state ({@code tat}); any value {@code <= now} means a full bucket
     * @param now     the current time in ticks, anywhere in the range of a {@code long}
     * @param tokens  the cost, between 1 and the capacity
     * @param limit   the bucket's limit
     * @param maxWait the longest wait, in ticks, the caller accepts: 0 never waits, {@link #NO_LIMIT} waits up
     *                to {@link #MAX_WAIT_TICKS}
     * @return the decision; when refused, its {@code tat} is the unchanged input
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above the capacity
     */
    public static Decision reserve(long tat, long now, long tokens, Limit limit, long maxWait) {
        long cost = limit.cost(tokens);
        long debt = debt(tat, now);
        long newDebt = debt + cost; // at most MAX_DEBT_TICKS + MAX_BURST_TICKS: no overflow
        long wait = Math.max(0, newDebt - limit.burst());
        if (wait > Math.min(maxWait, MAX_WAIT_TICKS)) {
            return new Decision(false, wait, available(debt, limit), tat);
        }
        return new Decision(true, wait, available(newDebt, limit), now + newDebt);
    }

    /**
     * What {@link #reserve} would decide for {@code tokens} tokens with no limit on the wait, without
     * committing anything: {@code waitTicks} is the time until the tokens are available.
     */
    public static Decision peek(long tat, long now, long tokens, Limit limit) {
        long debt = debt(tat, now);
        long wait = Math.max(0, debt + limit.cost(tokens) - limit.burst());
        return new Decision(wait == 0, wait, available(debt, limit), tat);
    }

    /**
     * Gives {@code tokens} tokens back: moves {@code tat} back by {@code tokens × T}, never before {@code now}. A
     * bucket cannot hold more than its capacity, so any number of tokens may be given back (more than one
     * bucketful too: reservations booked ahead are given back with it); the refund stops at full.
     *
     * @param tokens at least 1
     * @return the new {@code tat}
     * @throws IllegalArgumentException when {@code tokens} is below 1
     */
    public static long refund(long tat, long now, long tokens, Limit limit) {
        if (tokens < 1) {
            throw new IllegalArgumentException("tokens must be at least 1, was " + tokens);
        }
        long debt = debt(tat, now);
        if (debt == 0) {
            return tat;
        }
        // tokens × T is only computed when it is below the debt, so it cannot overflow
        return tokens > debt / limit.interval() ? now : now + (debt - tokens * limit.interval());
    }

    /** Whole tokens available at {@code now} in a bucket whose state is {@code tat}, between 0 and capacity. */
    public static long available(long tat, long now, Limit limit) {
        return available(debt(tat, now), limit);
    }

    private static long available(long debt, Limit limit) {
        return Math.max(0, (limit.burst() - debt) / limit.interval());
    }

    /** True when a bucket with state {@code tat} is full at {@code now}, so its state can be dropped. */
    public static boolean isFull(long tat, long now) {
        return tat - now <= 0;
    }

    /**
     * Makes a bucket unavailable for {@code penaltyTicks}: no token until {@code now + penaltyTicks}, then one,
     * then one per interval (the bucket refills from empty). A longer debt already owed is kept. A penalty
     * longer than {@link #MAX_WAIT_TICKS} counts as that long.
     *
     * @return the new {@code tat}
     * @throws IllegalArgumentException when {@code penaltyTicks} is negative
     */
    public static long penalize(long tat, long now, long penaltyTicks, Limit limit) {
        if (penaltyTicks < 0) {
            throw new IllegalArgumentException("penalty must not be negative, was " + penaltyTicks);
        }
        long penalty = Math.min(penaltyTicks, MAX_WAIT_TICKS);
        long debt = Math.max(debt(tat, now), penalty + limit.burst() - limit.interval());
        return now + debt;
    }

    // ---- several limits per bucket: the same steps for each limit, decided together -----------------------

    /**
     * The state of a bucket with {@code limits.size()} limits from a stored state that may hold another number
     * of entries (its limits were changed): entries are matched by position, a missing one is a full limit.
     */
    public static long[] align(long[] tats, long now, Limits limits) {
        long[] aligned = new long[limits.size()];
        for (int i = 0; i < aligned.length; i++) {
            aligned[i] = tats != null && i < tats.length ? tats[i] : now;
        }
        return aligned;
    }

    /**
     * Reserves {@code tokens} on every limit at once: the wait is the latest of the limits' waits, and a
     * refusal changes no limit. With one limit this is {@link #reserve(long, long, long, Limit, long)}.
     *
     * @param tats one state per limit ({@link #align})
     */
    public static MultiDecision reserve(long[] tats, long now, long tokens, Limits limits, long maxWait) {
        long[] next = new long[tats.length];
        long wait = 0;
        for (int i = 0; i < tats.length; i++) {
            Limit limit = limits.get(i);
            long newDebt = debt(tats[i], now) + limit.cost(tokens);
            next[i] = now + newDebt;
            wait = Math.max(wait, newDebt - limit.burst());
        }
        if (wait > Math.min(maxWait, MAX_WAIT_TICKS)) {
            return new MultiDecision(false, wait, available(tats, now, limits), tats);
        }
        return new MultiDecision(true, wait, available(next, now, limits), next);
    }

    /** {@link #peek(long, long, long, Limit)} for several limits. */
    public static MultiDecision peek(long[] tats, long now, long tokens, Limits limits) {
        long wait = 0;
        for (int i = 0; i < tats.length; i++) {
            Limit limit = limits.get(i);
            wait = Math.max(wait, debt(tats[i], now) + limit.cost(tokens) - limit.burst());
        }
        return new MultiDecision(wait == 0, wait, available(tats, now, limits), tats);
    }

    /** {@link #refund(long, long, long, Limit)} on every limit. */
    public static long[] refund(long[] tats, long now, long tokens, Limits limits) {
        long[] next = new long[tats.length];
        for (int i = 0; i < tats.length; i++) {
            next[i] = refund(tats[i], now, tokens, limits.get(i));
        }
        return next;
    }

    /** {@link #penalize(long, long, long, Limit)} on every limit. */
    public static long[] penalize(long[] tats, long now, long penaltyTicks, Limits limits) {
        long[] next = new long[tats.length];
        for (int i = 0; i < tats.length; i++) {
            next[i] = penalize(tats[i], now, penaltyTicks, limits.get(i));
        }
        return next;
    }

    /** The fewest whole tokens any limit has at {@code now}. */
    public static long available(long[] tats, long now, Limits limits) {
        long fewest = Long.MAX_VALUE;
        for (int i = 0; i < tats.length; i++) {
            fewest = Math.min(fewest, available(tats[i], now, limits.get(i)));
        }
        return fewest;
    }

    /** True when every limit is full at {@code now}. */
    public static boolean isFull(long[] tats, long now) {
        for (long tat : tats) {
            if (!isFull(tat, now)) {
                return false;
            }
        }
        return true;
    }
}
