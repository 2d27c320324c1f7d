package io.tokenbucket.math;

import java.util.ArrayList;
import java.util.List;

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
 * <p>All functions are pure: time is a parameter in ticks, the result is the state to store. A bucket of several
 * limits ({@link Limits}) has one {@code tat} per limit, decided together; every decision, for one limit or
 * several, is one {@link Decision}. The one-limit functions are the step each limit takes, and a store's fast
 * path for a bucket it keeps as a single number.
 *
 * <p><b>Several keys at once</b> ({@link #reserveAll}): an exchange that needs tokens of several buckets (its
 * proxy's and its target host's) is charged on all of them in one step or on none. Its wait {@code W} is the
 * longest of the keys' own waits, and every key is charged <em>at the common release instant</em>
 * {@code R = now + W}: {@code newTat = max(tat, R) + n*T} on each limit of each key. Charging each key from its own
 * base instead ({@code max(tat, now) + n*T}) would hand out a key's token at its own, earlier slot while the
 * exchange uses it only at {@code R}; several such exchanges delayed by other keys would then all reach that key
 * at once, more than {@code C + d/T} in a window. Charged at {@code R}, every reservation on a key (single or
 * all-of) is released no earlier than its slot ({@code newTat - C*T}) and no later than its base
 * ({@code newTat - n*T}); bases never overlap, so the tokens released on a key in any window of length {@code d}
 * are at most {@code C + d/T}, exactly. For the key whose wait is the longest, {@code max(tat, R) = max(tat, now)}
 * (its wait comes from its own debt), so that key is charged as a single reservation would be, and waiters on it
 * stay in reservation order (FIFO); on the other keys the all-of exchange is released at {@code R}, and a later
 * reservation that has those keys' tokens sooner passes it only within their burst. The price: on a key whose
 * own wait is shorter, the time between its own slot and {@code R} beyond its burst goes unused (a bucket's state is
 * one number, which cannot hold a hole), so every later reservation on that key, all-of or not, waits until about
 * {@code R} (head-of-line blocking: a slow host's backlog stalls its fast proxy for other hosts, up to the longest
 * wait accepted); and a refund gives back the {@code n*T} but not that time. A candidate may be a <em>group</em> of
 * keys (a proxy and its (proxy, host) pair): its wait is the longest of its keys', and the chosen group's every key
 * is charged at {@code R} as the shared keys are.
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

    /** The {@code maxWaitTicks} that accepts any wait up to {@link #MAX_WAIT_TICKS}. */
    public static final long NO_LIMIT = Long.MAX_VALUE;

    /**
     * The longest wait, in ticks, ever granted, and the longest penalty: {@code Long.MAX_VALUE / 4} (73 years
     * of nanoseconds). A reservation whose wait would be longer is refused whatever its {@code maxWaitTicks}; a
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
     * The debt of state {@code tatTicks} at {@code nowTicks}: the ticks until the bucket is full again, between 0
     * (full) and {@link #MAX_DEBT_TICKS}. The wrapping difference is exact for any two readings less than 2^63
     * ticks apart, so a clock near {@code Long.MAX_VALUE} or {@code Long.MIN_VALUE} needs no care.
     */
    static long debt(long tatTicks, long nowTicks) {
        long debtTicks = tatTicks - nowTicks;
        return debtTicks <= 0 ? 0 : Math.min(debtTicks, MAX_DEBT_TICKS);
    }

    // ---- a bucket's state is one tat per limit: these steps decide on every limit together ---------------

    /**
     * The state of a bucket with {@code limits.size()} limits from a stored state that may hold another number
     * of entries (its limits were changed), or none (null: a full bucket): entries are matched by position, a
     * missing one is a full limit.
     */
    public static long[] align(long[] tatTicks, long nowTicks, Limits limits) {
        long[] aligned = new long[limits.size()];
        for (int i = 0; i < aligned.length; i++) {
            aligned[i] = tatTicks != null && i < tatTicks.length ? tatTicks[i] : nowTicks;
        }
        return aligned;
    }

    /**
     * Reserves {@code tokens} on every limit at once: the wait is the latest of the limits' waits, and a
     * refusal changes no limit.
     *
     * @param tatTicks     one state per limit ({@link #align}); any value {@code <= nowTicks} is a full limit
     * @param nowTicks     the current time in ticks, anywhere in the range of a {@code long}
     * @param tokens       the cost, between 1 and the smallest capacity
     * @param maxWaitTicks the longest wait the caller accepts: 0 never waits, {@link #NO_LIMIT} waits up to
     *                     {@link #MAX_WAIT_TICKS}
     * @return the decision; when refused, its state is {@code tatTicks} itself
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above a capacity
     */
    public static Decision reserve(long[] tatTicks, long nowTicks, long tokens, Limits limits, long maxWaitTicks) {
        long[] next = new long[tatTicks.length];
        long waitTicks = 0;
        for (int i = 0; i < tatTicks.length; i++) {
            Limit limit = limits.get(i);
            long newDebtTicks = debt(tatTicks[i], nowTicks) + limit.cost(tokens); // at most MAX_DEBT + MAX_BURST
            next[i] = nowTicks + newDebtTicks;
            waitTicks = Math.max(waitTicks, newDebtTicks - limit.burst());
        }
        if (waitTicks > Math.min(maxWaitTicks, MAX_WAIT_TICKS)) {
            return Decision.of(false, waitTicks, available(tatTicks, nowTicks, limits), tatTicks);
        }
        return Decision.of(true, waitTicks, available(next, nowTicks, limits), next);
    }

    /**
     * What {@link #reserve(long[], long, long, Limits, long)} would decide for {@code tokens} tokens with no limit
     * on the wait, without committing anything: {@code waitTicks} is the time until the tokens are available,
     * and the state is {@code tatTicks} itself.
     */
    public static Decision peek(long[] tatTicks, long nowTicks, long tokens, Limits limits) {
        long waitTicks = 0;
        for (int i = 0; i < tatTicks.length; i++) {
            Limit limit = limits.get(i);
            waitTicks = Math.max(waitTicks, debt(tatTicks[i], nowTicks) + limit.cost(tokens) - limit.burst());
        }
        return Decision.of(waitTicks == 0, waitTicks, available(tatTicks, nowTicks, limits), tatTicks);
    }

    /** {@link #refund(long, long, long, Limit)} on every limit. */
    public static long[] refund(long[] tatTicks, long nowTicks, long tokens, Limits limits) {
        long[] next = new long[tatTicks.length];
        for (int i = 0; i < tatTicks.length; i++) {
            next[i] = refund(tatTicks[i], nowTicks, tokens, limits.get(i));
        }
        return next;
    }

    /** {@link #penalize(long, long, long, Limit)} on every limit. */
    public static long[] penalize(long[] tatTicks, long nowTicks, long penaltyTicks, Limits limits) {
        long[] next = new long[tatTicks.length];
        for (int i = 0; i < tatTicks.length; i++) {
            next[i] = penalize(tatTicks[i], nowTicks, penaltyTicks, limits.get(i));
        }
        return next;
    }

    /** The fewest whole tokens any limit has at {@code nowTicks}. */
    public static long available(long[] tatTicks, long nowTicks, Limits limits) {
        long fewest = Long.MAX_VALUE;
        for (int i = 0; i < tatTicks.length; i++) {
            fewest = Math.min(fewest, available(tatTicks[i], nowTicks, limits.get(i)));
        }
        return fewest;
    }

    /** True when every limit is full at {@code nowTicks}, so the state can be dropped. */
    public static boolean isFull(long[] tatTicks, long nowTicks) {
        for (long limitTatTicks : tatTicks) {
            if (!isFull(limitTatTicks, nowTicks)) {
                return false;
            }
        }
        return true;
    }

    // ---- several keys at once: candidates and shared keys, charged at one release instant ------------------

    /**
     * Reserves {@code tokens} on one of the candidates and on every shared key at once, charging each at the common
     * release instant (see the class comment): the candidate chosen is the one whose wait, together with the shared
     * keys', is shortest (of equals, the one with the most tokens, then the first); a refusal changes no key. This
     * is {@link #reserveAll(long[][][], List, long[][], List, long, long, long)} with a group of one key per candidate.
     *
     * @param candidateTats  each candidate's states, one per limit ({@link #align}), at least one candidate
     * @param candidateLimits each candidate's limits, in the same order
     * @param sharedTats     each shared key's states; may be empty (then this is a choice among the candidates)
     * @param sharedLimits   each shared key's limits, in the same order
     * @param nowTicks       the current time in ticks, anywhere in the range of a {@code long}
     * @param tokens         the cost, between 1 and the smallest capacity of every key
     * @param maxWaitTicks   as for {@link #reserve(long[], long, long, Limits, long)}
     * @throws IllegalArgumentException when there is no candidate, or {@code tokens} is below 1 or above a capacity
     */
    public static AllOfDecision reserveAll(long[][] candidateTats, List<Limits> candidateLimits,
                                           long[][] sharedTats, List<Limits> sharedLimits, long nowTicks,
                                           long tokens, long maxWaitTicks) {
        long[][][] groups = new long[candidateTats.length][][];
        List<List<Limits>> groupLimits = new ArrayList<>(candidateTats.length);
        for (int c = 0; c < groups.length; c++) {
            groups[c] = new long[][] {candidateTats[c]};
            groupLimits.add(List.of(candidateLimits.get(c)));
        }
        return reserveAll(groups, groupLimits, sharedTats, sharedLimits, nowTicks, tokens, maxWaitTicks);
    }

    /**
     * Reserves {@code tokens} on one candidate <em>group</em> and on every shared key at once, each key charged at
     * the common release instant (see the class comment). A group is a candidate key and the keys charged with it
     * (a proxy's bucket and its (proxy, host) pair's): a group's wait is the longest of its keys' and the shared
     * keys' waits, its tokens the fewest of its keys'; the group chosen is the one whose wait is shortest (of
     * equals, the one with the most tokens, then the first). Every key of the chosen group and every shared key is
     * charged, or, when refused, none.
     *
     * @param groupTats    for each candidate, the states of its group's keys, the candidate key first; at least one
     *                     candidate, each group at least one key
     * @param groupLimits  the limits of each group's keys, in the same order
     * @param sharedTats   each shared key's states; may be empty
     * @param sharedLimits each shared key's limits, in the same order
     * @param nowTicks     the current time in ticks, anywhere in the range of a {@code long}
     * @param tokens       the cost, between 1 and the smallest capacity of every key
     * @param maxWaitTicks as for {@link #reserve(long[], long, long, Limits, long)}
     * @return the decision; its states are the chosen group's keys in order, then the shared keys
     * @throws IllegalArgumentException when there is no candidate or an empty group, or {@code tokens} is below 1 or
     *                                  above a capacity
     */
    public static AllOfDecision reserveAll(long[][][] groupTats, List<List<Limits>> groupLimits,
                                           long[][] sharedTats, List<Limits> sharedLimits, long nowTicks,
                                           long tokens, long maxWaitTicks) {
        if (groupTats.length == 0) {
            throw new IllegalArgumentException("an all-of reservation needs at least one candidate key");
        }
        long sharedWaitTicks = 0;
        long sharedAvailable = Long.MAX_VALUE;
        for (int j = 0; j < sharedTats.length; j++) {
            sharedWaitTicks = Math.max(sharedWaitTicks, peek(sharedTats[j], nowTicks, tokens, sharedLimits.get(j))
                    .waitTicks());
            sharedAvailable = Math.min(sharedAvailable, available(sharedTats[j], nowTicks, sharedLimits.get(j)));
        }
        int best = -1;
        long bestWaitTicks = Long.MAX_VALUE;
        long bestAvailable = -1;
        for (int c = 0; c < groupTats.length; c++) {
            if (groupTats[c].length == 0) {
                throw new IllegalArgumentException("candidate " + c + " of an all-of reservation has no key");
            }
            long waitTicks = sharedWaitTicks;
            long a = Long.MAX_VALUE;
            for (int g = 0; g < groupTats[c].length; g++) {
                Limits limits = groupLimits.get(c).get(g);
                waitTicks = Math.max(waitTicks, peek(groupTats[c][g], nowTicks, tokens, limits).waitTicks());
                a = Math.min(a, available(groupTats[c][g], nowTicks, limits));
            }
            if (waitTicks < bestWaitTicks || waitTicks == bestWaitTicks && a > bestAvailable) {
                best = c;
                bestWaitTicks = waitTicks;
                bestAvailable = a;
            }
        }
        long[][] group = groupTats[best];
        List<Limits> limitsOfGroup = groupLimits.get(best);
        long[][] states = new long[group.length + sharedTats.length][];
        if (bestWaitTicks > Math.min(maxWaitTicks, MAX_WAIT_TICKS)) {
            System.arraycopy(group, 0, states, 0, group.length);
            System.arraycopy(sharedTats, 0, states, group.length, sharedTats.length);
            return new AllOfDecision(best, false, bestWaitTicks, Math.min(bestAvailable, sharedAvailable), states);
        }
        long remaining = Long.MAX_VALUE;
        for (int i = 0; i < states.length; i++) {
            boolean inGroup = i < group.length;
            Limits limits = inGroup ? limitsOfGroup.get(i) : sharedLimits.get(i - group.length);
            states[i] = reserveAt(inGroup ? group[i] : sharedTats[i - group.length], nowTicks, tokens, limits,
                    bestWaitTicks);
            remaining = Math.min(remaining, available(states[i], nowTicks, limits));
        }
        return new AllOfDecision(best, true, bestWaitTicks, remaining, states);
    }

    /**
     * The states of one key charged {@code tokens} at the release instant {@code nowTicks + waitTicks}:
     * {@code max(tat, now + wait) + n*T} on each limit, in debts so nothing overflows ({@code waitTicks} is at most
     * {@link #MAX_WAIT_TICKS}, and at least the key's own wait, so the new debt is at most the wait plus a burst).
     */
    static long[] reserveAt(long[] tatTicks, long nowTicks, long tokens, Limits limits, long waitTicks) {
        long[] next = new long[tatTicks.length];
        for (int i = 0; i < tatTicks.length; i++) {
            next[i] = nowTicks + Math.max(debt(tatTicks[i], nowTicks), waitTicks) + limits.get(i).cost(tokens);
        }
        return next;
    }

    // ---- one limit: the step of each limit above, and the one-limit reservation stores take as a fast path ----

    /**
     * {@link #reserve(long[], long, long, Limits, long)} for a bucket of one limit, without a {@link Limits}: the
     * same decision (a state of one entry), for callers that keep one limit's state as a single number.
     *
     * @throws IllegalArgumentException when {@code tokens} is below 1 or above the capacity
     */
    public static Decision reserve(long tatTicks, long nowTicks, long tokens, Limit limit, long maxWaitTicks) {
        long costTicks = limit.cost(tokens);
        long debtTicks = debt(tatTicks, nowTicks);
        long newDebtTicks = debtTicks + costTicks; // at most MAX_DEBT_TICKS + MAX_BURST_TICKS: no overflow
        long waitTicks = Math.max(0, newDebtTicks - limit.burst());
        if (waitTicks > Math.min(maxWaitTicks, MAX_WAIT_TICKS)) {
            return Decision.ofOne(false, waitTicks, available(debtTicks, limit), tatTicks);
        }
        return Decision.ofOne(true, waitTicks, available(newDebtTicks, limit), nowTicks + newDebtTicks);
    }

    /** {@link #peek(long[], long, long, Limits)} for a bucket of one limit. */
    public static Decision peek(long tatTicks, long nowTicks, long tokens, Limit limit) {
        long debtTicks = debt(tatTicks, nowTicks);
        long waitTicks = Math.max(0, debtTicks + limit.cost(tokens) - limit.burst());
        return Decision.ofOne(waitTicks == 0, waitTicks, available(debtTicks, limit), tatTicks);
    }

    /**
     * Gives {@code tokens} tokens back: moves the state back by {@code tokens × T}, never before
     * {@code nowTicks}. A bucket cannot hold more than its capacity, so any number of tokens may be given back
     * (more than one bucketful too: reservations booked ahead are given back with it); the refund stops at full.
     *
     * @param tokens at least 1
     * @return the new state, in ticks
     * @throws IllegalArgumentException when {@code tokens} is below 1
     */
    public static long refund(long tatTicks, long nowTicks, long tokens, Limit limit) {
        if (tokens < 1) {
            throw new IllegalArgumentException("tokens must be at least 1, was " + tokens);
        }
        long debtTicks = debt(tatTicks, nowTicks);
        if (debtTicks == 0) {
            return tatTicks;
        }
        // tokens × T is only computed when it is below the debt, so it cannot overflow
        return tokens > debtTicks / limit.interval() ? nowTicks : nowTicks + (debtTicks - tokens * limit.interval());
    }

    /** Whole tokens available at {@code nowTicks} in a bucket of state {@code tatTicks}, between 0 and capacity. */
    public static long available(long tatTicks, long nowTicks, Limit limit) {
        return available(debt(tatTicks, nowTicks), limit);
    }

    private static long available(long debtTicks, Limit limit) {
        return Math.max(0, (limit.burst() - debtTicks) / limit.interval());
    }

    /** True when a limit with state {@code tatTicks} is full at {@code nowTicks}, so its state can be dropped. */
    public static boolean isFull(long tatTicks, long nowTicks) {
        return tatTicks - nowTicks <= 0;
    }

    /**
     * Makes a bucket unavailable for {@code penaltyTicks}: no token until {@code nowTicks + penaltyTicks}, then
     * one, then one per interval (the bucket refills from empty). A longer debt already owed is kept. A penalty
     * longer than {@link #MAX_WAIT_TICKS} counts as that long.
     *
     * @return the new state, in ticks
     * @throws IllegalArgumentException when {@code penaltyTicks} is negative
     */
    public static long penalize(long tatTicks, long nowTicks, long penaltyTicks, Limit limit) {
        if (penaltyTicks < 0) {
            throw new IllegalArgumentException("penalty must not be negative, was " + penaltyTicks);
        }
        long cappedPenaltyTicks = Math.min(penaltyTicks, MAX_WAIT_TICKS);
        long debtTicks = Math.max(debt(tatTicks, nowTicks), cappedPenaltyTicks + limit.burst() - limit.interval());
        return nowTicks + debtTicks;
    }
}
