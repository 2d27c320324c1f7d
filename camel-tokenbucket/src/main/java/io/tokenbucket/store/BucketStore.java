package io.tokenbucket.store;

import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;

/**
 * The buckets of one limiter, keyed by a string, each updated atomically by
 * {@link io.tokenbucket.math.BucketMath#decide}.
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
 * <p>A store implements one method, {@link #execute}: every operation is a {@link StoreCommand} sent down that one
 * path and answered with one {@link Outcome}, so a wrapper ({@link FallbackBucketStore}) applies its policy in one
 * place. The methods below build the command for the common shapes; stores do not override them.
 */
public interface BucketStore extends AutoCloseable {

    /**
     * The longest wait any reservation is granted: 365 days. A reservation that would wait longer is refused and
     * consumes nothing, as one over its own {@code maxWaitNanos} is; {@code maxWaitNanos} above it mean this.
     */
    long MAX_WAIT_NANOS = TimeUnit.DAYS.toNanos(365);

    /**
     * The most keys one command may name (candidates, the keys charged with them and shared keys together): 1,024.
     * The local store locks every one of them, one stack frame each, so an unbounded list would overflow a thread's
     * stack; more is refused with an {@link IllegalArgumentException} naming the count.
     */
    int MAX_KEYS = 1024;

    /** The longest penalty: 365 days; {@link #penalize} with a longer one makes the key unavailable this long. */
    long MAX_PENALTY_NANOS = MAX_WAIT_NANOS;

    /**
     * Runs {@code command}: the one operation every store implements; the methods below are its shorthand.
     *
     * @return the answer, as {@link io.tokenbucket.math.BucketMath#decide} gives it (waits in nanoseconds)
     */
    CompletionStage<Outcome> execute(StoreCommand command);

    /**
     * Reserves {@code tokens} tokens on {@code key}, or refuses and consumes nothing when they would take
     * longer than {@code maxWaitNanos} to arrive.
     *
     * @param maxWaitNanos the longest acceptable wait in nanoseconds: 0 never waits, anything from
     *                     {@link #MAX_WAIT_NANOS} up ({@link io.tokenbucket.math.BucketMath#NO_LIMIT}) accepts any
     *                     wait up to {@link #MAX_WAIT_NANOS}
     * @throws IllegalArgumentException at once when {@code tokens} is below 1 or above a capacity
     */
    default CompletionStage<Outcome> reserve(String key, Limits limits, long tokens, long maxWaitNanos) {
        return execute(new StoreCommand(List.of(key), Step.reserve(limits, tokens, maxWaitNanos)));
    }

    /**
     * The answer of {@link #reserve} when this store gives it within the call (a store in this JVM), else null: the
     * same reservation, committed, without a stage for a caller that would only wait for it. Default: null, the
     * answer comes through {@link #reserve}.
     */
    default Outcome reserveNow(String key, Limits limits, long tokens, long maxWaitNanos) {
        return null;
    }

    /** {@link #takeNow}'s answer when the tokens are not there now: nothing was consumed. */
    long NOT_TAKEN = -1;

    /** {@link #takeNow}'s answer when this store answers only through {@link #reserve}. */
    long NO_ANSWER = -2;

    /**
     * {@link #reserveNow} accepting no wait, answered in a primitive for the admitted hot path: the tokens left after
     * taking {@code tokens} on {@code key} at once, {@link #NOT_TAKEN} when they are not there now (nothing consumed),
     * {@link #NO_ANSWER} when the store gives its answer only through {@link #reserve}.
     */
    default long takeNow(String key, Limits limits, long tokens) {
        Outcome answer = reserveNow(key, limits, tokens, 0);
        return answer == null ? NO_ANSWER : answer.granted() ? answer.remaining() : NOT_TAKEN;
    }

    /** What a reservation of {@code tokens} would get now, without consuming anything. */
    default CompletionStage<Outcome> peek(String key, Limits limits, long tokens) {
        return execute(StoreCommand.of(Step.Op.PEEK, key, limits, tokens));
    }

    /**
     * Gives {@code tokens} back to {@code key}: each limit moves back by {@code tokens} of its intervals, never past
     * full, so any number from 1 up is accepted (more than a bucketful gives back reservations booked ahead too).
     * Answers the tokens now remaining.
     */
    default CompletionStage<Outcome> refund(String key, Limits limits, long tokens) {
        return execute(StoreCommand.of(Step.Op.REFUND, key, limits, tokens));
    }

    /** Drops the state of {@code key}: its bucket starts full next time. */
    default CompletionStage<Outcome> remove(String key, Limits limits) {
        return execute(StoreCommand.of(Step.Op.REMOVE, key, limits, 0));
    }

    /**
     * Makes {@code key} unavailable for {@code penaltyNanos} (at most {@link #MAX_PENALTY_NANOS}): no token before
     * then, after which it refills from empty; a longer debt already owed is kept. Answers the state afterwards (as
     * a peek of one token).
     */
    default CompletionStage<Outcome> penalize(String key, Limits limits, long penaltyNanos) {
        return execute(StoreCommand.of(Step.Op.PENALIZE, key, limits, Math.min(penaltyNanos, MAX_PENALTY_NANOS)));
    }

    /**
     * Gives {@code tokens} back to every one of {@code keys} (an all-of acquire's charged keys), in one step; answers
     * the fewest tokens any of them has then.
     */
    default CompletionStage<Outcome> refund(List<String> keys, List<Limits> limits, long tokens) {
        return execute(new StoreCommand(keys, new Step(Step.Op.REFUND, new int[] {keys.size()}, limits, tokens, 0)));
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
    default CompletionStage<Outcome> throttle(String key, Limits limits) {
        return execute(StoreCommand.of(Step.Op.THROTTLE, key, limits, 0));
    }

    /** The current rate of {@code key}; a key whose limits have no adaptation is always at its configured rate. */
    default CompletionStage<Outcome> rate(String key, Limits limits) {
        return execute(StoreCommand.of(Step.Op.RATE, key, limits, 0));
    }

    /** Releases what the store holds; the default holds nothing. */
    @Override
    default void close() {
    }
}
