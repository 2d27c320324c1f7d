package io.tokenbucket.camel;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

import io.tokenbucket.camel.TokenBucketRequest.Acquire;
import io.tokenbucket.camel.TokenBucketRequest.Key;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.StoreCommand;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;
import org.apache.camel.spi.Synchronization;

/**
 * The in-flight slots of one producer's exchanges: each admitted exchange gives its slots back exactly once, when its
 * unit of work ends (completed or failed, however it ends), and the exchanges that found every slot taken wait here,
 * holding no thread, until a release lets them in, in the order they came.
 *
 * <p>A release anywhere under the endpoint's name in this Camel context wakes every producer's queue of that name
 * ({@link TokenBucketComponent#slotsReleased}). A queue tries its waiters in arrival order and skips a waiter that
 * shares a key with an earlier one still without a slot, so no later exchange takes a key's slot before an earlier
 * one; a new exchange of a key with waiters queues behind them instead of taking a slot freed for them. A waiter
 * leaves when it gets its slot (its reservation then goes on as any other: after its wait for tokens, if any), when
 * its {@code maxWait} (counted from its arrival) has passed, rejected as an exchange whose tokens come too late is,
 * or when its producer stops, abandoned.
 */
final class TokenBucketSlots {

    private final TokenBucketEndpoint endpoint;
    private final Retry retry;
    private final ArrayDeque<SlotWaiter> queue = new ArrayDeque<>(); // guarded by this
    private boolean draining; // guarded by this
    private boolean again; // guarded by this

    /** Runs a waiter's reservation again and acts on a grant or a refusal that is not for want of a slot. */
    interface Retry {
        /** The store's answer to the waiter's reservation, accepting a wait of {@code maxWaitNanos}. */
        Outcome reserve(TokenBucketRequest request, long maxWaitNanos);

        /** Continues the exchange with {@code outcome} (not slotless), holding its waiting place. */
        void decide(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, Outcome outcome,
                    long start);
    }

    TokenBucketSlots(TokenBucketEndpoint endpoint, Retry retry) {
        this.endpoint = endpoint;
        this.retry = retry;
    }

    /** The limiter name of the endpoint whose exchanges wait here. */
    String name() {
        return endpoint.getName();
    }

    /** The keys of {@code acquire} (its key and all-of keys) that have an in-flight limit. */
    static List<Key> slotKeys(Acquire acquire) {
        List<Key> keys = new ArrayList<>(1 + acquire.allOf().size());
        if (acquire.key().limits().inFlight() > 0) {
            keys.add(acquire.key());
        }
        for (Key k : acquire.allOf()) {
            if (k.limits().inFlight() > 0) {
                keys.add(k);
            }
        }
        return keys;
    }

    /**
     * Gives the slots {@code acquire} took back when {@code exchange}'s unit of work ends, exactly once. Call it when
     * the reservation is granted; nothing happens when it took none.
     */
    void holdUntilDone(Exchange exchange, Acquire acquire) {
        List<Key> keys = slotKeys(acquire);
        if (!keys.isEmpty()) {
            exchange.getExchangeExtension().addOnCompletion(new Release(keys));
        }
    }

    /**
     * The stored keys with an in-flight limit that {@code request} (an acquire, or an acquire of the freest
     * candidate) may take a slot of: of every candidate and group, and its all-of keys.
     */
    private static Set<String> anySlotKeys(TokenBucketRequest request) {
        if (request instanceof Acquire a) {
            return stored(slotKeys(a));
        }
        TokenBucketRequest.AcquireAny any = (TokenBucketRequest.AcquireAny) request;
        Set<String> keys = new HashSet<>();
        for (int c = 0; c < any.candidates().size(); c++) {
            keys.addAll(stored(slotKeys(any.chosen(c))));
        }
        return keys;
    }

    /** Whether an exchange of {@code request} must queue behind waiters that share one of its slot keys. */
    boolean mustQueue(TokenBucketRequest request) {
        synchronized (this) {
            if (queue.isEmpty()) {
                return false;
            }
        }
        Set<String> mine = anySlotKeys(request);
        return !mine.isEmpty() && waitingKeys().stream().anyMatch(mine::contains);
    }

    private synchronized Set<String> waitingKeys() {
        Set<String> keys = new HashSet<>();
        for (SlotWaiter w : queue) {
            keys.addAll(w.keys);
        }
        return keys;
    }

    private static Set<String> stored(List<Key> keys) {
        Set<String> stored = new HashSet<>();
        for (Key k : keys) {
            stored.add(k.stored());
        }
        return stored;
    }

    /**
     * Makes {@code exchange}, holding a waiting place, wait for a slot; its callback is called later, never from this
     * call.
     *
     * @param start when the producer received the exchange ({@link System#nanoTime()}): its maxWait counts from then
     */
    void await(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, Acquire shown, long start,
               long maxWaitNanos) {
        SlotWaiter waiter = new SlotWaiter(exchange, callback, request, shown, start, start + maxWaitNanos);
        synchronized (this) {
            queue.add(waiter);
        }
        try {
            waiter.timer = endpoint.getComponent().timer().schedule(() -> waiter.fail(false, null),
                    waiter.deadline);
        } catch (RejectedExecutionException e) {
            waiter.fail(true, "its maxWait could not be scheduled (" + e.getMessage() + ")");
        }
        drain(); // a slot released between the refusal and the queueing is not missed
    }

    /** Fails every waiter, saying {@code why} (the producer or the context stopped). */
    void abandonAll(String why) {
        List<SlotWaiter> all;
        synchronized (this) {
            all = new ArrayList<>(queue);
        }
        for (SlotWaiter w : all) {
            w.fail(true, why);
        }
    }

    /** The number of exchanges waiting for a slot. */
    synchronized int size() {
        return queue.size();
    }

    /**
     * Tries the waiters in arrival order, each once, again while releases came meanwhile. One thread drains at a
     * time; a release during a drain makes that thread go round again, so none is missed.
     */
    void drain() {
        synchronized (this) {
            if (draining) {
                again = true;
                return;
            }
            draining = true;
        }
        while (true) {
            List<SlotWaiter> waiting;
            synchronized (this) {
                again = false;
                waiting = new ArrayList<>(queue);
            }
            Set<String> blocked = new HashSet<>();
            for (SlotWaiter w : waiting) {
                if (w.keys.stream().anyMatch(blocked::contains) || !w.tryAdmit()) {
                    blocked.addAll(w.keys);
                }
            }
            synchronized (this) {
                if (!again) {
                    draining = false;
                    return;
                }
            }
        }
    }

    /** An exchange waiting for a slot. */
    private final class SlotWaiter {
        private final Exchange exchange;
        private final AsyncCallback callback;
        private final TokenBucketRequest request;
        /** The acquire its messages name: its own, or the candidate the refusal named. */
        private final Acquire shown;
        private final long start;
        private final long deadline;
        private final Set<String> keys;
        private boolean done; // guarded by this waiter
        private volatile TokenBucketTimer.Entry timer;

        SlotWaiter(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, Acquire shown, long start,
                   long deadline) {
            this.exchange = exchange;
            this.callback = callback;
            this.request = request;
            this.shown = shown;
            this.start = start;
            this.deadline = deadline;
            this.keys = anySlotKeys(request);
        }

        /**
         * Runs the reservation again: false when there is still no slot (it goes on waiting), true when it left
         * (admitted, refused for its tokens, or already gone).
         */
        boolean tryAdmit() {
            Outcome outcome;
            synchronized (this) {
                if (done) {
                    return true;
                }
                try {
                    outcome = retry.reserve(request, Math.max(0, deadline - System.nanoTime()));
                } catch (RuntimeException e) {
                    outcome = null;
                    exchange.setException(e);
                }
                if (outcome != null && outcome.slotless()) {
                    return false;
                }
                done = true;
            }
            leave();
            if (outcome == null) {
                endpoint.stopWaiting();
                continueOnWorker(() -> callback.done(false));
            } else {
                Outcome granted = outcome;
                continueOnWorker(() -> retry.decide(exchange, callback, request, granted, start));
            }
            return true;
        }

        /** Its maxWait passed ({@code abandoned} false) or it is abandoned: fails it unless it left already. */
        void fail(boolean abandoned, String why) {
            synchronized (this) {
                if (done) {
                    return;
                }
                done = true;
            }
            leave();
            endpoint.stopWaiting();
            Key key = shown.key();
            if (abandoned) {
                endpoint.getStatistics().abandoned();
                exchange.setException(TokenBucketExceptions.abandonedSlot(endpoint.getName(), key.sent(), why));
            } else {
                endpoint.getStatistics().rejected(key.stored());
                exchange.setException(TokenBucketExceptions.noSlot(endpoint.getName(), endpoint.getConfiguration(),
                        shown, true));
            }
            continueOnWorker(() -> callback.done(false));
        }

        private void leave() {
            synchronized (TokenBucketSlots.this) {
                queue.remove(this);
            }
            TokenBucketTimer.Entry t = timer;
            if (t != null) {
                t.cancel();
            }
        }

        private void continueOnWorker(Runnable continuation) {
            try {
                endpoint.getComponent().worker().execute(continuation);
            } catch (RejectedExecutionException e) {
                if (exchange.getException() == null) {
                    exchange.setException(TokenBucketExceptions.workerRefused(endpoint.getName(), e));
                }
                callback.done(false);
            }
        }
    }

    /** Gives an exchange's slots back when its unit of work ends, once, then wakes the waiters of the name. */
    private final class Release extends AtomicBoolean implements Synchronization {
        private static final long serialVersionUID = 1L;
        private final transient List<Key> keys;

        Release(List<Key> keys) {
            this.keys = keys;
        }

        @Override
        public void onComplete(Exchange exchange) {
            release();
        }

        @Override
        public void onFailure(Exchange exchange) {
            release();
        }

        private void release() {
            if (!compareAndSet(false, true)) {
                return;
            }
            List<Limits> limits = Key.limits(keys);
            endpoint.store().execute(new StoreCommand(Key.stored(keys),
                    new Step(Step.Op.RELEASE, new int[] {keys.size()}, limits, 0, 0)))
                    .whenComplete((released, failure) -> endpoint.getComponent().slotsReleased(endpoint.getName()));
        }
    }
}
