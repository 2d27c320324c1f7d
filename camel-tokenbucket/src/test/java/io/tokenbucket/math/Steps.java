package io.tokenbucket.math;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * {@link BucketMath#decide} called in the shapes the case tables read best: one key of one limit as a number, one
 * key of several limits, several keys laid out as candidate groups and shared keys, with or without rate states.
 * Each answer carries the {@link Outcome} and the states the step left, so a table checks both.
 */
public final class Steps {

    private Steps() {
    }

    /**
     * The answer on one key: the outcome, its states after the step (the very array given when the step changed
     * none) and its rate after the step (its current rate when the step stored none; null for fixed limits).
     */
    public record One(Outcome outcome, long[] tatTicks, RateState rate) {
        public boolean granted() {
            return outcome.granted();
        }

        public long waitTicks() {
            return outcome.waitTicks();
        }

        public long remaining() {
            return outcome.remaining();
        }

        public boolean cut() {
            return outcome.cut();
        }

        /** The state of limit {@code limit}. */
        public long tatTicks(int limit) {
            return tatTicks[limit];
        }

        /** Itself: the decision and the rate are one answer. */
        public One decision() {
            return this;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof One d && outcome.equals(d.outcome) && Arrays.equals(tatTicks, d.tatTicks)
                    && Objects.equals(rate, d.rate);
        }

        @Override
        public int hashCode() {
            return outcome.hashCode() + 31 * Arrays.hashCode(tatTicks);
        }
    }

    /**
     * The answer on several keys: the outcome, and the states and rate states of the chosen group's keys then the
     * shared keys (when refused, the ones given).
     */
    public record All(Outcome outcome, long[][] tatTicks, RateState[] rates) {
        public boolean granted() {
            return outcome.granted();
        }

        public long waitTicks() {
            return outcome.waitTicks();
        }

        public long remaining() {
            return outcome.remaining();
        }

        public int chosen() {
            return outcome.chosen();
        }

        /** The states of the chosen group's key {@code index}, or of shared key {@code index - group size}. */
        public long[] tatTicks(int index) {
            return tatTicks[index];
        }

        /** Itself: the decision and the rates are one answer. */
        public All decision() {
            return this;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof All d && outcome.equals(d.outcome) && Arrays.deepEquals(tatTicks, d.tatTicks)
                    && Arrays.equals(rates, d.rates);
        }

        @Override
        public int hashCode() {
            return outcome.hashCode() + 31 * Arrays.deepHashCode(tatTicks);
        }

        @Override
        public String toString() {
            return "All[" + outcome + ", tatTicks=" + Arrays.deepToString(tatTicks) + ", rates="
                    + Arrays.toString(rates) + "]";
        }
    }

    /** A reservation on one limit whose state is one number. */
    public static One reserve(long tatTicks, long nowTicks, long tokens, Limit limit, long maxWaitTicks) {
        return reserve(new long[] {tatTicks}, nowTicks, tokens, Limits.of(limit), maxWaitTicks);
    }

    /** A peek on one limit whose state is one number. */
    public static One peek(long tatTicks, long nowTicks, long tokens, Limit limit) {
        return peek(new long[] {tatTicks}, nowTicks, tokens, Limits.of(limit));
    }

    /** A reservation on one key of fixed limits. */
    public static One reserve(long[] tatTicks, long nowTicks, long tokens, Limits limits, long maxWaitTicks) {
        return reserve(tatTicks, null, nowTicks, tokens, limits, maxWaitTicks);
    }

    /** A peek on one key of fixed limits. */
    public static One peek(long[] tatTicks, long nowTicks, long tokens, Limits limits) {
        return peek(tatTicks, null, nowTicks, tokens, limits);
    }

    /** A reservation on one key with its stored rate state (null: none). */
    public static One reserve(long[] tatTicks, RateState stored, long nowTicks, long tokens, Limits limits,
                              long maxWaitTicks) {
        return one(new Step(Step.Op.RESERVE, new int[] {1}, List.of(limits), tokens, maxWaitTicks), tatTicks, stored,
                nowTicks);
    }

    /** A peek on one key with its stored rate state. */
    public static One peek(long[] tatTicks, RateState stored, long nowTicks, long tokens, Limits limits) {
        return one(Step.of(Step.Op.PEEK, limits, tokens), tatTicks, stored, nowTicks);
    }

    /** A refund on one key with its stored rate state. */
    public static One refund(long[] tatTicks, RateState stored, long nowTicks, long tokens, Limits limits) {
        return one(Step.of(Step.Op.REFUND, limits, tokens), tatTicks, stored, nowTicks);
    }

    /** A penalty on one key with its stored rate state. */
    public static One penalize(long[] tatTicks, RateState stored, long nowTicks, long penaltyTicks, Limits limits) {
        return one(Step.of(Step.Op.PENALIZE, limits, penaltyTicks), tatTicks, stored, nowTicks);
    }

    /** A throttled signal on one key with its stored rate state. */
    public static One throttle(long[] tatTicks, RateState stored, long nowTicks, Limits limits) {
        return one(Step.of(Step.Op.THROTTLE, limits, 0), tatTicks, stored, nowTicks);
    }

    private static One one(Step step, long[] tatTicks, RateState stored, long nowTicks) {
        long[][] tats = {tatTicks};
        RateState[] rates = {stored};
        Outcome o = BucketMath.decide(step, nowTicks, tats, rates, new long[1]);
        Adaptive adaptive = step.limits().get(0).adaptive();
        RateState rate = adaptive == null ? rates[0]
                : rates[0] != stored ? (rates[0] == null ? adaptive.fresh() : rates[0])
                : AdaptiveMath.current(stored, tatTicks, nowTicks, adaptive);
        return new One(o, tats[0], rate);
    }

    /** A reservation on one of the candidates (each a group of one key) and every shared key. */
    public static All reserveAll(long[][] candidateTats, List<Limits> candidateLimits, long[][] sharedTats,
                                 List<Limits> sharedLimits, long nowTicks, long tokens, long maxWaitTicks) {
        long[][][] groups = new long[candidateTats.length][][];
        List<List<Limits>> groupLimits = new ArrayList<>();
        for (int c = 0; c < groups.length; c++) {
            groups[c] = new long[][] {candidateTats[c]};
            groupLimits.add(List.of(candidateLimits.get(c)));
        }
        return reserveAll(groups, groupLimits, sharedTats, sharedLimits, nowTicks, tokens, maxWaitTicks);
    }

    /** A reservation on one of the candidate groups and every shared key, of fixed limits without rate states. */
    public static All reserveAll(long[][][] groupTats, List<List<Limits>> groupLimits, long[][] sharedTats,
                                 List<Limits> sharedLimits, long nowTicks, long tokens, long maxWaitTicks) {
        RateState[][] groupRates = new RateState[groupTats.length][];
        for (int c = 0; c < groupTats.length; c++) {
            groupRates[c] = new RateState[groupTats[c].length];
        }
        return reserveAll(groupTats, groupRates, groupLimits, sharedTats, new RateState[sharedTats.length],
                sharedLimits, nowTicks, tokens, maxWaitTicks);
    }

    /** A reservation on one of the candidate groups and every shared key, each with its stored rate state. */
    public static All reserveAll(long[][][] groupTats, RateState[][] groupRates, List<List<Limits>> groupLimits,
                                 long[][] sharedTats, RateState[] sharedRates, List<Limits> sharedLimits,
                                 long nowTicks, long tokens, long maxWaitTicks) {
        int[] sizes = new int[groupTats.length];
        List<long[]> tats = new ArrayList<>();
        List<RateState> rates = new ArrayList<>();
        List<Limits> limits = new ArrayList<>();
        for (int c = 0; c < sizes.length; c++) {
            sizes[c] = groupTats[c].length;
            tats.addAll(List.of(groupTats[c]));
            rates.addAll(Arrays.asList(groupRates[c]));
            limits.addAll(groupLimits.get(c));
        }
        tats.addAll(List.of(sharedTats));
        rates.addAll(Arrays.asList(sharedRates));
        limits.addAll(sharedLimits);
        long[][] states = tats.toArray(new long[0][]);
        long[][] given = states.clone();
        RateState[] rateStates = rates.toArray(new RateState[0]);
        RateState[] givenRates = rateStates.clone();
        Outcome o = BucketMath.decide(new Step(Step.Op.RESERVE, sizes, limits, tokens, maxWaitTicks), nowTicks,
                states, rateStates, new long[states.length]);
        int first = 0;
        for (int c = 0; c < o.chosen(); c++) {
            first += sizes[c];
        }
        int size = sizes[o.chosen()];
        int shared = tats.size() - sharedTats.length;
        long[][] chosen = new long[size + sharedTats.length][];
        RateState[] chosenRates = new RateState[chosen.length];
        for (int i = 0; i < chosen.length; i++) {
            int at = i < size ? first + i : shared + i - size;
            chosen[i] = states[at];
            // a key that adapts: its rate after the step (its current one when the step stored none); a fixed
            // key: the rate state it was given, left as it is
            Adaptive adaptive = limits.get(at).adaptive();
            chosenRates[i] = adaptive == null ? rateStates[at]
                    : rateStates[at] != givenRates[at] ? (rateStates[at] == null ? adaptive.fresh() : rateStates[at])
                    : AdaptiveMath.current(givenRates[at], given[at], nowTicks, adaptive);
        }
        return new All(o, chosen, chosenRates);
    }
}
