package io.tokenbucket.camel;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.tokenbucket.camel.TokenBucketRequest.Acquire;
import io.tokenbucket.math.Outcome;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;

/**
 * The exchanges of one producer that hold a reservation and wait for its time, and the hand-off of any exchange to
 * where it continues ({@link #handOff}): the component's worker pool, or the thread that waits for it.
 *
 * <p>A waiter holds no thread: the component's timer wakes it and at once hands it to the worker pool, where the
 * rest of the route runs, so a slow downstream step never delays another release (or to its caller, when that waits:
 * {@link TokenBucketHandOff.CallerWaits}). Each waiter is claimed exactly
 * once, by its release or by {@link Waiter#abandon}; an abandoned exchange (its producer stopped, or its wake-up
 * could not be scheduled) fails with {@link TokenBucketException} and its tokens are refunded. Either way its
 * callback is called once, and its place among the endpoint's {@code maxWaiting} is given back.
 *
 * <p>When the Camel context starts stopping ({@link #stopping}), waiting may hold up the stop for the endpoint's
 * {@code stopTimeout} at most: a waiter whose slot comes later is abandoned at once, as is any that arrives later
 * with such a slot, and whatever still waits when the bound has passed is abandoned then. Camel's graceful shutdown
 * waits for in-flight exchanges up to its own timeout (45 s by default) before it stops the producers, which is
 * what abandoned waiters before this bound existed.
 */
final class TokenBucketWaiters {

    private final TokenBucketEndpoint endpoint;
    private final TokenBucketProducer producer;
    private final Set<Waiter> waiting = ConcurrentHashMap.newKeySet();
    /** When the context's stop must be let go ({@link System#nanoTime()}); meaningful once {@link #stopping}. */
    private volatile long stopDeadline;
    private volatile boolean stopping;
    private volatile boolean deadlinePassed;

    /** The waiters of {@code producer} of {@code endpoint}, and its exchanges waiting in the endpoint's slot queue. */
    TokenBucketWaiters(TokenBucketEndpoint endpoint, TokenBucketProducer producer) {
        this.endpoint = endpoint;
        this.producer = producer;
    }

    /**
     * Makes {@code exchange} wait for its granted reservation, holding the waiting place it took; its callback is
     * called later, never from this call.
     *
     * @param start when the exchange asked for its tokens ({@link System#nanoTime()}), for its waited time
     * @return the waiter, to abandon if the producer stopped meanwhile
     */
    Waiter schedule(Exchange exchange, AsyncCallback callback, Acquire request, Outcome reservation,
                    long start) {
        // the deadline is the slot itself: the timer never runs a task before it, so no release is early
        long slot = System.nanoTime() + reservation.waitTicks();
        Waiter waiter = new Waiter(exchange, callback, request, reservation.remaining(), start, slot);
        waiting.add(waiter);
        try {
            waiter.timer = endpoint.getComponent().timer().schedule(waiter, slot);
        } catch (RejectedExecutionException e) {
            waiter.abandon("its wake-up could not be scheduled (" + e.getMessage() + ")");
        }
        // read after the add: a stop that began meanwhile either sees this waiter or is seen here
        if (deadlinePassed) {
            waiter.abandon(deadlineWhy());
        } else if (stopping && slot - stopDeadline > 0) {
            waiter.abandon(tooLateWhy());
        }
        return waiter;
    }

    /** The producer (re)started: no stop is under way. */
    void started() {
        stopping = false;
        deadlinePassed = false;
    }

    /**
     * The Camel context began to stop at {@code now} ({@link System#nanoTime()}): abandons the waiters whose slot
     * comes after {@code now + stopTimeout}, and schedules the abandonment of every waiter still there then.
     */
    void stopping(long now) {
        stopDeadline = now + TimeUnit.MILLISECONDS.toNanos(endpoint.getConfiguration().getStopTimeout());
        stopping = true;
        for (Waiter waiter : waiting) {
            if (waiter.slot - stopDeadline > 0) {
                waiter.abandon(tooLateWhy());
            }
        }
        Runnable atDeadline = () -> {
            deadlinePassed = true;
            abandonAll(deadlineWhy());
        };
        try {
            // on the timer thread only the hand-off: abandoning refunds tokens, which may be many store calls
            endpoint.getComponent().timer().schedule(() -> {
                try {
                    endpoint.getComponent().worker().execute(atDeadline);
                } catch (RejectedExecutionException stopped) {
                    atDeadline.run();
                }
            }, stopDeadline);
        } catch (RejectedExecutionException timerStopped) {
            atDeadline.run();
        }
    }

    private String tooLateWhy() {
        return "the Camel context began to stop and its tokens would only come after stopTimeout ("
                + endpoint.getConfiguration().getStopTimeout() + " ms)";
    }

    private String deadlineWhy() {
        return "stopTimeout (" + endpoint.getConfiguration().getStopTimeout()
                + " ms) passed after the Camel context began to stop";
    }

    /** Abandons every exchange still waiting, for its tokens or for an in-flight slot, saying {@code why}. */
    void abandonAll(String why) {
        endpoint.slots().abandonAll(producer, why);
        waiting.forEach(waiter -> waiter.abandon(why));
    }

    /** Runs {@code continuation} where {@code exchange} continues ({@link TokenBucketHandOff}). */
    static void handOff(TokenBucketEndpoint endpoint, Exchange exchange, AsyncCallback callback,
                        Runnable continuation) {
        handOff(endpoint, exchange, callback, continuation, null);
    }

    /** As {@link TokenBucketHandOff#execute}, for an exchange of {@code endpoint}. */
    static void handOff(TokenBucketEndpoint endpoint, Exchange exchange, AsyncCallback callback,
                        Runnable continuation, Runnable refused) {
        endpoint.getComponent().handOff().execute(endpoint.getName(), exchange, callback, continuation, refused);
    }

    /**
     * An exchange that holds a reservation and waits for its time. It is its own task twice: on the timer thread it
     * is claimed and handed off (to the worker pool or its waiting caller), where it runs again and continues the
     * exchange, so waiting adds one
     * object to an exchange (this one) besides what the timer and the pool keep.
     */
    final class Waiter extends AtomicBoolean implements Runnable { // its value: claimed, no object of its own
        private static final long serialVersionUID = 1L;
        private final transient Exchange exchange;
        private final transient AsyncCallback callback;
        private final transient Acquire request;
        private final long remaining;
        private final long start;
        private final long slot;
        private boolean released; // set on the timer thread before the hand-off, which publishes it
        private transient volatile TokenBucketTimer.Entry timer;

        Waiter(Exchange exchange, AsyncCallback callback, Acquire request, long remaining, long start,
               long slot) {
            this.exchange = exchange;
            this.slot = slot;
            this.callback = callback;
            this.request = request;
            this.remaining = remaining;
            this.start = start;
        }

        private boolean claim() {
            return compareAndSet(false, true);
        }

        /** On the timer thread: hand the exchange off and return at once; where it was handed: continue it. */
        @Override
        public void run() {
            if (released) {
                long waited = System.nanoTime() - start;
                endpoint.getStatistics().admitted(request.key().stored(), waited);
                TokenBucketProducer.passed(exchange.getMessage(), endpoint.getConfiguration(), waited / 1_000_000,
                        remaining);
                callback.done(false);
            } else if (claim()) {
                waiting.remove(this);
                endpoint.stopWaiting();
                released = true;
                handOff(endpoint, exchange, callback, this);
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
            TokenBucketProducer.refund(endpoint.store(), request.refund()); // to every key it charged
            endpoint.getStatistics().abandoned();
            exchange.setException(TokenBucketExceptions.abandoned(endpoint.getName(), request.key().sent(),
                    request.tokens(), why));
            // this may run on a store's I/O thread: the route's error handling goes where the exchange continues
            handOff(endpoint, exchange, callback, () -> callback.done(false));
        }
    }
}
