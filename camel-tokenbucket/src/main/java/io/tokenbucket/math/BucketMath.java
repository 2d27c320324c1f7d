package io.tokenbucket.math;

import static io.tokenbucket.math.Waiter.full;
import static io.tokenbucket.math.Waiter.queued;

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
 * <p>Every operation is one function, {@link #decide}: time is a parameter in ticks, and it answers one
 * {@link Outcome} and the states to store. A bucket of several limits ({@link Limits}) has one {@code tat} per
 * limit, decided together, and so do several keys: a limit of a key and a key of a step are charged alike. One
 * limit's own functions ({@link Limit#refund}, {@link Limit#penalize}, {@link Limit#available}) are the parts each
 * limit's step is made of.
 *
 * <p><b>Several keys (or limits) at once</b> ({@link Step}): an exchange that needs tokens of several buckets (its
 * proxy's and its target host's) is charged on all of them in one step or on none. Its wait {@code W} is the
 * longest of the keys' own waits, and every key is charged <em>at the common release instant</em>
 * {@code R = now + W}: {@code newTat = max(tat, R) + n*T} on each limit of each key (and so on each limit of
 * one key: a limit that would have its token sooner is charged at {@code R} too, as the exchange uses it then). Charging each key from its own
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
 * <p><b>No overflow, whatever the input.</b> Every step works on the <em>debt</em> {@code tat - now} ({@link #debt}),
 * never on clock readings added together, so any {@code now} (a nanosecond clock may be anywhere in a {@code long},
 * and wraps) and any stored {@code tat} give an exact answer. With the debt bounded by {@link #MAX_DEBT_TICKS} and
 * waits by {@link #MAX_WAIT_TICKS} every sum below stays under {@code Long.MAX_VALUE}: a long wait never wraps into
 * an admission.
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
     * The one step: every operation on every shape of keys ({@link Step}) decided the same way, at each key's current
     * rate. This Javadoc is the specification {@code bucket.lua} mirrors, step by step.
     *
     * <p>Key {@code i} has configured limits {@code L[i]} ({@code step.limits()}), states {@code tats[i]} (one
     * {@code tat} per limit, {@link #align aligned}) and a stored rate state {@code rates[i]} (null: none).
     * <ol>
     * <li><b>Rates.</b> For each key whose limits adapt: its rate {@code r[i]} = {@link AdaptiveMath#current} of the
     *     stored one, and its limits at that rate {@code M[i]} = {@link AdaptiveMath#scaled}{@code (L[i], r[i])}.
     *     A key of fixed limits: {@code M[i] = L[i]}, and its stored rate state (if any) is left as it is.</li>
     * <li><b>The operation's change</b>, on every key of the step:
     *     {@link Step.Op#REMOVE}: each key's {@code tat}s become {@code now} (full) and its rate state none; answer
     *     granted, no wait, the first key's smallest capacity remaining, done.
     *     {@link Step.Op#REFUND}: {@code tats[i] = }{@link #refund}{@code (tats[i], amount)} on {@code M[i]}; answer
     *     granted, no wait, the fewest tokens of any key remaining ({@link #available} on {@code M[i]}), done.
     *     {@link Step.Op#PENALIZE}: {@code tats[i] = }{@link #penalize}{@code (tats[i], amount)} on {@code M[i]}.
     *     {@link Step.Op#THROTTLE}: {@code after = }{@link AdaptiveMath#cut}{@code (r[i])} (measured on
     *     {@link AdaptiveMath#sustainedInterval}{@code (L[i])}); unless the cut holds
     *     ({@code after} is {@code r[i]}): {@code r[i] = after}, {@code M[i]} rescaled to it,
     *     {@code tats[i] = }{@link AdaptiveMath#emptied}{@code (tats[i], M[i])}, and the answer says {@code cut}.
     *     The others change nothing here.</li>
     * <li><b>The choice.</b> {@code n} is {@code amount} for RESERVE and PEEK, 1 otherwise. A key's wait is the
     *     longest over its limits of {@code max(0, debt + n*T - C*T)}, its tokens the fewest of
     *     {@code (C*T - debt) / T} (at least 0), on {@code M[i]}. The shared keys' wait {@code Ws} is the longest of
     *     theirs, their tokens {@code As} the fewest. Group {@code c}'s wait is the longest of {@code Ws} and its
     *     keys' waits, its tokens the fewest of its keys'. The group chosen has the shortest wait; of equals, the
     *     most tokens; then the first. {@code W} is its wait, {@code A = min(its tokens, As)}.</li>
     * <li><b>Answers without a charge.</b> Every operation but RESERVE answers
     *     {@code granted = (W == 0)}, {@code W}, {@code A}, and stores what step 2 changed.
     *     RESERVE with {@code W > min(maxWait, MAX_WAIT)}: refused, {@code W}, {@code A}, nothing stored.</li>
     * <li><b>The charge</b> (RESERVE granted): every key of the chosen group and every shared key is charged at the
     *     common release instant {@code R = now + W}: on each limit {@code tat = now + max(debt, W) + n*T} (see the
     *     class comment); each such key whose limits adapt earns credit, {@code r[i] = }{@link AdaptiveMath#earn}
     *     {@code (r[i], n)}, and stores it. Answer granted, {@code W}, and the fewest tokens of the charged keys
     *     after the charge.</li>
     * </ol>
     * Every answer names the chosen group and the rate of its first key after the step ({@link Outcome}). A rate
     * state equal to {@link Adaptive#fresh()} is stored as none (null). For one key of one limit this is exactly
     * the reservation of the class comment.
     *
     * <p>Keys may hold in-flight slots: {@code slots[i]} is the number key {@code i} holds. The steps above change:
     * <ul>
     * <li>{@link Step.Op#RELEASE} (step 2): every key holding a slot gives one back, {@code slots[i] - 1}.
     *     {@link Step.Op#REMOVE} leaves the slots as they are: they belong to exchanges still running.</li>
     * <li>The choice (step 3): a key with an in-flight limit {@code N} ({@link Limits#inFlight()}) is <em>full</em>
     *     when {@code slots[i] >= N}, and its tokens count at most its free slots {@code N - slots[i]}. A group is
     *     full when one of its keys or a shared key is; a group that is not full is always chosen over one that is.
     *     When every group is full the answer says {@code slotless}, and a RESERVE is refused, whatever its wait.</li>
     * <li>The charge (step 5): each charged key with an in-flight limit takes a slot, {@code slots[i] + 1}.</li>
     * </ul>
     * A slot is one per reservation, whatever its tokens, and it is held from the grant, through the wait, until the
     * release: a key never has more than {@code N} reservations between their grants and their releases.
     *
     * <p>Keys with an in-flight limit may hold the waiters' tickets ({@link Waiter}): {@code tickets[i]}, ids in
     * arrival order. Then:
     * <ul>
     * <li>The choice: a key is full when {@code slots[i]} plus the tickets {@link Waiter#full ahead} of the waiter's own reach
     *     {@code N}.</li>
     * <li>A RESERVE refused because every group is full, that accepts a wait ({@code maxWait > 0}), of a waiter that
     *     takes a ticket: on every key with an in-flight limit, its ticket kept at its place, or placed last
     *     ({@link Waiter#queued}).</li>
     * <li>A RESERVE granted: its ticket goes from every key with an in-flight limit, charged or not. A RELEASE: its
     *     ticket goes from every key (it waits no more), and a key where it held one gives back no slot (it took
     *     none there).</li>
     * </ul>
     * How long a ticket or a slot lives unless renewed is the store's: a store decides on the live ones.
     *
     * @param step     the operation, its keys' layout and limits, the amount and the longest wait
     * @param nowTicks the current time in ticks, anywhere in the range of a {@code long}
     * @param tats     in: each key's states ({@link #align}); out: the states to store. An entry the step does not
     *                 change is left as the very array given, so a caller can tell by identity what to write
     * @param rates    in: each key's stored rate state, null for none; out: the rate state to store (null: none),
     *                 an entry the step does not change left as given
     * @param slots    in: each key's held slots (0 for none); out: the counts to store
     * @param tickets  in: each key's waiters' tickets in arrival order (an entry null: none; null: no key has any);
     *                 out: the tickets to store, an entry the step does not change left as the very array given (a
     *                 changed one holds the waiter's ticket renewed when it holds it)
     * @param waiter   the reservation's place among the waiters; null for none (a peek): every ticket is ahead
     * @return the answer
     */
    public static Outcome decide(Step step, long nowTicks, long[][] tats, RateState[] rates, long[] slots,
                                 String[][] tickets, Waiter waiter) {
        int keys = step.keys();
        String[][] queues = tickets != null ? tickets : new String[keys][];
        Limits[] at = new Limits[keys];
        RateState[] rate = new RateState[keys];
        for (int i = 0; i < keys; i++) { // 1. rates
            Limits configured = step.limits().get(i);
            Adaptive adaptive = configured.adaptive();
            rate[i] = adaptive == null ? null : AdaptiveMath.current(rates[i], tats[i], nowTicks, adaptive);
            at[i] = adaptive == null ? configured : AdaptiveMath.scaled(configured, rate[i].factorPpm());
        }
        boolean cut = false;
        switch (step.op()) { // 2. the operation's change
            case REMOVE -> {
                for (int i = 0; i < keys; i++) {
                    tats[i] = align(null, nowTicks, at[i]);
                    rates[i] = null;
                }
                return Outcome.granted(at[0].capacity());
            }
            case RELEASE -> {
                for (int i = 0; i < keys; i++) { // a waiter holds no slot where it holds a ticket
                    String[] before = queues[i];
                    queues[i] = waiter == null ? before : queued(before, waiter.id(), false);
                    slots[i] = queues[i] != before ? slots[i] : Math.max(0, slots[i] - 1);
                }
            }
            case REFUND -> {
                long fewest = Long.MAX_VALUE;
                for (int i = 0; i < keys; i++) {
                    tats[i] = refund(tats[i], nowTicks, step.amount(), at[i]);
                    fewest = Math.min(fewest, available(tats[i], nowTicks, at[i], slots[i]));
                }
                return outcome(true, 0, 0, fewest, rate[0], false, false, nowTicks);
            }
            case PENALIZE -> {
                for (int i = 0; i < keys; i++) {
                    tats[i] = penalize(tats[i], nowTicks, step.amount(), at[i]);
                }
            }
            case THROTTLE -> {
                for (int i = 0; i < keys; i++) {
                    Limits configured = step.limits().get(i);
                    RateState after = AdaptiveMath.cut(rate[i], nowTicks, configured.adaptive(),
                            AdaptiveMath.sustainedInterval(configured));
                    if (after != rate[i]) {
                        rate[i] = after;
                        rates[i] = storable(after, configured.adaptive());
                        at[i] = AdaptiveMath.scaled(configured, after.factorPpm());
                        tats[i] = AdaptiveMath.emptied(tats[i], nowTicks, at[i]);
                        cut = true;
                    }
                }
            }
            default -> { }
        }
        long tokens = step.op() == Step.Op.RESERVE || step.op() == Step.Op.PEEK ? step.amount() : 1;
        int shared = step.shared(); // 3. the choice
        long sharedWait = 0;
        long sharedAvailable = Long.MAX_VALUE;
        boolean sharedFull = false;
        for (int i = shared; i < keys; i++) {
            sharedWait = Math.max(sharedWait, waitOf(tats[i], nowTicks, tokens, at[i]));
            sharedAvailable = Math.min(sharedAvailable, available(tats[i], nowTicks, at[i], slots[i]));
            sharedFull |= full(at[i], slots[i], queues[i], waiter);
        }
        int best = 0;
        int bestFirst = 0;
        boolean bestFull = true;
        long bestWait = Long.MAX_VALUE;
        long bestAvailable = -1;
        for (int c = 0, first = 0; c < step.groups().length; first += step.groups()[c], c++) {
            long wait = sharedWait;
            long fewest = Long.MAX_VALUE;
            boolean full = sharedFull;
            for (int i = first; i < first + step.groups()[c]; i++) {
                wait = Math.max(wait, waitOf(tats[i], nowTicks, tokens, at[i]));
                fewest = Math.min(fewest, available(tats[i], nowTicks, at[i], slots[i]));
                full |= full(at[i], slots[i], queues[i], waiter);
            }
            if (c == 0 || bestFull && !full
                    || full == bestFull && (wait < bestWait || wait == bestWait && fewest > bestAvailable)) {
                best = c;
                bestFirst = first;
                bestFull = full;
                bestWait = wait;
                bestAvailable = fewest;
            }
        }
        long remaining = Math.min(bestAvailable, sharedAvailable);
        if (step.op() != Step.Op.RESERVE) { // 4. answers without a charge
            return outcome(bestWait == 0 && !bestFull, best, bestWait, remaining, rate[bestFirst], cut, bestFull, nowTicks);
        }
        if (bestFull || bestWait > Math.min(step.maxWaitTicks(), MAX_WAIT_TICKS)) {
            if (bestFull && step.maxWaitTicks() > 0 && waiter != null && waiter.ticket()) {
                for (int i = 0; i < keys; i++) { // on every key, full or not: two waiters stand in one order on each
                    if (at[i].inFlight() > 0) {
                        queues[i] = queued(queues[i], waiter.id(), true);
                    }
                }
            }
            return outcome(false, best, bestWait, remaining, rate[bestFirst], false, bestFull, nowTicks);
        }
        remaining = Long.MAX_VALUE; // 5. the charge
        for (int i = 0; i < keys && waiter != null; i++) { // its tickets go, on the keys not charged too
            if (at[i].inFlight() > 0) {
                queues[i] = queued(queues[i], waiter.id(), false);
            }
        }
        for (int i = bestFirst; i < keys; i = i + 1 == bestFirst + step.groups()[best] ? shared : i + 1) {
            long[] next = new long[tats[i].length];
            for (int l = 0; l < next.length; l++) {
                next[l] = nowTicks + Math.max(debt(tats[i][l], nowTicks), bestWait) + at[i].get(l).cost(tokens);
            }
            tats[i] = next;
            if (at[i].inFlight() > 0) {
                slots[i]++;
            }
            remaining = Math.min(remaining, available(next, nowTicks, at[i], slots[i]));
            Adaptive adaptive = step.limits().get(i).adaptive();
            if (adaptive != null) {
                rate[i] = AdaptiveMath.earn(rate[i], tokens, Adaptive.stepTokens(step.limits().get(i)), nowTicks,
                        adaptive);
                rates[i] = storable(rate[i], adaptive);
            }
        }
        return outcome(true, best, bestWait, remaining, rate[bestFirst], false, false, nowTicks);
    }

    /**
     * The one step without waiters' tickets: {@link #decide(Step, long, long[][], RateState[], long[], String[][],
     * Waiter)} with none.
     */
    public static Outcome decide(Step step, long nowTicks, long[][] tats, RateState[] rates, long[] slots) {
        return decide(step, nowTicks, tats, rates, slots, null, null);
    }

    /** {@link #available(long[], long, Limits)}, at most the free in-flight slots of a key with an in-flight limit. */
    private static long available(long[] tatTicks, long nowTicks, Limits limits, long slots) {
        long tokens = available(tatTicks, nowTicks, limits);
        return limits.inFlight() == 0 ? tokens : Math.min(tokens, Math.max(0, limits.inFlight() - slots));
    }

    /** The wait of one key for {@code tokens}: the longest over its limits of {@code max(0, debt + n*T - C*T)}. */
    private static long waitOf(long[] tatTicks, long nowTicks, long tokens, Limits limits) {
        long waitTicks = 0;
        for (int l = 0; l < tatTicks.length; l++) {
            Limit limit = limits.get(l);
            waitTicks = Math.max(waitTicks, debt(tatTicks[l], nowTicks) + limit.cost(tokens) - limit.burst());
        }
        return waitTicks;
    }

    private static Outcome outcome(boolean granted, int chosen, long waitTicks, long remaining, RateState rate,
                                   boolean cut, boolean slotless, long nowTicks) {
        return rate == null
                ? new Outcome(granted, chosen, waitTicks, remaining, Adaptive.PPM, false, cut, slotless, nowTicks)
                : new Outcome(granted, chosen, waitTicks, remaining, rate.factorPpm(), rate.starting(), cut, slotless,
                        nowTicks);
    }

    /** The rate state to store: none (null) for the fresh one, so idle keys cost nothing. */
    private static RateState storable(RateState rate, Adaptive adaptive) {
        return adaptive.isFresh(rate) ? null : rate;
    }

    /** {@link Limit#refund} on every limit. */
    public static long[] refund(long[] tatTicks, long nowTicks, long tokens, Limits limits) {
        long[] next = new long[tatTicks.length];
        for (int i = 0; i < tatTicks.length; i++) {
            next[i] = limits.get(i).refund(tatTicks[i], nowTicks, tokens);
        }
        return next;
    }

    /** {@link Limit#penalize} on every limit. */
    public static long[] penalize(long[] tatTicks, long nowTicks, long penaltyTicks, Limits limits) {
        long[] next = new long[tatTicks.length];
        for (int i = 0; i < tatTicks.length; i++) {
            next[i] = limits.get(i).penalize(tatTicks[i], nowTicks, penaltyTicks);
        }
        return next;
    }

    /** The fewest whole tokens any limit has at {@code nowTicks}. */
    public static long available(long[] tatTicks, long nowTicks, Limits limits) {
        long fewest = Long.MAX_VALUE;
        for (int i = 0; i < tatTicks.length; i++) {
            fewest = Math.min(fewest, limits.get(i).available(tatTicks[i], nowTicks));
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

    /** True when a limit with state {@code tatTicks} is full at {@code nowTicks}, so its state can be dropped. */
    public static boolean isFull(long tatTicks, long nowTicks) {
        return tatTicks - nowTicks <= 0;
    }
}
