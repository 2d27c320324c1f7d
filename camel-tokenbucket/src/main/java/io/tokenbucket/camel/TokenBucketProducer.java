package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import io.tokenbucket.math.Limits;
import io.tokenbucket.store.Adaptation;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.Choice;
import io.tokenbucket.store.Reservation;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.support.DefaultAsyncProducer;

/**
 * Carries out each exchange's bucket operation (header {@code CamelTokenBucketOperation}, default
 * {@code acquire}) on its key's bucket.
 *
 * <p>{@code acquire} takes the exchange's tokens and lets it continue at once, after its wait, or not. An
 * exchange that must wait has already reserved its tokens (so waiters are served in reservation order); it
 * holds no thread while waiting ({@link TokenBucketWaiters}). Every exchange's callback is called exactly once,
 * also when the producer stops while it waits: it then fails with {@link TokenBucketException} and its tokens are
 * refunded. With all-of keys (header {@code CamelTokenBucketAllOf} or the {@code allOf} option), or candidate groups
 * (header {@code CamelTokenBucketCandidates} with collections as entries), an acquire charges them with its own key
 * (or its chosen candidate and that candidate's group) in one store step, and a refund or an abandoned wait gives
 * back to each. The other operations never wait and never fail for a lack of tokens.
 *
 * <p>The producer only decides: the exchange's headers are read by {@link TokenBucketRequest}, the limits come
 * from {@link TokenBucketLimitSource}, the store from {@link TokenBucketStoreBinding}, and every exception from
 * {@link TokenBucketExceptions}. An answer the store has already (the local store always) is acted on in the
 * calling thread, without a further stage.
 */
public class TokenBucketProducer extends DefaultAsyncProducer {

    private final TokenBucketEndpoint endpoint;
    private final TokenBucketConfiguration config;
    private final TokenBucketWaiters waiters;

    /** A producer for {@code endpoint}. */
    public TokenBucketProducer(TokenBucketEndpoint endpoint) {
        super(endpoint);
        this.endpoint = endpoint;
        this.config = endpoint.getConfiguration();
        this.waiters = new TokenBucketWaiters(endpoint);
    }

    @Override
    public TokenBucketEndpoint getEndpoint() {
        return endpoint;
    }

    @Override
    public boolean process(Exchange exchange, AsyncCallback callback) {
        long start = System.nanoTime();
        try {
            TokenBucketRequest request = TokenBucketRequest.read(exchange, endpoint.getName(), config,
                    endpoint.limitSource());
            BucketStore store = endpoint.store();
            return switch (request.operation()) {
                case acquire -> acquire(exchange, callback, store, request, start);
                case refund -> answer(exchange, callback, refund(store, request), false);
                case remove -> answer(exchange, callback, store.remove(request.stored()), false);
                case peek -> answer(exchange, callback, store.peek(request.stored(), request.limits(),
                        request.tokens()), true);
                case penalize -> answer(exchange, callback, store.penalize(request.stored(), request.limits(),
                        request.penaltyNanos()), true);
                case throttled -> answer(exchange, callback, throttle(store, request), false);
                // the rate alone, as a number: only a signal's answer says whether it cut
                case rate -> answer(exchange, callback, store.rate(request.stored(), request.limits())
                        .thenApply(Adaptation::factor), false);
            };
        } catch (Exception e) {
            exchange.setException(e);
            callback.done(true);
            return true;
        }
    }

    /** A throttled signal: refused at once, naming the option, on an endpoint whose rate does not adapt. */
    private CompletionStage<Adaptation> throttle(BucketStore store, TokenBucketRequest request) {
        if (request.limits().adaptive() == null) {
            throw TokenBucketExceptions.notAdaptive(endpoint.getName(), request.key(), config.isAdaptive());
        }
        return store.throttle(request.stored(), request.limits()).thenApply(a -> {
            endpoint.getStatistics().throttled(request.stored(), a);
            return a;
        });
    }

    private boolean acquire(Exchange exchange, AsyncCallback callback, BucketStore store, TokenBucketRequest request,
                            long start) {
        // A place among maxWaiting is taken before the reservation, so a reservation that has to wait always has
        // one and nothing booked is ever given back (giving back tokens cannot cancel one particular slot). With
        // every place taken only an exchange that need not wait may pass: maxWait 0, and a refusal consumes nothing.
        long maxWait = config.maxWaitNanos();
        boolean place = maxWait > 0 && endpoint.startWaiting();
        long accept = place ? maxWait : 0;
        TokenBucketRequest.Candidates candidates = request.candidates();
        TokenBucketRequest.Candidates allOf = request.allOf();
        CompletableFuture<?> answer;
        try {
            if (candidates != null && candidates.with() != null) {
                answer = store.reserveAll(candidates.stored(), candidates.limits(),
                        candidates.with().stream().map(TokenBucketRequest.Candidates::stored).toList(),
                        candidates.with().stream().map(TokenBucketRequest.Candidates::limits).toList(),
                        allOf != null ? allOf.stored() : List.of(), allOf != null ? allOf.limits() : List.of(),
                        request.tokens(), accept).toCompletableFuture();
            } else if (allOf != null) {
                answer = store.reserveAll(candidates != null ? candidates.stored() : List.of(request.stored()),
                        candidates != null ? candidates.limits() : List.of(request.limits()), allOf.stored(),
                        allOf.limits(), request.tokens(), accept).toCompletableFuture();
            } else {
                answer = (candidates == null
                        ? store.reserve(request.stored(), request.limits(), request.tokens(), accept)
                        : store.reserveFreest(candidates.stored(), candidates.limits(), request.tokens(), accept))
                        .toCompletableFuture();
            }
        } catch (RuntimeException e) {
            leave(place);
            throw e;
        }
        if (answer.isDone() && !answer.isCompletedExceptionally()) {
            return decide(exchange, callback, request, answer.join(), place, start, true);
        }
        // A remote store answers on its I/O thread. An exchange that must wait is only scheduled there (cheap,
        // never blocking); every other outcome continues the route, which happens on the worker pool.
        answer.whenComplete((value, failure) -> {
            Reservation r = failure == null ? reservationOf(value) : null;
            if (r != null && r.granted() && r.waitNanos() > 0) {
                decide(exchange, callback, request, value, place, start, false);
                return;
            }
            waiters.continueOnWorker(exchange, callback, () -> {
                if (failure != null) {
                    leave(place);
                    endpoint.getStatistics().storeError();
                    exchange.setException(storeFailed(failure));
                    callback.done(false);
                } else {
                    decide(exchange, callback, request, value, place, start, false);
                }
            });
        });
        return false;
    }

    /** The reservation in a store's answer to an acquire: a {@link Reservation}, or a {@link Choice} of candidates. */
    private static Reservation reservationOf(Object answer) {
        return answer instanceof Choice choice ? choice.reservation() : (Reservation) answer;
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
     *
     * @param answer the store's {@link Reservation}, or its {@link Choice} when the exchange named candidates
     * @param place  whether the exchange holds one of the endpoint's maxWaiting places (without one it may not wait)
     */
    private boolean decide(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, Object answer,
                           boolean place, long start, boolean sync) {
        Message message = exchange.getMessage();
        Reservation r = reservationOf(answer);
        if (answer instanceof Choice choice && request.candidates() != null) {
            request = request.chosen(choice.index());
            message.setHeader(config.getKeyHeader(), request.key());
        }
        TokenBucketMode mode = config.getMode();
        // a granted wait always holds a place: a reservation without one accepted no wait (BucketStore#reserve)
        if (!r.granted() || r.waitNanos() == 0) {
            leave(place);
        }
        if (!r.granted()) {
            endpoint.getStatistics().rejected(request.stored());
            if (mode == TokenBucketMode.check) {
                message.setHeader(TokenBucketConstants.ALLOWED, Boolean.FALSE);
                message.setHeader(TokenBucketConstants.REMAINING, r.remaining());
            } else {
                boolean full = !place && config.maxWaitNanos() > 0;
                exchange.setException(TokenBucketExceptions.rejected(endpoint.getName(), config, request.key(),
                        request.limits(), request.allOf() == null ? null : request.allOf().keys(), request.tokens(),
                        r.waitNanos(), full));
            }
            callback.done(sync);
            return sync;
        }
        if (r.waitNanos() == 0) {
            endpoint.getStatistics().admitted(request.stored(), 0);
            passed(message, config, 0, r.remaining());
            callback.done(sync);
            return sync;
        }
        TokenBucketWaiters.Waiter waiter = waiters.schedule(exchange, callback, request, r, start);
        if (!isRunAllowed()) {
            waiter.abandon("the producer stopped"); // stopped between the reservation and the scheduling
        }
        return false;
    }

    /**
     * Completes an operation other than acquire: sets its headers and continues, at once when the store has
     * answered already, else on the worker pool.
     *
     * @param estimate whether the answer's wait is set as header {@code CamelTokenBucketWaitEstimate} (peek, penalize)
     */
    private boolean answer(Exchange exchange, AsyncCallback callback, CompletionStage<?> stage, boolean estimate) {
        CompletableFuture<?> answer = stage.toCompletableFuture();
        if (answer.isDone() && !answer.isCompletedExceptionally()) {
            answered(exchange.getMessage(), answer.join(), estimate);
            callback.done(true);
            return true;
        }
        answer.whenComplete((value, failure) -> waiters.continueOnWorker(exchange, callback, () -> {
            if (failure != null) {
                exchange.setException(storeFailed(failure));
            } else {
                answered(exchange.getMessage(), value, estimate);
            }
            callback.done(false);
        }));
        return false;
    }

    /**
     * Gives the request's tokens back to every key it charges (its own, and its all-of keys, each a refund of its
     * own): answers the fewest tokens any of them has then, once all have answered.
     */
    static CompletionStage<Reservation> refund(BucketStore store, TokenBucketRequest request) {
        if (request.allOf() == null) {
            return store.refund(request.stored(), request.limits(), request.tokens());
        }
        List<String> keys = request.charged();
        List<Limits> limits = request.chargedLimits();
        CompletableFuture<Reservation> fewest = store.refund(keys.get(0), limits.get(0), request.tokens())
                .toCompletableFuture();
        for (int i = 1; i < keys.size(); i++) {
            fewest = fewest.thenCombine(store.refund(keys.get(i), limits.get(i), request.tokens()),
                    (a, b) -> a.remaining() <= b.remaining() ? a : b);
        }
        return fewest;
    }

    /**
     * The headers of a refund, peek or penalize: the tokens remaining, and the wait estimate; of throttled and rate:
     * the rate (and whether it was cut); a remove has none.
     */
    private static void answered(Message message, Object value, boolean estimate) {
        if (value instanceof Adaptation a) {
            message.setHeader(TokenBucketConstants.RATE, a.factor());
            message.setHeader(TokenBucketConstants.RATE_CUT, a.cut());
        } else if (value instanceof Double factor) {
            message.setHeader(TokenBucketConstants.RATE, factor);
        }
        if (value instanceof Reservation r) {
            message.setHeader(TokenBucketConstants.REMAINING, r.remaining());
            if (estimate) {
                message.setHeader(TokenBucketConstants.WAIT_ESTIMATE, TokenBucketLimitSource.ceilMillis(r.waitNanos()));
            }
        }
    }

    /** The headers of an exchange that got its tokens, after waiting {@code waitedMillis}. */
    static void passed(Message message, TokenBucketConfiguration config, long waitedMillis, long remaining) {
        if (config.getMode() == TokenBucketMode.check) {
            message.setHeader(TokenBucketConstants.ALLOWED, Boolean.TRUE);
        }
        message.setHeader(TokenBucketConstants.WAITED, waitedMillis);
        message.setHeader(TokenBucketConstants.REMAINING, remaining);
    }

    private TokenBucketStoreException storeFailed(Throwable failure) {
        return TokenBucketExceptions.storeFailed(endpoint.getName(), endpoint.storeBinding(), config.getStoreTimeout(),
                failure);
    }

    @Override
    protected void doStop() throws Exception {
        waiters.abandonAll("the producer stopped");
        super.doStop();
    }
}
