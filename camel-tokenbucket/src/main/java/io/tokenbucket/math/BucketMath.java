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
 */
public final class BucketMath {

    /** The {@code maxWait} that accepts any wait. */
    public static final long NO_LIMIT = Long.MAX_VALUE;

    private BucketMath() {
    }

    /**
     * Reserves {@code tokens} tokens at {@code now}.
     *
     * @param tat     the bucket's state ({@code tat}); any value {@code <= now} means a full bucket
     * @param now     the current time in ticks
     * @param tokens  the cost, between 1 and the capacity
     * @param limit   the bucket's limit
     * @param maxWait the longest wait, in ticks, the caller accepts: 0 never waits, {@link #NO_LIMIT} waits
     *                for as long as it takes
     * @return the decision; when refused, its {@code tat} is the unchanged input
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above the capacity
     */
    public static Decision reserve(long tat, long now, long tokens, Limit limit, long maxWait) {
        long cost = limit.cost(tokens);
        long newTat = Math.max(tat, now) + cost;
        long wait = Math.max(0, newTat - limit.burst() - now);
        if (wait > maxWait) {
            return new Decision(false, wait, available(tat, now, limit), tat);
        }
        return new Decision(true, wait, available(newTat, now, limit), newTat);
    }

    /**
     * What {@link #reserve} would decide for {@code tokens} tokens with no limit on the wait, without
     * committing anything: {@code waitTicks} is the time until the tokens are available.
     */
    public static Decision peek(long tat, long now, long tokens, Limit limit) {
        Decision d = reserve(tat, now, tokens, limit, NO_LIMIT);
        return new Decision(d.waitTicks() == 0, d.waitTicks(), available(tat, now, limit), tat);
    }

    /**
     * Gives {@code tokens} tokens back: moves {@code tat} back by {@code tokens × T}, never before {@code now}
     * (a bucket cannot hold more than its capacity).
     *
     * @return the new {@code tat}
     */
    public static long refund(long tat, long now, long tokens, Limit limit) {
        if (tokens < 1) {
            throw new IllegalArgumentException("tokens must be at least 1, was " + tokens);
        }
        if (tat <= now) {
            return tat;
        }
        long back = Math.min(tokens, limit.capacity()) * limit.interval();
        return Math.max(now, tat - back);
    }

    /** Whole tokens available at {@code now} in a bucket whose state is {@code tat}, between 0 and capacity. */
    public static long available(long tat, long now, Limit limit) {
        long debt = Math.max(0, tat - now);
        return Math.max(0, (limit.burst() - debt) / limit.interval());
    }

    /** True when a bucket with state {@code tat} is full at {@code now}, so its state can be dropped. */
    public static boolean isFull(long tat, long now) {
        return tat <= now;
    }

    /**
     * Makes a bucket unavailable for {@code penaltyTicks}: no token until {@code now + penaltyTicks}, then one,
     * then one per interval (the bucket refills from empty). A longer debt already owed is kept.
     *
     * @return the new {@code tat}
     */
    public static long penalize(long tat, long now, long penaltyTicks, Limit limit) {
        if (penaltyTicks < 0) {
            throw new IllegalArgumentException("penalty must not be negative, was " + penaltyTicks);
        }
        return Math.max(tat, now + penaltyTicks + limit.burst() - limit.interval());
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
            next[i] = Math.max(tats[i], now) + limit.cost(tokens);
            wait = Math.max(wait, Math.max(0, next[i] - limit.burst() - now));
        }
        if (wait > maxWait) {
            return new MultiDecision(false, wait, available(tats, now, limits), tats);
        }
        return new MultiDecision(true, wait, available(next, now, limits), next);
    }

    /** {@link #peek(long, long, long, Limit)} for several limits. */
    public static MultiDecision peek(long[] tats, long now, long tokens, Limits limits) {
        MultiDecision d = reserve(tats, now, tokens, limits, NO_LIMIT);
        return new MultiDecision(d.waitTicks() == 0, d.waitTicks(), available(tats, now, limits), tats);
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
            if (tat > now) {
                return false;
            }
        }
        return true;
    }
}
