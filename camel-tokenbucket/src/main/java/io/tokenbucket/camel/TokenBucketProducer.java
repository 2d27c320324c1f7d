package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;

import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketKeys;
import io.tokenbucket.store.Reservation;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.NoSuchHeaderException;
import org.apache.camel.support.DefaultAsyncProducer;

/**
 * Carries out each exchange's bucket operation (header {@code CamelTokenBucketOperation}, default
 * {@code acquire}) on its key's bucket.
 *
 * <p>{@code acquire} takes the exchange's tokens and lets it continue at once, after its wait, or not. An
 * exchange that must wait has already reserved its tokens (so waiters are served in reservation order); it
 * holds no thread while waiting: the component's timer wakes it and hands it to the worker pool, where the rest
 * of the route runs. Every exchange's callback is called exactly once, also when the producer stops while it
 * waits: it then fails with {@link TokenBucketException} and its tokens are refunded. The other operations
 * never wait and never fail for a lack of tokens.
 *
 * <p>Keys are data from the exchange: limits are decided on the key as sent, and only its stored form is bounded
 * ({@link BucketKeys#bound}). Messages show at most {@value #MAX_VALUE_IN_MESSAGE} characters of any value.
 */
public class TokenBucketProducer extends DefaultAsyncProducer {

    /** The bucket of exchanges without a key when the endpoint does not require one. */
    static final String DEFAULT_KEY = "";

    private static final int MAX_VALUE_IN_MESSAGE = 64;

    private final TokenBucketEndpoint endpoint;
    private final Set<Waiter> waiting = ConcurrentHashMap.newKeySet();

    /**
     * A reservation on a key, with the key's limits.
     *
     * @param key    the key as the exchange sent it
     * @param stored the key as the store keeps it ({@link BucketKeys#bound})
     * @param place  whether it holds one of the endpoint's maxWaiting places (without one it may not wait)
     */
    private record Reserved(String key, String stored, Limits limits, Reservation reservation, boolean place) {
    }

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
        long start = System.nanoTime();
        Message message = exchange.getMessage();
        try {
            TokenBucketOperation operation = operationOf(message);
            if (operation == TokenBucketOperation.acquire) {
                return acquire(exchange, callback, start);
            }
            String key = keyOf(exchange);
            String stored = BucketKeys.bound(key);
            Limits limits = endpoint.limitsFor(key);
            return switch (operation) {
                // a refund of more than the capacity is accepted: it fills the bucket and no more
                case refund -> answer(exchange, callback,
                        endpoint.store().refund(stored, limits, tokensOf(message, Long.MAX_VALUE)),
                        (m, r) -> m.setHeader(TokenBucketConstants.REMAINING, r.remaining()));
                case remove -> answer(exchange, callback, endpoint.store().remove(stored), (m, r) -> { });
                case peek -> answer(exchange, callback,
                        endpoint.store().peek(stored, limits, tokensOf(message, limits.capacity())),
                        TokenBucketProducer::estimate);
                case penalize -> answer(exchange, callback,
                        endpoint.store().penalize(stored, limits, penaltyOf(message)), TokenBucketProducer::estimate);
                default -> throw new IllegalStateException("unreachable: " + operation);
            };
        } catch (Exception e) {
            exchange.setException(e);
            callback.done(true);
            return true;
        }
    }

    private boolean acquire(Exchange exchange, AsyncCallback callback, long start) throws Exception {
        Message message = exchange.getMessage();
        // every header is read and checked before a waiting place is taken, so a bad one never holds a place
        List<String> candidates = candidatesOf(message);
        String key = candidates == null ? keyOf(exchange) : null;
        List<String> keys = candidates == null ? List.of(BucketKeys.bound(key))
                : candidates.stream().map(BucketKeys::bound).toList();
        List<Limits> limits = candidates == null ? List.of(endpoint.limitsFor(key))
                : candidates.stream().map(endpoint::limitsFor).toList();
        long tokens = tokensOf(message, limits.stream().mapToLong(Limits::capacity).min().orElseThrow());

        // A place among maxWaiting is taken before the reservation, so a reservation that has to wait always has
        // one and nothing booked is ever given back (giving back tokens cannot cancel one particular slot). With
        // every place taken only an exchange that need not wait may pass: maxWait 0, and a refusal consumes nothing.
        long maxWait = endpoint.getConfiguration().maxWaitNanos();
        boolean place = maxWait > 0 && endpoint.startWaiting();
        long accept = place ? maxWait : 0;
        CompletableFuture<Reserved> answer;
        try {
            answer = candidates == null
                    ? endpoint.store().reserve(keys.get(0), limits.get(0), tokens, accept).toCompletableFuture()
                            .thenApply(r -> new Reserved(key, keys.get(0), limits.get(0), r, place))
                    : endpoint.store().reserveFreest(keys, limits, tokens, accept).toCompletableFuture()
                            .thenApply(choice -> {
                                String chosen = candidates.get(choice.index());
                                message.setHeader(endpoint.getConfiguration().getKeyHeader(), chosen);
                                return new Reserved(chosen, keys.get(choice.index()), limits.get(choice.index()),
                                        choice.reservation(), place);
                            });
        } catch (RuntimeException e) {
            leave(place);
            throw e;
        }
        if (answer.isDone() && !answer.isCompletedExceptionally()) {
            return decide(exchange, callback, answer.join(), tokens, start, true);
        }
        // A remote store answers on its I/O thread. An exchange that must wait is only scheduled there (cheap,
        // never blocking); every other outcome continues the route, which happens on the worker pool.
        answer.whenComplete((reserved, failure) -> {
            if (failure == null && reserved.reservation().granted() && reserved.reservation().waitNanos() > 0) {
                decide(exchange, callback, reserved, tokens, start, false);
                return;
            }
            continueOnWorker(exchange, callback, () -> {
                if (failure != null) {
                    leave(place);
                    endpoint.getStatistics().storeError();
                    exchange.setException(storeFailed(failure));
                    callback.done(false);
                } else {
                    decide(exchange, callback, reserved, tokens, start, false);
                }
            });
        });
        return false;
    }

    /** Gives back the waiting place of an exchange that will not wait after all. */
    private void leave(boolean place) {
        if (place) {
            endpoint.stopWaiting();
        }
    }

    /**
     * Acts on an acquire's answer; returns true when the callback was called synchronously, false when the
     * exchange waits (or continues elsewhere).
     */
    private boolean decide(Exchange exchange, AsyncCallback callback, Reserved reserved, long tokens, long start,
                           boolean sync) {
        Message message = exchange.getMessage();
        Reservation r = reserved.reservation();
        TokenBucketMode mode = endpoint.getConfiguration().getMode();
        // a granted wait always holds a place: a reservation without one accepted no wait (BucketStore#reserve)
        if (!r.granted() || r.waitNanos() == 0) {
            leave(reserved.place());
        }
        if (!r.granted()) {
            endpoint.getStatistics().rejected(reserved.stored());
            if (mode == TokenBucketMode.check) {
                message.setHeader(TokenBucketConstants.ALLOWED, Boolean.FALSE);
                message.setHeader(TokenBucketConstants.REMAINING, r.remaining());
            } else {
                boolean full = !reserved.place() && endpoint.getConfiguration().maxWaitNanos() > 0;
                exchange.setException(rejected(reserved, tokens, full));
            }
            callback.done(sync);
            return sync;
        }
        if (r.waitNanos() == 0) {
            endpoint.getStatistics().admitted(reserved.stored(), 0);
            passed(message, 0, r.remaining());
            callback.done(sync);
            return sync;
        }
        Waiter waiter = new Waiter(exchange, callback, reserved, tokens, start);
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

    /**
     * Completes an operation other than acquire: sets its headers and continues, at once when the store has
     * answered already, else on the worker pool.
     */
    private <T> boolean answer(Exchange exchange, AsyncCallback callback, CompletionStage<T> stage,
                               BiConsumer<Message, T> headers) {
        CompletableFuture<T> answer = stage.toCompletableFuture();
        if (answer.isDone() && !answer.isCompletedExceptionally()) {
            headers.accept(exchange.getMessage(), answer.join());
            callback.done(true);
            return true;
        }
        answer.whenComplete((value, failure) -> continueOnWorker(exchange, callback, () -> {
            if (failure != null) {
                exchange.setException(storeFailed(failure));
            } else {
                headers.accept(exchange.getMessage(), value);
            }
            callback.done(false);
        }));
        return false;
    }

    private static void estimate(Message message, Reservation r) {
        message.setHeader(TokenBucketConstants.REMAINING, r.remaining());
        message.setHeader(TokenBucketConstants.WAIT_ESTIMATE, TokenBucketEndpoint.ceilMillis(r.waitNanos()));
    }

    private void passed(Message message, long waitedMillis, long remaining) {
        if (endpoint.getConfiguration().getMode() == TokenBucketMode.check) {
            message.setHeader(TokenBucketConstants.ALLOWED, Boolean.TRUE);
        }
        message.setHeader(TokenBucketConstants.WAITED, waitedMillis);
        message.setHeader(TokenBucketConstants.REMAINING, remaining);
    }

    private TokenBucketRejectedException rejected(Reserved reserved, long tokens, boolean full) {
        long waitMillis = TokenBucketEndpoint.ceilMillis(reserved.reservation().waitNanos());
        TokenBucketConfiguration config = endpoint.getConfiguration();
        String why;
        if (full) {
            why = "would have to wait " + waitMillis + " ms, but maxWaiting " + config.getMaxWaiting()
                    + " exchanges are waiting already";
        } else if (config.getMode() != TokenBucketMode.delay) {
            why = "not available at once (mode=" + config.getMode() + "), they would take " + waitMillis + " ms";
        } else if (config.getMaxWait() != null && waitMillis <= TokenBucketConfiguration.MAX_WAIT_MILLIS) {
            why = "not available within maxWait " + config.getMaxWait() + " ms, they would take " + waitMillis + " ms";
        } else {
            why = "would take " + waitMillis + " ms, longer than the longest wait of any exchange (365d, "
                    + TokenBucketConfiguration.MAX_WAIT_MILLIS + " ms)";
        }
        return new TokenBucketRejectedException(endpoint.getName(), reserved.key(), tokens, waitMillis,
                "tokenbucket:" + endpoint.getName() + " rejected key '" + shown(reserved.key()) + "': " + tokens
                        + " token(s) " + why + " (" + TokenBucketEndpoint.describe(reserved.limits()) + ")");
    }

    private TokenBucketStoreException storeFailed(Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        String why = cause instanceof TimeoutException
                ? "did not answer within storeTimeout " + endpoint.getConfiguration().getStoreTimeout() + " ms"
                : "failed: " + cause.getClass().getSimpleName() + ": " + endpoint.redact(cause.getMessage());
        return new TokenBucketStoreException(endpoint.getName(), null, "tokenbucket:" + endpoint.getName()
                + ": the bucket store (" + endpoint.describeStore() + ") " + why
                + "; the exchange was not admitted (onStoreError=fail)", cause);
    }

    private static TokenBucketOperation operationOf(Message message) {
        Object raw = message.getHeader(TokenBucketConstants.OPERATION);
        if (raw == null) {
            return TokenBucketOperation.acquire;
        }
        if (raw instanceof TokenBucketOperation op) {
            return op;
        }
        try {
            return TokenBucketOperation.valueOf(raw.toString().trim().toLowerCase(java.util.Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("Header " + TokenBucketConstants.OPERATION + " must be one of acquire,"
                    + " refund, remove, peek or penalize, was '" + shown(raw) + "'");
        }
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
        return key;
    }

    /**
     * The distinct candidate keys of header {@code CamelTokenBucketCandidates} in their order, or null when the
     * header is absent: a collection or any other {@link Iterable}, an array, or text separated by commas; read no
     * further than one key past {@code maxCandidates}.
     */
    private List<String> candidatesOf(Message message) {
        Object raw = message.getHeader(TokenBucketConstants.CANDIDATES);
        if (raw == null) {
            return null;
        }
        int max = endpoint.getConfiguration().getMaxCandidates();
        Set<String> candidates = new LinkedHashSet<>();
        if (raw instanceof Iterable<?> items) {
            for (Object item : items) {
                addCandidate(candidates, item == null ? "" : item.toString().trim(), max, raw);
            }
        } else if (raw.getClass().isArray()) {
            for (int i = 0; i < java.lang.reflect.Array.getLength(raw); i++) {
                Object item = java.lang.reflect.Array.get(raw, i);
                addCandidate(candidates, item == null ? "" : item.toString().trim(), max, raw);
            }
        } else {
            String text = raw.toString();
            for (int from = 0; from <= text.length(); ) {
                int comma = text.indexOf(',', from);
                int to = comma < 0 ? text.length() : comma;
                addCandidate(candidates, text.substring(from, to).trim(), max, raw);
                from = to + 1;
            }
        }
        if (candidates.isEmpty()) {
            throw new IllegalArgumentException("Header " + TokenBucketConstants.CANDIDATES + " must name at least"
                    + " one key, was '" + shown(raw) + "'");
        }
        return List.copyOf(candidates);
    }

    private void addCandidate(Set<String> candidates, String key, int max, Object raw) {
        if (!key.isEmpty() && candidates.add(key) && candidates.size() > max) {
            throw new IllegalArgumentException("Header " + TokenBucketConstants.CANDIDATES + " names more than"
                    + " maxCandidates " + max + " distinct keys on tokenbucket:" + endpoint.getName() + ", was '"
                    + shown(raw) + "'");
        }
    }

    /** The exchange's cost: header {@code CamelTokenBucketCost} or the cost option, from 1 to {@code capacity}. */
    private long tokensOf(Message message, long capacity) {
        Object raw = message.getHeader(TokenBucketConstants.COST);
        long tokens;
        if (raw == null) {
            tokens = endpoint.getConfiguration().getCost();
        } else if (isWholeNumber(raw)) {
            tokens = ((Number) raw).longValue();
        } else {
            try {
                tokens = Long.parseLong(raw.toString().trim());
            } catch (NumberFormatException e) {
                tokens = 0;
            }
        }
        if (tokens < 1 || tokens > capacity) {
            String range = capacity == Long.MAX_VALUE ? "of at least 1" : "from 1 to the capacity " + capacity
                    + " of tokenbucket:" + endpoint.getName();
            throw new IllegalArgumentException("Header " + TokenBucketConstants.COST + " must be a whole number "
                    + range + ", was '" + shown(raw == null ? tokens : raw) + "'"
                    + (tokens > capacity ? ": such an exchange could never pass" : ""));
        }
        return tokens;
    }

    /**
     * The penalty of header {@code CamelTokenBucketPenalty} in nanoseconds: a whole number of milliseconds, Camel
     * duration text or a {@link java.time.Duration}, from 0 to 365 days.
     */
    private static long penaltyOf(Message message) {
        Object raw = message.getHeader(TokenBucketConstants.PENALTY);
        long millis = TokenBucketOptionText.NOT_A_DURATION;
        if (isWholeNumber(raw)) {
            millis = ((Number) raw).longValue();
        } else if (raw instanceof java.time.Duration d) {
            try {
                millis = d.toMillis();
            } catch (ArithmeticException tooLong) {
                millis = d.isNegative() ? TokenBucketOptionText.NOT_A_DURATION : TokenBucketOptionText.TOO_LONG;
            }
        } else if (raw != null) {
            millis = TokenBucketOptionText.durationMillis(raw.toString());
        }
        if (millis < 0) {
            throw new IllegalArgumentException("Header " + TokenBucketConstants.PENALTY + " must be a duration such"
                    + " as 30s or 2m, or milliseconds, for operation penalize, was '" + shown(raw) + "'");
        }
        if (millis > TokenBucketConfiguration.MAX_WAIT_MILLIS) {
            throw new IllegalArgumentException("Header " + TokenBucketConstants.PENALTY + " must be at most 365d ("
                    + TokenBucketConfiguration.MAX_WAIT_MILLIS + " ms), was '" + shown(raw) + "'");
        }
        return TimeUnit.MILLISECONDS.toNanos(millis);
    }

    /**
     * Whether a header value is a number that is whole and exact as a {@code long}; any other number (1.5, NaN, a
     * huge BigInteger) is read as its text, so it is refused rather than rounded.
     */
    private static boolean isWholeNumber(Object raw) {
        return raw instanceof Long || raw instanceof Integer || raw instanceof Short || raw instanceof Byte;
    }

    /** {@code value} for a message: at most {@value #MAX_VALUE_IN_MESSAGE} characters, then its length. */
    static String shown(Object value) {
        String shown = value instanceof Object[] array ? java.util.Arrays.toString(array) : String.valueOf(value);
        return shown.length() > MAX_VALUE_IN_MESSAGE ? shown.substring(0, MAX_VALUE_IN_MESSAGE) + "... ("
                + shown.length() + " characters)" : shown;
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

    /** An exchange that holds a reservation and waits for its time; claimed exactly once, by release or abandon. */
    private final class Waiter implements Runnable {
        private final Exchange exchange;
        private final AsyncCallback callback;
        private final Reserved reserved;
        private final long tokens;
        private final long start;
        private final AtomicBoolean claimed = new AtomicBoolean();
        private volatile ScheduledFuture<?> timer;

        Waiter(Exchange exchange, AsyncCallback callback, Reserved reserved, long tokens, long start) {
            this.exchange = exchange;
            this.callback = callback;
            this.reserved = reserved;
            this.tokens = tokens;
            this.start = start;
        }

        /** On the timer thread: hand the exchange to the worker pool and return at once. */
        @Override
        public void run() {
            if (claimed.compareAndSet(false, true)) {
                waiting.remove(this);
                endpoint.stopWaiting();
                continueOnWorker(exchange, callback, () -> {
                    long waited = System.nanoTime() - start;
                    endpoint.getStatistics().admitted(reserved.stored(), waited);
                    passed(exchange.getMessage(), waited / 1_000_000, reserved.reservation().remaining());
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
            endpoint.stopWaiting();
            ScheduledFuture<?> t = timer;
            if (t != null) {
                t.cancel(false);
            }
            endpoint.store().refund(reserved.stored(), reserved.limits(), tokens);
            endpoint.getStatistics().abandoned();
            exchange.setException(new TokenBucketException(endpoint.getName(), reserved.key(), "tokenbucket:"
                    + endpoint.getName() + " key '" + shown(reserved.key()) + "': the exchange was waiting for " + tokens
                    + " token(s) when " + why + "; its tokens were refunded"));
            // this may run on a store's I/O thread: the route's error handling goes to the worker pool
            continueOnWorker(exchange, callback, () -> callback.done(false));
        }
    }
}
