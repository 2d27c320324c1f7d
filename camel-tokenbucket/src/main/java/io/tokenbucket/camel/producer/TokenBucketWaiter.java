package io.tokenbucket.camel.producer;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.camel.TokenBucketMode;
import io.tokenbucket.camel.producer.TokenBucketRequest.Acquire;
import io.tokenbucket.camel.producer.TokenBucketRequest.AcquireAny;
import io.tokenbucket.camel.producer.TokenBucketRequest.Candidate;
import io.tokenbucket.camel.producer.TokenBucketRequest.Key;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.StoreCommand;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.Route;
import org.apache.camel.ServiceStatus;
import org.apache.camel.StatefulService;
import org.apache.camel.spi.UnitOfWork;

/**
 * One exchange waiting in a {@link TokenBucketWaitQueue}: for a slot (in its queue, {@link #keys} set), then, or
 * only, for its tokens (timed, {@link #slot} set). It leaves each exactly once: the slot queue under its own lock
 * ({@link #done}), the tokens' wait by whichever of its release or abandonment takes it from the timed waiters.
 *
 * <p>A granted reservation's time is known: the component's timer releases the waiter then, never before; one
 * released past its lateness bound (a stall) reserves again ({@link #rebook}). An abandoned waiter (its route's
 * producer stopped, or its wake-up could not be scheduled) fails with
 * {@link io.tokenbucket.camel.TokenBucketException} and its tokens are refunded to every key it charged. On a shared
 * store a waiter for a slot holds a ticket on each of its keys, and withdraws them when it leaves without its slot.
 */
final class TokenBucketWaiter {
    /** Remaining-header values from 0 to 1,023 boxed once: a grant then boxes nothing ({@link Long} caches to 127). */
    private static final Long[] BOXED = new Long[1024];

    static {
        for (int i = 0; i < BOXED.length; i++) {
            BOXED[i] = Long.valueOf(i);
        }
    }

    private final TokenBucketWaitQueue queue;
    final StatefulService owner;
    final Exchange exchange;
    private final AsyncCallback callback;
    final TokenBucketRequest request;
    final StoreCommand.Lease lease;
    final TokenBucketLeases leases;
    final long start;
    /** The stored slot keys it waits for, of every candidate; its maxWait's end ({@link System#nanoTime()}). */
    Set<String> keys = Set.of();
    long deadline;
    private boolean done; // guarded by this: it left the slot queue, or is leaving
    private boolean trying; // guarded by this: a retry is in flight
    private String failWhy; // guarded by this: a failure that came during a retry, applied after it
    private boolean failAbandoned; // guarded by this
    /** The acquire its messages name, when not its own or its first candidate. */
    Acquire shown;
    /** Once granted with a wait: the acquire charged, the tokens left, when it is released. */
    private volatile Acquire acquire;
    private long remaining;
    volatile long slot;
    volatile TokenBucketTimer.Entry timer;

    TokenBucketWaiter(TokenBucketWaitQueue queue, StatefulService owner, Exchange exchange, AsyncCallback callback,
                      TokenBucketRequest request, StoreCommand.Lease lease, TokenBucketLeases leases,
                      long start) {
        this.queue = queue;
        this.owner = owner;
        this.exchange = exchange;
        this.callback = callback;
        this.request = request;
        this.lease = lease;
        this.leases = leases;
        this.start = start;
    }

    private void handOff(Runnable continuation, Runnable refused) {
        queue.services.handOff().execute(queue.name(), exchange, callback, continuation, refused);
    }

    /** The headers of an exchange that got its tokens, after waiting {@code waitedMillis}. */
    static void passed(Message message, TokenBucketConfiguration config, long waitedMillis, long remaining) {
        if (config.getMode() == TokenBucketMode.check) {
            message.setHeader(TokenBucketConstants.ALLOWED, Boolean.TRUE);
        }
        message.setHeader(TokenBucketConstants.WAITED, waitedMillis);
        message.setHeader(TokenBucketConstants.REMAINING, remaining >= 0 && remaining < BOXED.length
                ? BOXED[(int) remaining] : Long.valueOf(remaining));
    }

    /** {@code acquire} as a refusal's message names it: its keys, cost and limits, and its keys with slots. */
    static TokenBucketExceptions.Refused refused(Acquire acquire) {
        return new TokenBucketExceptions.Refused(acquire.key().sent(), Key.sent(acquire.allOf()), acquire.tokens(),
                TokenBucketLimitSource.describe(acquire.key().limits()), TokenBucketRequest.slotKeys(acquire).stream()
                .map(k -> "'" + TokenBucketExceptions.shown(k.sent()) + "' (" + k.limits().inFlight() + " in flight)")
                .toList());
    }

    /** Fails, its reservation having failed ({@code failure}): it gives back its place and continues later. */
    void failed(Throwable failure) {
        queue.leavePlace();
        queue.statistics.storeError();
        exchange.setException(queue.services.storeFailed(failure));
        handOff(() -> callback.done(false), null);
    }

    /** Runs {@code continuation} where its exchange continues; if it cannot, gives back what it holds. */
    void continueLater(TokenBucketRequest answered, Outcome r, Runnable continuation) {
        handOff(continuation, () -> {
            if (r != null && r.granted()) { // the slots it got go back once, when the exchange, failed, ends
                hold(answered instanceof AcquireAny any ? any.chosen(r.chosen()) : (Acquire) answered);
            }
            queue.leavePlace();
        });
    }

    /** Holds the slots {@code acquire} took until its exchange ends. */
    private void hold(Acquire acquire) {
        leases.holdUntilDone(exchange, acquire, lease);
    }

    /**
     * Admitted by {@code r} with a wait, having charged {@code acquire}: holds its slots until its exchange ends and
     * waits until the timer releases it, unless abandoned first.
     */
    void awaitTokens(Acquire acquire, Outcome r) {
        hold(acquire);
        this.acquire = acquire;
        remaining = r.remaining();
        // from the decision, not from now: a thread that reads its answer late still releases in the store's order
        slot = r.fromTicks() + r.waitTicks(); // the timer never runs a task before it: no release is early
        queue.timed.add(this);
        try {
            TokenBucketTimer on = queue.services.timer();
            timer = on.schedule(() -> release(on.now()), slot);
        } catch (RejectedExecutionException e) {
            abandon("its wake-up could not be scheduled (" + e.getMessage() + ")");
        }
        // read after the add: a stop that began meanwhile either sees this waiter or is seen here
        String why = queue.stopWhy(slot);
        if (why != null) {
            abandon(why);
        }
        abandonIfStopped();
    }

    /** Fails when its maxWait passes, unless it left first. */
    void failAtDeadline() {
        try {
            timer = queue.services.timer().schedule(() -> fail(false, null), deadline);
        } catch (RejectedExecutionException e) {
            fail(true, "its maxWait could not be scheduled (" + e.getMessage() + ")");
        }
    }

    /**
     * On the timer thread, at its time, {@code now}: it leaves with its tokens, continuing where it is handed; or,
     * released past its lateness bound, it reserves again (never with a negative maxLateness).
     */
    private void release(long now) {
        if (queue.timed.remove(this)) { // its one claim, or abandon's
            long late = now - slot;
            long floor = queue.config.getMaxLateness(); // first, as it costs nothing: the bound is never below it
            if (floor >= 0 && late > TimeUnit.MILLISECONDS.toNanos(floor) && late > latenessNanos()) {
                rebook(now);
            } else {
                pass();
            }
        }
    }

    /** It leaves with its tokens, continuing where it is handed. */
    private void pass() {
        queue.leavePlace();
        handOff(() -> {
            long waited = System.nanoTime() - start;
            queue.statistics.admitted(acquire.key().stored(), waited);
            passed(exchange.getMessage(), queue.config, waited / 1_000_000, remaining);
            callback.done(false);
        }, null);
    }

    /**
     * How late past its slot it may still go on with its reservation: the larger of {@code maxLateness} and the
     * shortest token interval of the keys it charged. Within one interval a late release adds at most one request to
     * any window of its keys (the tokens refilled while it was late are less than one); the floor keeps a machine that
     * is routinely a few milliseconds late from re-booking every waiter, each re-booking being one store call more.
     * Never (the largest value) when a key of its request has an in-flight limit: the slots it holds would have to be
     * given back and waited for again.
     */
    private long latenessNanos() {
        if (!TokenBucketRequest.allSlotKeys(request).isEmpty()) {
            return Long.MAX_VALUE;
        }
        long interval = Long.MAX_VALUE;
        for (Limits limits : acquire.refund().limits()) { // every key it charged; an adaptive one at its ceiling
            for (int l = 0; l < limits.size(); l++) {
                interval = Math.min(interval, limits.get(l).interval());
            }
        }
        return Math.max(TimeUnit.MILLISECONDS.toNanos(queue.config.getMaxLateness()),
                interval == Long.MAX_VALUE ? 0 : interval);
    }

    /**
     * Released at {@code now}, past its lateness bound (the JVM or machine stalled, and the bucket refilled
     * meanwhile): reserves its request again as a new arrival would, within what is left of its maxWait, so that it
     * competes with the refilled tokens instead of going out beside them; a request of candidates may get another
     * one, whose key its header then names. Its old tokens are not given back: their time has passed (a refund moves
     * a bucket back by their cost, never before now, and would so give back what arrivals after the stall took: they
     * and it would go out together again); the time it stood unused is lost to the stall. On an adaptive key the
     * second grant counts towards the rate's increase as any grant does.
     */
    private void rebook(long now) {
        queue.statistics.rebooked();
        long accept = Math.max(0, start + TokenBucketLimitSource.maxWaitNanos(queue.config) - now);
        CompletionStage<Outcome> answer;
        try {
            answer = queue.reservation.reserve(request, accept, null);
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        answer.whenComplete((r, failure) -> {
            if (failure != null) {
                failed(failure);
            } else if (r.granted() && r.waitTicks() > 0) {
                queue.answered(this, request, r); // waits again, for its new slot
            } else if (r.granted()) {
                acquire = queue.chosen(exchange.getMessage(), request, r);
                remaining = r.remaining();
                pass();
            } else { // over what is left of its maxWait: refused as a new arrival would be
                continueLater(request, r, () -> {
                    if (queue.answered(this, request, r)) {
                        callback.done(false);
                    }
                });
            }
        });
    }

    /** Its producer stopped while the store answered or it was queued: nobody else would abandon it. */
    void abandonIfStopped() {
        if (ownerStopped()) {
            abandon("the producer stopped");
        }
    }

    /**
     * Whether its producer has stopped with the route it waits in (its consumer stopped first), or it waits in none: a
     * producer that a cache let go while its route runs on ({@code toD}, a recipient list, evicting the least used)
     * leaves it waiting.
     */
    boolean ownerStopped() {
        if (owner.isRunAllowed()) {
            return false;
        }
        UnitOfWork uow = exchange.getUnitOfWork();
        Route route = uow == null ? null : uow.getRoute();
        // a consumer suspended (TokenBucketBackPressure, a route suspended) is not one stopped
        return route == null || !(route.getConsumer() instanceof StatefulService consumer && !consumer.isStopping()
                && !consumer.isStopped());
    }

    /**
     * Whether its producer stopped and then the route it waits in did too (its producer was let go by a cache while
     * the route ran on): nothing else would end its wait.
     */
    boolean orphaned() {
        if (owner.isRunAllowed()) {
            return false;
        }
        UnitOfWork uow = exchange.getUnitOfWork();
        Route route = uow == null ? null : uow.getRoute();
        if (route == null) {
            return true;
        }
        ServiceStatus status = route.getCamelContext().getRouteController().getRouteStatus(route.getRouteId());
        return status == null || status.isStopped();
    }

    /** Fails it, refunding its tokens or withdrawing its tickets, unless it left already. */
    void abandon(String why) {
        if (acquire == null) {
            fail(true, why);
            return;
        }
        if (!queue.timed.remove(this)) {
            return;
        }
        queue.leavePlace();
        TokenBucketTimer.Entry t = timer;
        if (t != null) {
            t.cancel();
        }
        Acquire charged = acquire;
        queue.services.store().refund(charged.refund().stored(), charged.refund().limits(),
                charged.refund().tokens()); // to every key it charged
        queue.statistics.abandoned();
        exchange.setException(TokenBucketExceptions.abandoned(queue.name(), charged.key().sent(), charged.tokens(),
                why));
        // this may run on a store's I/O thread: the route's error handling goes where the exchange continues
        handOff(() -> callback.done(false), null);
    }

    synchronized boolean gone() {
        return done;
    }

    /**
     * Its request narrowed to the candidates none of whose slot keys is in {@code blocked} (held up by an earlier
     * waiter); null when it has none such (or is no request of candidates), and it waits on behind them.
     */
    TokenBucketRequest unblocked(Set<String> blocked) {
        if (!(request instanceof AcquireAny any)) {
            return null;
        }
        List<Candidate> free = new ArrayList<>(any.candidates().size());
        for (int c = 0; c < any.candidates().size(); c++) {
            if (TokenBucketRequest.slotKeys(any.chosen(c)).stream().noneMatch(k -> blocked.contains(k.stored()))) {
                free.add(any.candidates().get(c));
            }
        }
        return free.isEmpty() ? null : new AcquireAny(List.copyOf(free), any.allOf(), any.tokens());
    }

    /** Reserves again as {@code attempt}: false when there is still no slot, true when it left. */
    CompletionStage<Boolean> tryAdmit(TokenBucketRequest attempt) {
        synchronized (this) {
            if (done) {
                return CompletableFuture.completedFuture(true);
            }
            trying = true;
        }
        CompletionStage<Outcome> answer;
        try {
            // the first waiter of its keys here: its tries hold its place among every instance's waiters
            answer = queue.reservation.reserve(attempt, Math.max(0, deadline - System.nanoTime()),
                    lease == null ? null : lease.withTicket());
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        return answer.handle((outcome, failure) -> tried(attempt, outcome, failure));
    }

    private boolean tried(TokenBucketRequest attempt, Outcome outcome, Throwable failure) {
        String why;
        boolean abandoned;
        synchronized (this) {
            trying = false;
            if (failure == null && outcome.slotless() && failWhy == null && !failAbandoned) {
                return false; // no slot yet: it waits on
            }
            done = true;
            why = failWhy;
            abandoned = failAbandoned;
        }
        leaveSlotQueue();
        if (failure == null && !outcome.slotless()) { // admitted or refused for its tokens, even if late
            if (!outcome.granted()) {
                withdrawTickets(TokenBucketRequest.allSlotKeys(request)); // or it holds up the key
            } else if (attempt != request) { // its tickets on the candidates the narrowed attempt left out too
                Set<String> tried = TokenBucketRequest.anySlotKeys(attempt);
                withdrawTickets(TokenBucketRequest.allSlotKeys(request).stream()
                        .filter(k -> !tried.contains(k.stored())).toList());
            }
            continueLater(attempt, outcome, () -> {
                if (queue.answered(this, attempt, outcome)) {
                    callback.done(false);
                }
            });
        } else if (failure != null) {
            failed(failure);
        } else {
            failNow(abandoned, why);
        }
        return true;
    }

    /**
     * Its maxWait passed ({@code abandoned} false) or it is abandoned: fails it unless it left already; during a
     * retry, once the retry has answered (a slot it got then is used: the exchange goes on).
     */
    void fail(boolean abandoned, String why) {
        synchronized (this) {
            if (done) {
                return;
            }
            if (trying) {
                failAbandoned = abandoned;
                failWhy = why == null ? "" : why;
                return;
            }
            done = true;
        }
        leaveSlotQueue();
        failNow(abandoned, why);
    }

    private void failNow(boolean abandoned, String why) {
        withdrawTickets(TokenBucketRequest.allSlotKeys(request));
        queue.leavePlace();
        Acquire shown = this.shown != null ? this.shown
                : request instanceof Acquire a ? a : ((AcquireAny) request).chosen(0);
        if (abandoned) {
            queue.statistics.abandoned();
            exchange.setException(TokenBucketExceptions.abandonedSlot(queue.name(), shown.key().sent(), why));
        } else {
            queue.statistics.rejected(shown.key().stored());
            exchange.setException(TokenBucketExceptions.noSlot(queue.name(),
                    TokenBucketLimitSource.waits(queue.config), refused(shown), true,
                    TokenBucketLimitSource.ceilMillis(queue.statistics.slotWaitNanos(0))));
        }
        handOff(() -> callback.done(false), null);
    }

    /** Withdraws its tickets on {@code keys} (a shared store's queue of waiters), so they hold up nobody. */
    private void withdrawTickets(List<Key> keys) {
        if (lease == null || keys.isEmpty()) {
            return;
        }
        try {
            queue.services.store().execute(new StoreCommand(Key.stored(keys), new Step(Step.Op.RELEASE,
                    new int[] {keys.size()}, Key.limits(keys), 0, 0), lease));
        } catch (RuntimeException e) {
            // the ticket then expires on its own, within half a second
        }
    }

    private void leaveSlotQueue() {
        queue.statistics.slotWaiting(-1);
        queue.leave(this);
        TokenBucketTimer.Entry t = timer;
        if (t != null) {
            t.cancel();
        }
    }
}
