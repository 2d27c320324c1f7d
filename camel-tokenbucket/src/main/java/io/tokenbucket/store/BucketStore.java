package io.tokenbucket.store;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.math.Limits;

/**
 * The buckets of one limiter, keyed by a string, each updated atomically by
 * {@link io.tokenbucket.math.BucketMath}.
 *
 * <p>Limits are passed with every call (ticks are nanoseconds), so a store keeps nothing but each key's
 * state, and a key's limits may change from one call to the next: its state carries over position by position
 * (each limit keeps the time until it is full again). Results are asynchronous: the local store returns
 * completed stages, a remote store completes them on its I/O thread, so callers must not block in their
 * continuations. Keys are expected bounded already ({@link BucketKeys#bound(String)}).
 *
 * <p>Every store has the same ceilings: no reservation waits longer than {@link #MAX_WAIT_NANOS} (one that would
 * is refused, whatever its {@code maxWaitNanos}), and no penalty lasts longer than {@link #MAX_PENALTY_NANOS}
 * (a longer one counts as that long). Within them every number a store computes or keeps fits its type.
 *
 * <p>A store implements one method, {@link #execute}: every operation is a {@link StoreCommand} record sent down
 * that one path, so a wrapper ({@link FallbackBucketStore}) applies its policy in one place. The operations
 * below are default methods that build the record and execute it; stores do not override them.
 */
public interface BucketStore extends AutoCloseable {

    /**
     * The longest wait any reservation is granted: 365 days. A reservation that would wait longer is refused and
     * consumes nothing, as one over its own {@code maxWaitNanos} is; {@code maxWaitNanos} above it mean this.
     */
    long MAX_WAIT_NANOS = TimeUnit.DAYS.toNanos(365);

    /**
     * The most keys, candidates, the keys charged with them and shared keys together, that one {@link #reserveAll}
     * may name: 1,024. The local store locks every one of them, one stack frame each, so an unbounded list would
     * overflow a thread's stack; more is refused with an {@link IllegalArgumentException} naming the count.
     */
    int MAX_ALL_OF_KEYS = 1024;

    /** The longest penalty: 365 days; {@link #penalize} with a longer one makes the key unavailable this long. */
    long MAX_PENALTY_NANOS = MAX_WAIT_NANOS;

    /**
     * Runs {@code command}: the one operation every store implements; the methods below are its shorthand.
     *
     * @return the command's answer, as its operation documents
     * @throws IllegalArgumentException at once, without a stage, for numbers the operation never accepts (a cost
     *                                  above a capacity, a refund below 1, a negative penalty)
     */
    <R> CompletionStage<R> execute(StoreCommand<R> command);

    /**
     * Reserves {@code tokens} tokens on {@code key}, or refuses and consumes nothing when they would take
     * longer than {@code maxWaitNanos} to arrive.
     *
     * @param maxWaitNanos the longest acceptable wait in nanoseconds: 0 never waits, anything from
     *                     {@link #MAX_WAIT_NANOS} up ({@link io.tokenbucket.math.BucketMath#NO_LIMIT}) accepts any
     *                     wait up to {@link #MAX_WAIT_NANOS}
     */
    default CompletionStage<Reservation> reserve(String key, Limits limits, long tokens, long maxWaitNanos) {
        return execute(new StoreCommand.Reserve(key, limits, tokens, maxWaitNanos));
    }

    /** What a reservation of {@code tokens} would get now, without consuming anything. */
    default CompletionStage<Reservation> peek(String key, Limits limits, long tokens) {
        return execute(new StoreCommand.Peek(key, limits, tokens));
    }

    /**
     * Gives {@code tokens} back to {@code key}: each limit moves back by {@code tokens} of its intervals, never past
     * full, so any number from 1 up is accepted (more than a bucketful gives back reservations booked ahead too).
     * Answers the tokens now remaining.
     */
    default CompletionStage<Reservation> refund(String key, Limits limits, long tokens) {
        return execute(new StoreCommand.Refund(key, limits, tokens));
    }

    /** Drops the state of {@code key}: its bucket starts full next time. */
    default CompletionStage<Void> remove(String key) {
        return execute(new StoreCommand.Remove(key));
    }

    /**
     * Makes {@code key} unavailable for {@code penaltyNanos} (at most {@link #MAX_PENALTY_NANOS}): no token before
     * then, after which it refills from empty; a longer debt already owed is kept. Answers the state afterwards (as
     * a peek of one token).
     */
    default CompletionStage<Reservation> penalize(String key, Limits limits, long penaltyNanos) {
        return execute(new StoreCommand.Penalize(key, limits, penaltyNanos));
    }

    /**
     * Reserves {@code tokens} on whichever of {@code keys} has them soonest (of equals, the one with the most
     * tokens, then the first), as
     * {@link #reserve} would on that key.
     *
     * @param limits the limits of each key, in the same order
     */
    default CompletionStage<Choice> reserveFreest(List<String> keys, List<Limits> limits, long tokens,
                                                  long maxWaitNanos) {
        return execute(new StoreCommand.ReserveFreest(keys, limits, tokens, maxWaitNanos));
    }

    /**
     * Reserves {@code tokens} on the freest of {@code keys} and on every key of {@code allOf}, in one atomic step:
     * every key is charged or none is. The wait is the longest of the keys' waits, and each key is charged as if
     * reserved at that common release instant ({@link io.tokenbucket.math.BucketMath#reserveAll}), so no key is
     * over-admitted; the chosen candidate is the one with the shortest such wait (of equals, the one with the most
     * tokens, then the first). Answers the chosen candidate and the reservation, whose {@code remaining} is the
     * fewest tokens left on any charged key. A refusal charges nothing. To give the tokens back, refund every
     * charged key.
     *
     * @param limits      the limits of each candidate, in the same order
     * @param allOfLimits the limits of each shared key, in the same order
     * @throws IllegalArgumentException at once when a key is named twice, there is no candidate, the lists and their
     *                                  limits differ in length, they name more than {@link #MAX_ALL_OF_KEYS} keys,
     *                                  or {@code tokens} exceeds a capacity
     */
    default CompletionStage<Choice> reserveAll(List<String> keys, List<Limits> limits, List<String> allOf,
                                               List<Limits> allOfLimits, long tokens, long maxWaitNanos) {
        return execute(new StoreCommand.ReserveAll(keys, limits, allOf, allOfLimits, tokens, maxWaitNanos));
    }

    /**
     * {@link #reserveAll(List, List, List, List, long, long)} with candidate <em>groups</em>: each candidate
     * {@code keys[c]} is charged together with the keys {@code with[c]} (a proxy with its (proxy, host) pair), and
     * the group chosen is the one whose keys, with the shared keys, allow soonest (of equals, the one whose keys
     * have the most tokens, then the first). Every key of the chosen group and every key of {@code allOf} is charged,
     * or none. To give the tokens back, refund every key of the chosen group and of {@code allOf}.
     *
     * @param with       for each candidate, the keys charged with it (possibly none)
     * @param withLimits the limits of those keys, in the same layout
     * @throws IllegalArgumentException at once as the other form, every key of every group counted and checked
     */
    default CompletionStage<Choice> reserveAll(List<String> keys, List<Limits> limits, List<List<String>> with,
                                               List<List<Limits>> withLimits, List<String> allOf,
                                               List<Limits> allOfLimits, long tokens, long maxWaitNanos) {
        return execute(new StoreCommand.ReserveAll(keys, limits, with, withLimits, allOf, allOfLimits, tokens,
                maxWaitNanos));
    }

    /**
     * Checks a {@link StoreCommand.ReserveAll} as every store does before deciding: at least one candidate, limits
     * for every key, at most {@link #MAX_ALL_OF_KEYS} keys (every key of every group and every shared key), no key
     * twice, a cost every key can grant.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    static void checkReserveAll(StoreCommand.ReserveAll c) {
        if (c.keys().isEmpty() || c.keys().size() != c.limits().size() || c.with().size() != c.keys().size()
                || c.withLimits().size() != c.keys().size() || c.allOf().size() != c.allOfLimits().size()) {
            throw new IllegalArgumentException("an all-of reservation needs at least one candidate and limits for"
                    + " every key, was keys " + c.keys() + " and allOf " + c.allOf());
        }
        int grouped = 0;
        for (int i = 0; i < c.with().size(); i++) {
            if (c.with().get(i).size() != c.withLimits().get(i).size()) {
                throw new IllegalArgumentException("an all-of reservation needs limits for every key, was keys "
                        + c.with().get(i) + " charged with candidate '" + c.keys().get(i) + "'");
            }
            grouped += c.with().get(i).size();
        }
        long named = (long) c.keys().size() + grouped + c.allOf().size();
        if (named > MAX_ALL_OF_KEYS) {
            throw new IllegalArgumentException("an all-of reservation names at most " + MAX_ALL_OF_KEYS
                    + " keys, candidates, the keys charged with them and allOf together, was " + named + " ("
                    + c.keys().size() + " candidates, " + grouped + " keys charged with them and " + c.allOf().size()
                    + " allOf keys)");
        }
        Set<String> seen = new HashSet<>();
        for (String key : c.named()) {
            if (!seen.add(key)) {
                throw new IllegalArgumentException("an all-of reservation names key '" + key + "' twice (keys "
                        + c.keys() + (grouped > 0 ? ", charged with them " + c.with() : "") + ", allOf " + c.allOf()
                        + "); each key is charged once");
            }
        }
        c.namedLimits().forEach(l -> l.checkCost(c.tokens()));
    }

    /**
     * A {@code throttled} signal on {@code key} (the target refused, say with 429 or 503): its rate is cut by the
     * adaptation's decrease (halved instead while the key is in its slow start, which the cut ends), never below its
     * floor, and its bucket emptied at the new rate, unless the last cut is within the hold, when the signal is
     * ignored ({@link io.tokenbucket.math.AdaptiveMath}). Answers whether it cut and the rate now.
     *
     * @param limits the key's limits, with an adaptation
     * @throws IllegalArgumentException at once when {@code limits} have no adaptation
     */
    default CompletionStage<Adaptation> throttle(String key, Limits limits) {
        return execute(new StoreCommand.Throttle(key, limits));
    }

    /** The current rate of {@code key}; a key whose limits have no adaptation is always at its configured rate. */
    default CompletionStage<Adaptation> rate(String key, Limits limits) {
        return execute(new StoreCommand.Rate(key, limits));
    }

    /**
     * The check every store makes on a {@link StoreCommand.Throttle}.
     *
     * @throws IllegalArgumentException when {@code limits} have no adaptation
     */
    static void requireAdaptive(String key, Limits limits) {
        if (limits.adaptive() == null) {
            throw new IllegalArgumentException("a throttled signal on key " + key + " needs an adaptive rate"
                    + " (adaptive=true), but its limits " + limits + " have a fixed one");
        }
    }

    /** Releases what the store holds; the default holds nothing. */
    @Override
    default void close() {
    }
}
