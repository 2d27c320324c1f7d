package io.tokenbucket.camel;

import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import io.tokenbucket.store.BucketKeys;
import io.tokenbucket.store.Reservation;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.NoSuchHeaderException;
import org.apache.camel.support.DefaultAsyncProducer;

/**
 * Takes each exchange's tokens from its key's bucket, and lets it continue at once, after its wait, or not.
 *
 * <p>An exchange that must wait has already reserved its tokens (so waiters are served in reservation order);
 * it holds no thread while waiting: the component's timer wakes it and hands it to the worker pool, where the
 * rest of the route runs. Every exchange's callback is called exactly once, also when the producer stops
 * while it waits: it then fails with {@link TokenBucketException} and its tokens are refunded.
 */
public class TokenBucketProducer extends DefaultAsyncProducer {

    /** The bucket of exchanges without a key when the endpoint does not require one. */
    static final String DEFAULT_KEY = "";

    private static final int MAX_VALUE_IN_MESSAGE = 64;

    private final TokenBucketEndpoint endpoint;
    private final Set<Waiter> waiting = ConcurrentHashMap.newKeySet();

    /** A producer for {@code endpoint}. */
    public TokenBucketProducer(TokenBucketEndpoint endpoint) {
        super(endpoint);
        this.endpoint = endpoint;
    }

    @Override
    public TokenBucketEndpoint getEndpoint() {
        return endpoint;
    }

    @Override
    public boolean process(Exchange exchange, AsyncCallback callback) {
        String key;
        long tokens;
        CompletableFuture<Reservation> answer;
        long start = System.nanoTime();
        try {
            key = keyOf(exchange);
            tokens = tokensOf(exchange.getMessage());
            answer = endpoint.store().reserve(key, endpoint.limit(), tokens,
                    endpoint.getConfiguration().maxWaitNanos()).toCompletableFuture();
        } catch (Exception e) {
            exchange.setException(e);
            callback.done(true);
            return true;
        }
        if (answer.isDone() && !answer.isCompletedExceptionally()) {
            return decide(exchange, callback, key, tokens, start, answer.join(), true);
        }
        // A remote store answers on its I/O thread. An exchange that must wait is only scheduled there (cheap,
        // never blocking); every other outcome continues the route, which happens on the worker pool.
        answer.whenComplete((reservation, failure) -> {
            if (failure == null && reservation.granted() && reservation.waitNanos() > 0) {
                decide(exchange, callback, key, tokens, start, reservation, false);
                return;
            }
            continueOnWorker(exchange, callback, () -> {
                if (failure != null) {
                    exchange.setException(storeFailed(key, failure));
                    callback.done(false);
                } else {
                    decide(exchange, callback, key, tokens, start, reservation, false);
                }
            });
        });
        return false;
    }

    /**
     * Acts on the store's answer; returns true when the callback was called synchronously, false when the
     * exchange waits (or continues elsewhere).
     */
    private boolean decide(Exchange exchange, AsyncCallback callback, String key, long tokens, long start,
                           Reservation r, boolean sync) {
        Message message = exchange.getMessage();
        TokenBucketMode mode = endpoint.getConfiguration().getMode();
        if (!r.granted()) {
            if (mode == TokenBucketMode.check) {
                message.setHeader(TokenBucketConstants.ALLOWED, Boolean.FALSE);
                message.setHeader(TokenBucketConstants.REMAINING, r.remaining());
            } else {
                exchange.setException(rejected(key, tokens, r));
            }
            callback.done(sync);
            return sync;
        }
        if (r.waitNanos() == 0) {
            passed(message, 0, r.remaining());
            callback.done(sync);
            return sync;
        }
        Waiter waiter = new Waiter(exchange, callback, key, tokens, start, r.remaining());
        waiting.add(waiter);
        try {
            waiter.timer = endpoint.getComponent().timer().schedule(waiter, r.waitNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            waiter.abandon("its wake-up could not be scheduled (" + e.getMessage() + ")");
        }
        if (!isRunAllowed()) {
            waiter.abandon("the producer stopped"); // stopped between the reservation and the scheduling
        }
        return false;
    }

    private void passed(Message message, long waitedMillis, long remaining) {
        if (endpoint.getConfiguration().getMode() == TokenBucketMode.check) {
            message.setHeader(TokenBucketConstants.ALLOWED, Boolean.TRUE);
        }
        message.setHeader(TokenBucketConstants.WAITED, waitedMillis);
        message.setHeader(TokenBucketConstants.REMAINING, remaining);
    }

    private TokenBucketRejectedException rejected(String key, long tokens, Reservation r) {
        long waitMillis = ceilMillis(r.waitNanos());
        Long maxWait = endpoint.getConfiguration().getMaxWait();
        String bound = endpoint.getConfiguration().getMode() == TokenBucketMode.delay
                ? "within maxWait " + maxWait + " ms" : "at once (mode=" + endpoint.getConfiguration().getMode() + ")";
        return new TokenBucketRejectedException(endpoint.getName(), key, tokens, waitMillis,
                "tokenbucket:" + endpoint.getName() + " rejected key '" + key + "': " + tokens
                        + " token(s) not available " + bound + ", they would take " + waitMillis + " ms ("
                        + endpoint.describeLimit() + ")");
    }

    private TokenBucketStoreException storeFailed(String key, Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        String why = cause instanceof TimeoutException
                ? "did not answer within storeTimeout " + endpoint.getConfiguration().getStoreTimeout() + " ms"
                : "failed: " + cause.getClass().getSimpleName() + ": " + cause.getMessage();
        return new TokenBucketStoreException(endpoint.getName(), key, "tokenbucket:" + endpoint.getName() + " key '"
                + key + "': the bucket store (" + endpoint.describeStore() + ") " + why
                + "; the exchange was not admitted (onStoreError=fail)", cause);
    }

    private String keyOf(Exchange exchange) throws NoSuchHeaderException {
        String header = endpoint.getConfiguration().getKeyHeader();
        String key = exchange.getMessage().getHeader(header, String.class);
        if (key == null || key.isBlank()) {
            if (endpoint.getConfiguration().isRequireKey()) {
                throw new NoSuchHeaderException("tokenbucket:" + endpoint.getName()
                        + " needs a non-blank key in header " + header + " (requireKey=true)", exchange, header);
            }
            return DEFAULT_KEY;
        }
        return BucketKeys.bound(key);
    }

    private long tokensOf(Message message) {
        Object raw = message.getHeader(TokenBucketConstants.TOKENS);
        if (raw == null) {
            return endpoint.getConfiguration().getTokens();
        }
        long capacity = endpoint.limit().capacity();
        long tokens;
        if (raw instanceof Long || raw instanceof Integer || raw instanceof Short || raw instanceof Byte) {
            tokens = ((Number) raw).longValue();
        } else {
            try {
                tokens = Long.parseLong(raw.toString().trim());
            } catch (NumberFormatException e) {
                tokens = 0;
            }
        }
        if (tokens < 1 || tokens > capacity) {
            String shown = String.valueOf(raw);
            if (shown.length() > MAX_VALUE_IN_MESSAGE) {
                shown = shown.substring(0, MAX_VALUE_IN_MESSAGE) + "...";
            }
            throw new IllegalArgumentException("Header " + TokenBucketConstants.TOKENS + " must be a whole number"
                    + " from 1 to the capacity " + capacity + " of tokenbucket:" + endpoint.getName() + ", was '"
                    + shown + "'" + (tokens > capacity ? ": such an exchange could never pass" : ""));
        }
        return tokens;
    }

    /** Runs {@code continuation} on the worker pool; if the pool refuses it (stopping), fails the exchange here. */
    private void continueOnWorker(Exchange exchange, AsyncCallback callback, Runnable continuation) {
        try {
            endpoint.getComponent().worker().execute(continuation);
        } catch (RejectedExecutionException e) {
            if (exchange.getException() == null) {
                exchange.setException(new TokenBucketException(endpoint.getName(), null, "tokenbucket:"
                        + endpoint.getName() + " could not continue the exchange on its worker pool: "
                        + e.getMessage(), e));
            }
            callback.done(false);
        }
    }

    @Override
    protected void doStop() throws Exception {
        for (Waiter waiter : waiting) {
            waiter.abandon("the producer stopped");
        }
        super.doStop();
    }

    private static long ceilMillis(long nanos) {
        return (nanos + 999_999) / 1_000_000;
    }

    /** An exchange that holds a reservation and waits for its time; claimed exactly once, by release or abandon. */
    private final class Waiter implements Runnable {
        private final Exchange exchange;
        private final AsyncCallback callback;
        private final String key;
        private final long tokens;
        private final long start;
        private final long remaining;
        private final AtomicBoolean claimed = new AtomicBoolean();
        private volatile ScheduledFuture<?> timer;

        Waiter(Exchange exchange, AsyncCallback callback, String key, long tokens, long start, long remaining) {
            this.exchange = exchange;
            this.callback = callback;
            this.key = key;
            this.tokens = tokens;
            this.start = start;
            this.remaining = remaining;
        }

        /** On the timer thread: hand the exchange to the worker pool and return at once. */
        @Override
        public void run() {
            if (claimed.compareAndSet(false, true)) {
                waiting.remove(this);
                continueOnWorker(exchange, callback, () -> {
                    passed(exchange.getMessage(), (System.nanoTime() - start) / 1_000_000, remaining);
                    callback.done(false);
                });
            }
        }

        /** Fails the exchange, refunding its tokens, unless it was already released. */
        void abandon(String why) {
            if (!claimed.compareAndSet(false, true)) {
                return;
            }
            waiting.remove(this);
            ScheduledFuture<?> t = timer;
            if (t != null) {
                t.cancel(false);
            }
            endpoint.store().refund(key, endpoint.limit(), tokens);
            exchange.setException(new TokenBucketException(endpoint.getName(), key, "tokenbucket:"
                    + endpoint.getName() + " key '" + key + "': the exchange was waiting for " + tokens
                    + " token(s) when " + why + "; its tokens were refunded"));
            // this may run on a store's I/O thread: the route's error handling goes to the worker pool
            continueOnWorker(exchange, callback, () -> callback.done(false));
        }
    }
}
