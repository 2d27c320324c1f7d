package io.tokenbucket.store;

import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;

/**
 * A remote store with a policy for its failures: each call goes to the primary store; when that fails (an
 * error or a timeout) the call goes to the fallback instead, or fails when there is none. After a failure the
 * primary is left alone for {@link #PROBE_INTERVAL_NANOS} (calls go straight to the fallback, or fail at once),
 * then tried again, so a dead Redis costs one timeout per second, not one per exchange.
 *
 * <p>The fallback decides the policy: none fails the exchange; {@link #ALLOW_ALL} admits it; a local store
 * throttles it locally with the same limits. A {@code throttled} signal follows the same path: {@code allow} keeps
 * no rate and ignores it (answering the ceiling); {@code local} cuts the key's local rate, which then throttles the
 * fallback's exchanges, while the rate kept in the primary is left as it was (it is not reconciled when the primary
 * answers again: its own signals take it from there).
 *
 * <p>A refusal ({@link StoreRefusedException}: Redis answered, refusing what waiting will not mend, such as a missing
 * permission) is not an outage: the call fails with it, whatever the fallback, and the primary is not bypassed.
 * A {@link Watcher} hears every failure of the primary and its first answer after failures, to report them.
 *
 * <p>An in-flight slot goes back to the store that gave it: the release (and renewal) of a lease the fallback granted
 * goes to the fallback, whatever the primary does by then, and that of any other lease to the primary alone, never to
 * the fallback, whose slots are other exchanges' (a lease the primary cannot release in an outage expires there).
 */
public final class FallbackBucketStore implements BucketStore {

    /** How long the primary is bypassed after a failure before it is tried again. */
    public static final long PROBE_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** A store that grants every request at once and keeps nothing: the {@code allow} policy. */
    public static final BucketStore ALLOW_ALL = new AllowAll();

    private final BucketStore primary;
    private final BucketStore fallback;
    private final LongSupplier clock;
    private final LongAdder failures = new LongAdder();
    private final LongAdder refusals = new LongAdder();
    private final Watcher watcher;
    /** Whether the primary's last call failed: its next answer is told to the watcher. */
    private volatile boolean failing;
    private final LongAdder fallbacks = new LongAdder();
    private volatile long bypassUntilNanos;
    private volatile Throwable lastFailure;
    /** The leases whose slots the fallback granted, until their release: as many as their exchanges in flight. */
    private final Set<String> fallbackLeases = ConcurrentHashMap.newKeySet();

    /**
     * @param primary  the store to use while it answers
     * @param fallback the store to use while it does not, or null to fail those calls
     * @param clock    a monotonic nanosecond clock
     */
    public FallbackBucketStore(BucketStore primary, BucketStore fallback, LongSupplier clock) {
        this(primary, fallback, clock, null);
    }

    /**
     * @param primary  the store to use while it answers
     * @param fallback the store to use while it does not, or null to fail those calls
     * @param clock    a monotonic nanosecond clock
     * @param watcher  hears the primary's failures and recovery, or null
     */
    public FallbackBucketStore(BucketStore primary, BucketStore fallback, LongSupplier clock, Watcher watcher) {
        this.primary = primary;
        this.fallback = fallback;
        this.clock = clock;
        this.bypassUntilNanos = clock.getAsLong();
        this.watcher = watcher;
    }

    /**
     * Hears what becomes of the primary's calls, on the thread that completes them (an I/O thread: it must not
     * block): every failure, and the first answer after one or more.
     */
    public interface Watcher {

        /**
         * A call failed on the primary: a {@link StoreRefusedException} (the call fails) or an outage (an error or
         * a timeout: the fallback answers, or the call fails when there is none, and the primary is bypassed for
         * {@link #PROBE_INTERVAL_NANOS}).
         */
        void failed(Throwable cause);

        /** The primary answered a call after one or more failed. */
        void answered();
    }

    /**
     * Runs {@code command} on the primary, or on the fallback as the policy says: every operation alike, but the
     * release or renewal of an in-flight lease, which goes to the store that granted it.
     */
    @Override
    public CompletionStage<Outcome> execute(StoreCommand command) {
        StoreCommand.Lease lease = command.lease();
        Step.Op op = command.step().op();
        if (lease != null && (op == Step.Op.RELEASE || op == Step.Op.RENEW)) {
            boolean granted = op == Step.Op.RELEASE ? fallbackLeases.remove(lease.id())
                    : fallbackLeases.contains(lease.id());
            if (granted) {
                return fallback.execute(command);
            }
            if (isBypassing()) {
                return CompletableFuture.failedFuture(lastFailure);
            }
            return onPrimary(command).whenComplete((value, failure) -> {
                if (failure != null) {
                    failed(failure);
                } else {
                    answered();
                }
            });
        }
        return primaryOrFallback(command);
    }

    /** The primary's answer to {@code command}: a failure to send it fails the stage; a caller's mistake throws. */
    private CompletableFuture<Outcome> onPrimary(StoreCommand command) {
        try {
            return primary.execute(command).toCompletableFuture();
        } catch (IllegalArgumentException e) {
            throw e; // the caller's mistake, not the store's
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private CompletionStage<Outcome> primaryOrFallback(StoreCommand command) {
        if (isBypassing()) {
            return onFailure(command, lastFailure);
        }
        return onPrimary(command).handle((value, failure) -> {
            if (failure == null) {
                answered();
                return CompletableFuture.completedFuture(value);
            }
            Throwable cause = failed(failure);
            if (cause instanceof StoreRefusedException) {
                return CompletableFuture.<Outcome> failedFuture(cause); // not an outage: no fallback
            }
            if (command.lease() != null && command.step().op() == Step.Op.RESERVE) {
                releaseLate(command);
            }
            return onFailure(command, cause).toCompletableFuture();
        }).thenCompose(f -> f);
    }

    /**
     * A reservation the primary did not answer in time may still be carried out there, late, taking slots for an
     * exchange that has gone on without them (failed, or admitted by the fallback): its lease's slots (and ticket) are
     * given back to the primary at once, on the same connection after it, instead of after the lease time. A
     * reservation that never ran there finds nothing to give back.
     */
    private void releaseLate(StoreCommand reserve) {
        Step step = reserve.step();
        try {
            primary.execute(new StoreCommand(reserve.keys(), new Step(Step.Op.RELEASE,
                    new int[] {reserve.keys().size()}, step.limits(), 0, 0), reserve.lease()));
        } catch (RuntimeException e) {
            // the primary is unreachable: the lease expires there on its own
        }
    }

    /**
     * Counts a failure of the primary and, unless it is a refusal, bypasses the primary for a while; answers its
     * cause.
     */
    private Throwable failed(Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        if (cause instanceof StoreRefusedException) {
            refusals.increment();
        } else {
            failures.increment();
            lastFailure = cause;
            bypassUntilNanos = clock.getAsLong() + PROBE_INTERVAL_NANOS;
        }
        if (watcher != null) {
            watcher.failed(cause);
        }
        // only once the watcher heard the failure: an answer completing meanwhile on another thread (a timeout fires on
        // the timer's thread, answers arrive on the I/O thread) would otherwise be told before it, and the answers
        // after it never, leaving the watcher in an outage that has ended
        failing = true;
        return cause;
    }

    /** The primary answered: told to the watcher when it follows failures. */
    private void answered() {
        if (failing) {
            failing = false;
            if (watcher != null) {
                watcher.answered();
            }
        }
    }

    /** Calls the primary refused ({@link StoreRefusedException}): failed, never answered by the fallback. */
    public long refusals() {
        return refusals.sum();
    }

    /** Calls that failed on the primary store (including timeouts), refusals apart. */
    public long failures() {
        return failures.sum();
    }

    /** Calls answered by the fallback (the {@code allow} or {@code local} policy at work). */
    public long fallbacks() {
        return fallbacks.sum();
    }

    /** True while the primary is bypassed after a failure. */
    public boolean isBypassing() {
        return clock.getAsLong() - bypassUntilNanos < 0;
    }

    private CompletionStage<Outcome> onFailure(StoreCommand command, Throwable cause) {
        if (fallback == null) {
            return CompletableFuture.failedFuture(cause);
        }
        fallbacks.increment();
        StoreCommand.Lease lease = command.lease();
        if (lease == null || command.step().op() != Step.Op.RESERVE) {
            return fallback.execute(command);
        }
        // without a ticket: the fallback is this JVM's, whose waiters queue in their endpoint, and a waiter's withdrawal
        // goes to the primary alone. Recorded before the caller sees the grant, so its release finds it
        StoreCommand here = lease.ticket()
                ? new StoreCommand(command.keys(), command.step(), new StoreCommand.Lease(lease.id(), lease.nanos()))
                : command;
        return fallback.execute(here).thenApply(outcome -> {
            if (outcome.granted()) {
                fallbackLeases.add(lease.id());
            }
            return outcome;
        });
    }

    /**
     * {@link #ALLOW_ALL}: every command answered at once as granted, at the configured rate, with the first key's
     * smallest capacity left. Admitting everything keeps no rate, so a signal cuts nothing.
     */
    private static final class AllowAll implements BucketStore {
        @Override
        public CompletionStage<Outcome> execute(StoreCommand command) {
            return CompletableFuture.completedFuture(Outcome.granted(command.step().limits().get(0).capacity()));
        }
    }
}
