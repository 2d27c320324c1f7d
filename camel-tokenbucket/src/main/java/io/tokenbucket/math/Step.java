package io.tokenbucket.math;

import java.util.Arrays;
import java.util.List;

/**
 * One step on the buckets of several keys, as data: what {@link BucketMath#decide} decides. The keys come in
 * <em>groups</em>: {@code groups[c]} keys form candidate group {@code c} (in order, group after group), and the
 * keys after the last group are <em>shared</em>, charged whichever group is chosen. Every acquire is a case:
 * <ul>
 * <li>one key: one group of one key, nothing shared ({@link #reserve});</li>
 * <li>the freest of candidates: one group of one key per candidate;</li>
 * <li>all-of keys: one group (the exchange's own key), the all-of keys shared;</li>
 * <li>candidate groups: a group per candidate (the candidate first, then the keys charged with it), and the
 *     all-of keys shared.</li>
 * </ul>
 * A key's {@link Limits} carry an {@link Adaptive} or not; a key without one is decided at its configured rate and
 * keeps no rate state.
 *
 * <p>Instances are validated on creation; the messages name the value. The arrays and lists are kept, not copied.
 *
 * @param op           what the step does
 * @param groups       the size of each candidate group, each at least 1, at least one group
 * @param limits       each key's limits, group after group, then the shared keys
 * @param amount       tokens for {@link Op#RESERVE} and {@link Op#PEEK} (1 to every key's smallest capacity) and
 *                     {@link Op#REFUND} (from 1); the penalty in ticks for {@link Op#PENALIZE} (from 0); 0 otherwise
 * @param maxWaitTicks for {@link Op#RESERVE}: the longest wait accepted, 0 never waits, {@link BucketMath#NO_LIMIT}
 *                     any up to {@link BucketMath#MAX_WAIT_TICKS}; 0 otherwise
 */
public record Step(Op op, int[] groups, List<Limits> limits, long amount, long maxWaitTicks) {

    /** What a step does; each is a case of {@link BucketMath#decide}. */
    public enum Op {
        /**
         * Reserves {@code amount} tokens on the freest group and every shared key, and one in-flight slot on each of
         * those keys that has an in-flight limit, or refuses and changes nothing.
         */
        RESERVE,
        /** What {@code RESERVE} would answer with no limit on the wait, changing nothing. */
        PEEK,
        /** Gives {@code amount} tokens back to every key of the step, never past full. */
        REFUND,
        /** Makes every key unavailable for {@code amount} ticks, then answers as a peek of one token. */
        PENALIZE,
        /** A {@code throttled} signal: cuts every key's rate unless its last cut holds; answers as a peek of one token. */
        THROTTLE,
        /** The current rate, changing nothing; answers as a peek of one token. */
        RATE,
        /** Drops every key's state: each bucket full, no rate state; the in-flight slots held stay held. */
        REMOVE,
        /**
         * Gives back the in-flight slot a granted reservation took on every key of the step (those of the chosen group
         * and the shared keys); a key holding none is left as it is. A waiter's ticket there is withdrawn instead
         * ({@link Waiter}). Answers as a peek of one token.
         */
        RELEASE,
        /**
         * Keeps the in-flight slots a reservation holds from expiring: changes nothing here (a slot held in memory
         * never expires), a store whose slots are leases renews them. Answers as a peek of one token.
         */
        RENEW
    }

    /** The groups and limits checked, and the amount as {@code op} needs it. */
    public Step {
        if (groups.length == 0) {
            throw new IllegalArgumentException("a step needs at least one candidate key");
        }
        int grouped = 0;
        for (int c = 0; c < groups.length; c++) {
            if (groups[c] < 1) {
                throw new IllegalArgumentException("candidate " + c + " of a step has no key");
            }
            grouped += groups[c];
        }
        if (grouped > limits.size()) {
            throw new IllegalArgumentException("a step needs limits for every key: groups " + Arrays.toString(groups)
                    + " name " + grouped + " keys, with " + limits.size() + " limits");
        }
        switch (op) {
            case RESERVE, PEEK -> {
                for (Limits l : limits) {
                    l.checkCost(amount);
                }
            }
            case REFUND -> {
                if (amount < 1) {
                    throw new IllegalArgumentException("tokens must be at least 1, was " + amount);
                }
            }
            case PENALIZE -> {
                if (amount < 0) {
                    throw new IllegalArgumentException("penalty must not be negative, was " + amount);
                }
            }
            case THROTTLE -> limits.forEach(l -> {
                if (l.adaptive() == null) {
                    throw new IllegalArgumentException("a throttled signal needs an adaptive rate (adaptive=true),"
                            + " but limits " + l + " have a fixed one");
                }
            });
            default -> { }
        }
    }

    /** The groups of a step on one key: one group of one key. Shared by every such step, and never changed. */
    private static final int[] ONE_KEY = {1};

    /** A step of one key: {@code op} with {@code amount} and no wait accepted. */
    public static Step of(Op op, Limits limits, long amount) {
        return new Step(op, ONE_KEY, List.of(limits), amount, 0);
    }

    /** A reservation of {@code tokens} on one key, waiting up to {@code maxWaitTicks}. */
    public static Step reserve(Limits limits, long tokens, long maxWaitTicks) {
        return new Step(Op.RESERVE, ONE_KEY, List.of(limits), tokens, maxWaitTicks);
    }

    /** The number of keys: every group's and the shared ones. */
    public int keys() {
        return limits.size();
    }

    /** The index of the first shared key: the number of keys in groups. */
    public int shared() {
        int grouped = 0;
        for (int g : groups) {
            grouped += g;
        }
        return grouped;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Step s && op == s.op && Arrays.equals(groups, s.groups) && limits.equals(s.limits)
                && amount == s.amount && maxWaitTicks == s.maxWaitTicks;
    }

    @Override
    public int hashCode() {
        return op.hashCode() + 31 * Arrays.hashCode(groups) + 961 * limits.hashCode() + Long.hashCode(amount);
    }

    @Override
    public String toString() {
        return "Step[" + op + ", groups " + Arrays.toString(groups) + ", limits " + limits + ", amount " + amount
                + ", maxWaitTicks " + maxWaitTicks + "]";
    }
}
