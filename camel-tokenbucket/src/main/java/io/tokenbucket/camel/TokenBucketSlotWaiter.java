package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import io.tokenbucket.camel.TokenBucketRequest.Acquire;
import io.tokenbucket.camel.TokenBucketRequest.AcquireAny;
import io.tokenbucket.camel.TokenBucketRequest.Candidate;
import io.tokenbucket.camel.TokenBucketRequest.Key;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.StoreCommand;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;

/**
 * An exchange waiting in a {@link TokenBucketSlots} queue for an in-flight slot: its tries, and how it leaves
 * (admitted, refused for its tokens, failed by the store, its maxWait over, or abandoned), each exactly once.
 */
final class TokenBucketSlotWaiter {

    private final TokenBucketSlots slots;
    private final TokenBucketEndpoint endpoint;
    /** Whose {@code decide} continues an exchange that leaves with an answer (a grant, or a refusal for tokens). */
    private final TokenBucketProducer producer;
    private final Exchange exchange;
    private final AsyncCallback callback;
    private final TokenBucketRequest request;
    /** The acquire its messages name: its own, or the candidate the refusal named. */
    private final Acquire shown;
    private final StoreCommand.Lease lease;
    private final long start;
    private final long deadline;
    /** The stored slot keys it waits for, of every candidate. */
    final Set<String> keys;
    private boolean done; // guarded by this waiter
    private boolean trying; // guarded by this waiter: a retry is in flight
    private String failWhy; // guarded by this waiter: a failure that came during a retry, applied after it
    private boolean failAbandoned; // guarded by this waiter
    /** Its maxWait's timer entry, set once it is scheduled. */
    volatile TokenBucketTimer.Entry timer;

    TokenBucketSlotWaiter(TokenBucketSlots slots, TokenBucketProducer producer, Exchange exchange,
                          AsyncCallback callback, TokenBucketRequest request, Acquire shown, StoreCommand.Lease lease,
                          long start, long deadline) {
        this.slots = slots;
        this.endpoint = slots.endpoint();
        this.producer = producer;
        this.exchange = exchange;
        this.callback = callback;
        this.request = request;
        this.shown = shown;
        this.lease = lease;
        this.start = start;
        this.deadline = deadline;
        this.keys = TokenBucketLeases.anySlotKeys(request);
    }

    /** The producer it came through. */
    TokenBucketProducer producer() {
        return producer;
    }

    /** What it waits to reserve: its whole request (a drain may try a part of it, {@link #unblocked}). */
    TokenBucketRequest request() {
        return request;
    }

    /** Whether it left the queue (admitted, refused, failed or abandoned), or is leaving. */
    synchronized boolean gone() {
        return done;
    }

    /**
     * Its request narrowed to the candidates none of whose slot keys is in {@code blocked} (held up by an earlier
     * waiter), so it may take a freed slot that no earlier waiter can use; null when it has none such (or is no
     * request of candidates), and it waits on behind them.
     */
    TokenBucketRequest unblocked(Set<String> blocked) {
        if (!(request instanceof AcquireAny any)) {
            return null;
        }
        List<Candidate> free = new ArrayList<>(any.candidates().size());
        for (int c = 0; c < any.candidates().size(); c++) {
            boolean clear = true;
            for (Key k : TokenBucketLeases.slotKeys(any.chosen(c))) {
                if (blocked.contains(k.stored())) {
                    clear = false;
                    break;
                }
            }
            if (clear) {
                free.add(any.candidates().get(c));
            }
        }
        return free.isEmpty() ? null : new AcquireAny(List.copyOf(free), any.allOf(), any.tokens());
    }

    /**
     * Runs the reservation again, as {@code attempt} (its request, or the part of it {@link #unblocked} left):
     * false when there is still no slot (it goes on waiting), true when it left (admitted, refused for its tokens,
     * failed, or already gone).
     */
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
            answer = TokenBucketProducer.reserve(endpoint.store(), attempt,
                    Math.max(0, deadline - System.nanoTime()), lease == null ? null : lease.withTicket());
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        return answer.handle((outcome, failure) -> answered(attempt, outcome, failure));
    }

    private boolean answered(TokenBucketRequest attempt, Outcome outcome, Throwable failure) {
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
        leave();
        if (failure == null && !outcome.slotless()) { // admitted or refused for its tokens, even if late
            if (!outcome.granted()) {
                withdrawTicket(); // an admission takes its ticket out; a refusal must, or it holds up the key
            } else if (attempt != request) { // its tickets on the candidates the narrowed attempt left out too
                Set<String> tried = TokenBucketLeases.anySlotKeys(attempt);
                withdrawTickets(TokenBucketLeases.allSlotKeys(request).stream()
                        .filter(k -> !tried.contains(k.stored())).toList());
            }
            // holding its waiting place (place: true), its answer given later (sync: false); if the pool refuses
            // it, its place goes back and the slot it got when the exchange, failed here, ends
            TokenBucketWaiters.handOff(endpoint, exchange, callback,
                    () -> producer.decide(exchange, callback, attempt, lease, outcome, true, start, false),
                    () -> producer.refusedAfter(exchange, attempt, lease, outcome, true));
        } else if (failure != null) {
            endpoint.stopWaiting();
            endpoint.getStatistics().storeError();
            exchange.setException(endpoint.storeBinding().failed(failure));
            handOff(() -> callback.done(false));
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
        leave();
        failNow(abandoned, why);
    }

    private void failNow(boolean abandoned, String why) {
        withdrawTicket();
        endpoint.stopWaiting();
        if (abandoned) {
            endpoint.getStatistics().abandoned();
            exchange.setException(TokenBucketExceptions.abandonedSlot(endpoint.getName(), shown.key().sent(),
                    why));
        } else {
            endpoint.getStatistics().rejected(shown.key().stored());
            exchange.setException(TokenBucketExceptions.noSlot(endpoint.getName(),
                    TokenBucketLimitSource.waits(endpoint.getConfiguration()), TokenBucketLeases.refused(shown), true,
                    TokenBucketLimitSource.ceilMillis(endpoint.getStatistics().slotWaitNanos(0))));
        }
        handOff(() -> callback.done(false));
    }

    /**
     * On a shared store a waiter holds a ticket in its keys' queues (its place among every instance's waiters):
     * one that gives up withdraws it, so it holds up nobody until it expires. A release of its lease does that.
     */
    private void withdrawTicket() {
        withdrawTickets(TokenBucketLeases.allSlotKeys(request));
    }

    /** Withdraws its tickets on {@code keys}, where it holds no slot (a release of the lease there would free it). */
    private void withdrawTickets(List<Key> keys) {
        if (lease == null || keys.isEmpty()) {
            return;
        }
        try {
            endpoint.store().execute(new StoreCommand(Key.stored(keys), new Step(Step.Op.RELEASE,
                    new int[] {keys.size()}, Key.limits(keys), 0, 0), lease));
        } catch (RuntimeException e) {
            // the ticket then expires on its own, within half a second
        }
    }

    private void leave() {
        endpoint.getStatistics().slotWaiting(-1);
        slots.left(this);
        TokenBucketTimer.Entry t = timer;
        if (t != null) {
            t.cancel();
        }
    }

    private void handOff(Runnable continuation) {
        TokenBucketWaiters.handOff(endpoint, exchange, callback, continuation);
    }
}
