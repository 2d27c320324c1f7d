package io.tokenbucket.camel;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;

import io.tokenbucket.math.Outcome;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;

/**
 * The exchanges of one producer that hold a reservation and wait for its time, and the hand-off of any exchange to
 * the component's worker pool.
 *
 * <p>A waiter holds no thread: the component's timer wakes it and at once hands it to the worker pool, where the
 * rest of the route runs, so a slow downstream step never delays another release. Each waiter is claimed exactly
 * once, by its release or by {@link Waiter#abandon}; an abandoned exchange (its producer stopped, or its wake-up
 * could not be scheduled) fails with {@link TokenBucketException} and its tokens are refunded. Either way its
 * callback is called once, and its place among the endpoint's {@code maxWaiting} is given back.
 */
final class TokenBucketWaiters {

    private final TokenBucketEndpoint endpoint;
    private final Set<Waiter> waiting = ConcurrentHashMap.newKeySet();

    /** The waiters of a producer of {@code endpoint}. */
    TokenBucketWaiters(TokenBucketEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    /**
     * Makes {@code exchange} wait for its granted reservation, holding the waiting place it took; its callback is
     * called later, never from this call.
     *
     * @param start when the producer received the exchange ({@link System#nanoTime()}), for its waited time
     * @return the waiter, to abandon if the producer stopped meanwhile
     */
    Waiter schedule(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, Outcome reservation,
                    long start) {
        Waiter waiter = new Waiter(exchange, callback, request, reservation.remaining(), start);
        waiting.add(waiter);
        try {
            // the deadline is the slot itself: the timer never runs a task before it, so no release is early
            long slot = System.nanoTime() + reservation.waitTicks();
            waiter.timer = endpoint.getComponent().timer().schedule(waiter, slot);
        } catch (RejectedExecutionException e) {
            waiter.abandon("its wake-up could not be scheduled (" + e.getMessage() + ")");
        }
        return waiter;
    }

    /** Abandons every exchange still waiting, saying {@code why} in its exception. */
    void abandonAll(String why) {
        for (Waiter waiter : waiting) {
            waiter.abandon(why);
        }
    }

    /** Runs {@code continuation} on the worker pool; if the pool refuses it (stopping), fails the exchange here. */
    void continueOnWorker(Exchange exchange, AsyncCallback callback, Runnable continuation) {
        try {
            endpoint.getComponent().worker().execute(continuation);
        } catch (RejectedExecutionException e) {
            if (exchange.getException() == null) {
                exchange.setException(TokenBucketExceptions.workerRefused(endpoint.getName(), e));
            }
            callback.done(false);
        }
    }

    /**
     * An exchange that holds a reservation and waits for its time. It is its own task twice: on the timer thread it
     * is claimed and handed to the worker pool, where it runs again and continues the exchange, so waiting adds one
     * object to an exchange (this one) besides what the timer and the pool keep.
     */
    final class Waiter implements Runnable {
        private static final VarHandle CLAIMED;

        static {
            try {
                CLAIMED = MethodHandles.lookup().findVarHandle(Waiter.class, "claimed", boolean.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final Exchange exchange;
        private final AsyncCallback callback;
        private final TokenBucketRequest request;
        private final long remaining;
        private final long start;
        @SuppressWarnings("unused") // through CLAIMED
        private volatile boolean claimed;
        private boolean released; // set on the timer thread before the hand-off, which publishes it to the worker
        private volatile TokenBucketTimer.Entry timer;

        Waiter(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, long remaining, long start) {
            this.exchange = exchange;
            this.callback = callback;
            this.request = request;
            this.remaining = remaining;
            this.start = start;
        }

        private boolean claim() {
            return CLAIMED.compareAndSet(this, false, true);
        }

        /** On the timer thread: hand the exchange to the worker pool and return at once; there: continue it. */
        @Override
        public void run() {
            if (released) {
                long waited = System.nanoTime() - start;
                endpoint.getStatistics().admitted(request.stored(), waited);
                TokenBucketProducer.passed(exchange.getMessage(), endpoint.getConfiguration(), waited / 1_000_000,
                        remaining);
                callback.done(false);
            } else if (claim()) {
                waiting.remove(this);
                endpoint.stopWaiting();
                released = true;
                continueOnWorker(exchange, callback, this);
            }
        }

        /** Fails the exchange, refunding its tokens, unless it was already released. */
        void abandon(String why) {
            if (!claim()) {
                return;
            }
            waiting.remove(this);
            endpoint.stopWaiting();
            TokenBucketTimer.Entry t = timer;
            if (t != null) {
                t.cancel();
            }
            TokenBucketProducer.refund(endpoint.store(), request); // to every key it charged
            endpoint.getStatistics().abandoned();
            exchange.setException(TokenBucketExceptions.abandoned(endpoint.getName(), request.key(),
                    request.tokens(), why));
            // this may run on a store's I/O thread: the route's error handling goes to the worker pool
            continueOnWorker(exchange, callback, () -> callback.done(false));
        }
    }
}
