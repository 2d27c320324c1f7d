package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.BucketStore;
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
                case refund -> answer(exchange, callback, refund(store, request), request.operation());
                case remove -> answer(exchange, callback, store.remove(request.stored(), request.limits()),
                        request.operation());
                case peek -> answer(exchange, callback, store.peek(request.stored(), request.limits(),
                        request.tokens()), request.operation());
                case penalize -> answer(exchange, callback, store.penalize(request.stored(), request.limits(),
                        request.penaltyNanos()), request.operation());
                case throttled -> answer(exchange, callback, throttle(store, request), request.operation());
                case rate -> answer(exchange, callback, store.rate(request.stored(), request.limits()),
                        request.operation());
            };
        } catch (Exception e) {
            exchange.setException(e);
            callback.done(true);
            return true;
        }
    }

    /** A throttled signal: refused at once, naming the option, on an endpoint whose rate does not adapt. */
    private CompletionStage<Outcome> throttle(BucketStore store, TokenBucketRequest request) {
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
        long maxWait = TokenBucketLimitSource.maxWaitNanos(config);
        boolean place = maxWait > 0 && endpoint.startWaiting();
        long accept = place ? maxWait : 0;
        CompletableFuture<Outcome> answer;
        try {
            TokenBucketRequest.Candidates candidates = request.candidates();
            TokenBucketRequest.Candidates allOf = request.allOf();
            List<String> shared = allOf == null ? List.of() : allOf.stored();
            List<Limits> sharedLimits = allOf == null ? List.of() : allOf.limits();
            if (candidates == null && allOf == null) { // the common case, without the lists of the general one
                answer = store.reserve(request.stored(), request.limits(), request.tokens(), accept)
                        .toCompletableFuture();
            } else if (candidates == null) {
                answer = store.reserveAll(List.of(request.stored()), List.of(request.limits()), shared,
                        sharedLimits, request.tokens(), accept).toCompletableFuture();
            } else if (candidates.with() == null) {
                answer = store.reserveAll(candidates.stored(), candidates.limits(), shared, sharedLimits,
                        request.tokens(), accept).toCompletableFuture();
            } else {
                answer = store.reserveAll(candidates.stored(), candidates.limits(),
                        candidates.with().stream().map(TokenBucketRequest.Candidates::stored).toList(),
                        candidates.with().stream().map(TokenBucketRequest.Candidates::limits).toList(), shared,
                        sharedLimits, request.tokens(), accept).toCompletableFuture();
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
            if (value != null && value.granted() && value.waitTicks() > 0) {
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
     * @param r      the store's answer, naming the chosen candidate when the exchange named candidates
     * @param place  whether the exchange holds one of the endpoint's maxWaiting places (without one it may not wait)
     */
    private boolean decide(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, Outcome r,
                           boolean place, long start, boolean sync) {
        Message message = exchange.getMessage();
        if (request.candidates() != null) {
            request = request.chosen(r.chosen());
            message.setHeader(config.getKeyHeader(), request.key());
        }
        TokenBucketMode mode = config.getMode();
        // a granted wait always holds a place: a reservation without one accepted no wait (BucketStore#reserve)
        if (!r.granted() || r.waitTicks() == 0) {
            leave(place);
        }
        if (!r.granted()) {
            endpoint.getStatistics().rejected(request.stored());
            if (mode == TokenBucketMode.check) {
                message.setHeader(TokenBucketConstants.ALLOWED, Boolean.FALSE);
                message.setHeader(TokenBucketConstants.REMAINING, r.remaining());
            } else {
                boolean full = !place && TokenBucketLimitSource.maxWaitNanos(config) > 0;
                exchange.setException(TokenBucketExceptions.rejected(endpoint.getName(), config, request.key(),
                        request.limits(), request.allOf() == null ? null : request.allOf().keys(), request.tokens(),
                        r.waitTicks(), full));
            }
            callback.done(sync);
            return sync;
        }
        if (r.waitTicks() == 0) {
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
     * @param operation which operation answered: it says which headers the answer sets
     */
    private boolean answer(Exchange exchange, AsyncCallback callback, CompletionStage<Outcome> stage,
                           TokenBucketOperation operation) {
        CompletableFuture<Outcome> answer = stage.toCompletableFuture();
        if (answer.isDone() && !answer.isCompletedExceptionally()) {
            answered(exchange.getMessage(), answer.join(), operation);
            callback.done(true);
            return true;
        }
        answer.whenComplete((value, failure) -> waiters.continueOnWorker(exchange, callback, () -> {
            if (failure != null) {
                exchange.setException(storeFailed(failure));
            } else {
                answered(exchange.getMessage(), value, operation);
            }
            callback.done(false);
        }));
        return false;
    }

    /**
     * Gives the request's tokens back to every key it charges (its own, and its all-of keys), in one store step:
     * answers the fewest tokens any of them has then.
     */
    static CompletionStage<Outcome> refund(BucketStore store, TokenBucketRequest request) {
        return store.refund(request.charged(), request.chargedLimits(), request.tokens());
    }

    /**
     * The headers of a refund, peek or penalize: the tokens remaining, and for the last two the wait estimate; of
     * throttled: the rate and whether it was cut; of rate: the rate alone; a remove has none.
     */
    private static void answered(Message message, Outcome value, TokenBucketOperation operation) {
        switch (operation) {
            case throttled -> {
                message.setHeader(TokenBucketConstants.RATE, value.factor());
                message.setHeader(TokenBucketConstants.RATE_CUT, value.cut());
            }
            case rate -> message.setHeader(TokenBucketConstants.RATE, value.factor());
            case peek, penalize -> {
                message.setHeader(TokenBucketConstants.REMAINING, value.remaining());
                message.setHeader(TokenBucketConstants.WAIT_ESTIMATE, TokenBucketLimitSource.ceilMillis(
                        value.waitTicks()));
            }
            case refund -> message.setHeader(TokenBucketConstants.REMAINING, value.remaining());
            default -> { }
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
    protected void doStart() throws Exception {
        super.doStart();
        waiters.started();
        endpoint.getComponent().register(waiters);
    }

    @Override
    protected void doStop() throws Exception {
        endpoint.getComponent().unregister(waiters);
        waiters.abandonAll("the producer stopped");
        super.doStop();
    }
}
