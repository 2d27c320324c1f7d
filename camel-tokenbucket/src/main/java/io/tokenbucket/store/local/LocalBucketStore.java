package io.tokenbucket.store.local;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;

import io.tokenbucket.math.AdaptiveMath;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.OneLimitReservation;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.StoreCommand;

/**
 * Buckets in memory, on nanoseconds of an injectable monotonic clock: each command is one
 * {@link BucketMath#decide} on its keys' states and rate states, applied atomically by a {@link BucketTable}
 * under the locks of every key it names, taken in key order.
 *
 * <p>A reservation on one key of one fixed limit is the same decision in scalars
 * ({@link io.tokenbucket.math.OneLimitReservation}) committed by a lock-free compare-and-set
 * ({@link BucketTable#reserveOne}), the one special path; it allocates
 * nothing but the answer. Memory is bounded by the <em>active</em> keys:
 * {@link #sweep()} drops buckets that have refilled to full, which changes no outcome because a full bucket equals no
 * bucket, and it cannot lose a reservation racing with it. A bucket with a rate state is kept until it has been full
 * for the adaptation's memory ({@link AdaptiveMath#current}), as long as the Redis store keeps its key. Answers are
 * completed stages.
 */
public final class LocalBucketStore implements BucketStore {

    private final BucketTable table = new BucketTable();
    private final LongSupplier clock;
    private final boolean lockFree;

    /** A store on {@link System#nanoTime()}. */
    public LocalBucketStore() {
        this(System::nanoTime);
    }

    /**
     * A store on the given clock.
     *
     * @param nanoClock a monotonic clock in nanoseconds (tests inject one they move by hand)
     */
    public LocalBucketStore(LongSupplier nanoClock) {
        this(nanoClock, true);
    }

    /**
     * A store on the given clock, with or without the lock-free path.
     *
     * @param nanoClock a monotonic clock in nanoseconds
     * @param lockFree  whether a reservation on one key of one fixed limit is committed by a compare-and-set (true,
     *                  what the other constructors do) or takes the locked path of every other command (false: for
     *                  the differential test and the benchmark that keep the special path honest)
     */
    public LocalBucketStore(LongSupplier nanoClock, boolean lockFree) {
        this.clock = nanoClock;
        this.lockFree = lockFree;
    }

    @Override
    public CompletionStage<Outcome> execute(StoreCommand command) {
        return CompletableFuture.completedFuture(executeNow(command));
    }

    /**
     * {@link #reserveNow}, completed: the same answer as the default (a one-key command through {@link #execute}),
     * without building the command on the lock-free path.
     */
    @Override
    public CompletionStage<Outcome> reserve(String key, Limits limits, long tokens, long maxWaitNanos) {
        return CompletableFuture.completedFuture(reserveNow(key, limits, tokens, maxWaitNanos));
    }

    /** The synchronous form of {@link #execute}: the answer, decided and committed atomically. */
    public Outcome executeNow(StoreCommand command) {
        Step step = command.step();
        long nowNanos = clock.getAsLong();
        Outcome lockFree = step.op() == Step.Op.RESERVE && step.keys() == 1
                ? reserveLockFree(command.keys().get(0), step.limits().get(0), step.amount(), step.maxWaitTicks(),
                nowNanos) : null;
        return lockFree != null ? lockFree : table.update(command.keys(), step, nowNanos, command.lease());
    }

    /**
     * The synchronous form of {@link #reserve}. On the lock-free path it builds no command: it caps the wait as
     * {@link StoreCommand} does and checks the tokens as {@link Step} does, so it answers what {@link #executeNow}
     * answers for the same reservation.
     */
    @Override
    public Outcome reserveNow(String key, Limits limits, long tokens, long maxWaitNanos) {
        long nowNanos = clock.getAsLong();
        Outcome lockFree = reserveLockFree(key, limits, tokens,
                Math.min(Math.max(0, maxWaitNanos), BucketStore.MAX_WAIT_NANOS), nowNanos);
        if (lockFree != null) {
            return lockFree;
        }
        StoreCommand command = new StoreCommand(List.of(key), Step.reserve(limits, tokens, maxWaitNanos));
        return table.update(command.keys(), command.step(), nowNanos, null);
    }

    /** {@link #reserveNow} without a wait; on the lock-free path it builds no answer either. */
    @Override
    public long takeNow(String key, Limits limits, long tokens) {
        if (lockFreeApplies(limits, tokens)) {
            Limit limit = limits.get(0);
            long nowNanos = clock.getAsLong();
            long tatNanos = table.reserveOne(key, limit, tokens, 0, nowNanos);
            if (tatNanos != BucketTable.SEVERAL_LIMITS) {
                long nextNanos = OneLimitReservation.reserve(tatNanos, nowNanos, tokens, limit, 0);
                return nextNanos == tatNanos ? BucketStore.NOT_TAKEN : limit.available(nextNanos, nowNanos);
            }
        }
        return BucketStore.super.takeNow(key, limits, tokens);
    }

    /** The lock-free reservation when it applies (one fixed limit, no in-flight limit), else null. */
    private Outcome reserveLockFree(String key, Limits limits, long tokens, long maxWaitNanos, long nowNanos) {
        if (!lockFreeApplies(limits, tokens)) {
            return null;
        }
        Limit limit = limits.get(0);
        long tatNanos = table.reserveOne(key, limit, tokens, maxWaitNanos, nowNanos);
        return tatNanos == BucketTable.SEVERAL_LIMITS ? null : OneLimitReservation.answer(tatNanos,
                OneLimitReservation.reserve(tatNanos, nowNanos, tokens, limit, maxWaitNanos), nowNanos, tokens, limit);
    }

    /** Whether the lock-free reservation applies: one fixed limit, no in-flight limit; checks the cost then. */
    private boolean lockFreeApplies(Limits limits, long tokens) {
        if (!lockFree || limits.size() != 1 || limits.adaptive() != null || limits.inFlight() > 0) {
            return false;
        }
        limits.checkCost(tokens); // before a bucket is added for the key
        return true;
    }

    /**
     * Drops every bucket that has refilled to full; safe to run concurrently with reservations.
     *
     * @return how many buckets were dropped
     */
    public int sweep() {
        return table.sweep(clock.getAsLong());
    }

    /**
     * The {@code n} keys furthest from full now, with the nanoseconds until their first limit is full again:
     * the busiest keys, for monitoring. Reads every bucket: call it from a console, not per exchange.
     */
    public List<Map.Entry<String, Long>> busiest(int n) {
        return table.busiest(n, clock.getAsLong());
    }

    /**
     * The {@code n} keys whose adaptive rate is lowest now, with their factor in parts per million of the configured
     * rate (only keys below it). Reads every bucket: call it from a console, not per exchange.
     */
    public List<Map.Entry<String, Long>> slowest(int n) {
        return table.slowest(n, clock.getAsLong());
    }

    /** The number of buckets held now: active keys, plus full ones not yet swept. */
    public int size() {
        return table.size();
    }
}
