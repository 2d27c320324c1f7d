package io.tokenbucket.camel.producer;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.camel.TokenBucketStoreException;
import io.tokenbucket.camel.producer.TokenBucketRequest.Acquire;
import io.tokenbucket.camel.producer.TokenBucketRequest.AcquireAny;
import io.tokenbucket.camel.producer.TokenBucketRequest.Key;
import io.tokenbucket.camel.producer.TokenBucketRequest.Peek;
import io.tokenbucket.camel.producer.TokenBucketRequest.Penalize;
import io.tokenbucket.camel.producer.TokenBucketRequest.Rate;
import io.tokenbucket.camel.producer.TokenBucketRequest.Refund;
import io.tokenbucket.camel.producer.TokenBucketRequest.Remove;
import io.tokenbucket.camel.producer.TokenBucketRequest.Throttled;
import io.tokenbucket.camel.producer.TokenBucketHandOff.CallerWaits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.StoreCommand;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.support.DefaultAsyncProducer;

/**
 * Carries out each exchange's bucket operation (header {@code CamelTokenBucketOperation}, default
 * {@code acquire}) on its key's bucket.
 *
 * <p>{@code acquire} takes the exchange's tokens and lets it continue at once, after its wait, or not. An exchange that
 * must wait has already reserved its tokens (so waiters are served in reservation order); it holds no thread while
 * waiting ({@link TokenBucketWaitQueue}), except with {@code synchronous=true} or when it is transacted: then its
 * caller waits, and continues the route itself. Every exchange's callback is called exactly once, also when the
 * producer stops with its route while it waits: it then fails with {@link io.tokenbucket.camel.TokenBucketException}
 * and its tokens are refunded (a producer that a cache lets go, its route running on, leaves it waiting until that route stops). With all-of keys (header {@code CamelTokenBucketAllOf} or the {@code allOf} option), or candidate
 * groups (header {@code CamelTokenBucketCandidates} with collections as entries), an acquire charges them with its own
 * key (or its chosen candidate and that candidate's group) in one store step, and a refund or an abandoned wait gives
 * back to each. The other operations never wait and never fail for a lack of tokens.
 *
 * <p>The producer only decides: the exchange's headers are read by {@link TokenBucketRequestReader}, the limits come
 * from {@link TokenBucketLimitSource}, the store from {@link TokenBucketStoreBinding}, and every exception from
 * {@link TokenBucketExceptions}. An answer the store has already (the local store always) is acted on in the
 * calling thread, without a further stage.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public class TokenBucketProducer extends DefaultAsyncProducer {

    private final TokenBucketServices services;
    private final TokenBucketConfiguration config;
    /** The limits of each key ({@link TokenBucketLimitSource#limitsFor}). */
    private final Function<String, Limits> limits;
    private final TokenBucketWaitQueue queue;
    private final TokenBucketLeases leases;

    /**
     * A producer for {@code endpoint}, given its parts: its services, the limits of its keys, and its one wait queue,
     * shared by every route that sends to it.
     */
    public TokenBucketProducer(Endpoint endpoint, TokenBucketServices services, TokenBucketLimitSource limitSource,
                               TokenBucketWaitQueue queue) {
        super(endpoint);
        this.services = services;
        this.config = services.configuration();
        this.limits = limitSource::limitsFor;
        this.queue = queue;
        this.leases = new TokenBucketLeases(services);
    }

    @Override
    public boolean process(Exchange exchange, AsyncCallback callback) {
        if ((config.isSynchronous() || exchange.isTransacted()) && !(callback instanceof CallerWaits)) {
            return callerWaits(exchange, callback);
        }
        try {
            TokenBucketRequest request = TokenBucketRequestReader.read(exchange, services.name(), config, limits);
            BucketStore store = services.store();
            CompletionStage<Outcome> answer;
            if (request instanceof Acquire || request instanceof AcquireAny) {
                return acquire(exchange, callback, store, request);
            } else if (request instanceof TokenBucketRequest.ReleaseSlots) {
                leases.releaseNow(exchange);
                callback.done(true);
                return true;
            } else if (request instanceof Refund r) {
                answer = refund(store, r);
            } else if (request instanceof Peek p) {
                answer = store.peek(p.key().stored(), p.key().limits(), p.tokens());
            } else if (request instanceof Penalize p) {
                answer = store.penalize(p.key().stored(), p.key().limits(), p.penaltyNanos());
            } else if (request instanceof Remove r) {
                answer = store.remove(r.key().stored(), r.key().limits());
            } else if (request instanceof Throttled t) {
                answer = throttle(store, t.key());
            } else {
                Key key = ((Rate) request).key();
                answer = store.rate(key.stored(), key.limits());
            }
            return answer(exchange, callback, answer, request);
        } catch (Exception e) {
            exchange.setException(e);
            callback.done(true);
            return true;
        }
    }

    /**
     * Processes {@code exchange} with the calling thread waiting for its outcome, and continuing the route itself
     * (Camel's {@code synchronous}): the thread of a transaction, which camel-jms binds to the listener's thread even
     * where the exchange is not marked transacted, must send the route's later messages. What the timer or a store's
     * I/O thread answers is handed to this thread ({@link CallerWaits}), so nothing hops to the worker pool.
     */
    private boolean callerWaits(Exchange exchange, AsyncCallback callback) {
        CallerWaits caller = new CallerWaits();
        try {
            if (!process(exchange, caller)) {
                caller.await();
            }
        } catch (RuntimeException e) { // a continuation that failed: the exchange goes on with it, once
            exchange.setException(e);
        }
        callback.done(true);
        return true;
    }

    /** A throttled signal: refused at once, naming the option, on an endpoint whose rate does not adapt. */
    private CompletionStage<Outcome> throttle(BucketStore store, Key key) {
        if (key.limits().adaptive() == null) {
            throw TokenBucketExceptions.notAdaptive(services.name(), key.sent(), config.isAdaptive());
        }
        return store.throttle(key.stored(), key.limits()).thenApply(a -> {
            services.statistics().throttled(key.stored(), a);
            return a;
        });
    }

    private boolean acquire(Exchange exchange, AsyncCallback callback, BucketStore store, TokenBucketRequest request) {
        if (request instanceof Acquire a && a.allOf().isEmpty() && a.key().limits().adaptive() == null
                && a.key().limits().inFlight() == 0) {
            // a fixed rate without slots, first without a wait: a grant is what the reservation accepting a wait
            // would have been (LocalBucketStoreTest: a refusal changes nothing, a grant without a wait does not
            // depend on the wait accepted), and it passes without the count of waiting places every exchange of the
            // endpoint shares, answered in a primitive (no answer object); a refusal consumed nothing, and the
            // exchange takes a place and reserves as any other
            long remaining = store.takeNow(a.key().stored(), a.key().limits(), a.tokens());
            if (remaining >= 0) {
                queue.admitted(exchange, a, leases, null, remaining);
                callback.done(true);
                return true;
            }
        }
        // A place among maxWaiting is taken before the reservation, so a reservation that has to wait always has
        // one and nothing booked is ever given back (giving back tokens cannot cancel one particular slot). With
        // every place taken only an exchange that need not wait may pass: maxWait 0, and a refusal consumes nothing.
        long maxWait = TokenBucketLimitSource.maxWaitNanos(config);
        boolean place = maxWait > 0 && queue.takePlace();
        long accept = place ? maxWait : 0;
        StoreCommand.Lease lease = leases.lease(request); // null unless a key has an in-flight limit on Redis
        if (maxWait > 0 && queue.mustQueue(request)) { // earlier exchanges wait for a slot it needs
            if (!place) { // every waiting place taken: it may not wait, nor take a slot an earlier waiter wants
                Acquire shown = request instanceof Acquire a ? a : ((AcquireAny) request).chosen(0);
                services.statistics().rejected(shown.key().stored());
                exchange.setException(TokenBucketExceptions.noSlot(services.name(),
                        TokenBucketLimitSource.waits(config), TokenBucketWaiter.refused(shown), false,
                        TokenBucketLimitSource.ceilMillis(services.statistics().slotWaitNanos(0))));
                callback.done(true);
                return true;
            }
            queue.awaitSlot(queue.waiter(this, exchange, callback, request, lease, leases, System.nanoTime()));
            return false;
        }
        Outcome atOnce;
        CompletableFuture<Outcome> answer = null;
        long start = 0; // the clock is read for an answer that may come later only
        try {
            atOnce = reserveNow(store, request, accept, lease);
            if (atOnce == null) {
                start = System.nanoTime();
                answer = reserve(store, request, accept, lease).toCompletableFuture();
                atOnce = answer.isDone() && !answer.isCompletedExceptionally() ? answer.join() : null;
            }
        } catch (RuntimeException e) {
            if (place) {
                queue.leavePlace();
            }
            throw e;
        }
        if (atOnce != null) {
            if (place && waits(atOnce)) {
                return queue.answered(queue.waiter(this, exchange, callback, request, lease, leases,
                        System.nanoTime()), request, atOnce);
            }
            if (place) {
                queue.leavePlace();
            }
            queue.settle(exchange, request, leases, lease, atOnce, accept);
            callback.done(true);
            return true;
        }
        long sent = start;
        // A remote store answers on its I/O thread. An exchange that must wait is only scheduled there (cheap,
        // never blocking), and one refused a slot queued for one there, in the order of the answers (on the pool,
        // two threads could queue them the other way round and the later take the first slot); every other outcome
        // continues the route, which happens on the worker pool (or on the caller, when it waits: TokenBucketHandOff).
        answer.whenComplete((value, failure) -> {
            if (!place) {
                services.handOff().execute(services.name(), exchange, callback, () -> {
                    if (failure != null) {
                        services.statistics().storeError();
                        exchange.setException(storeFailed(failure));
                    } else {
                        queue.settle(exchange, request, leases, lease, value, 0);
                    }
                    callback.done(false);
                }, () -> refused(exchange, request, lease, value));
                return;
            }
            TokenBucketWaiter w = queue.waiter(this, exchange, callback, request, lease, leases, sent);
            if (failure != null) {
                w.failed(failure);
            } else if (waits(value)) {
                queue.answered(w, request, value);
            } else {
                w.continueLater(request, value, () -> {
                    if (queue.answered(w, request, value)) {
                        callback.done(false);
                    }
                });
            }
        });
        return false;
    }

    /** Whether an answer makes an exchange that holds a waiting place wait: for its tokens, or for a slot. */
    private static boolean waits(Outcome r) {
        return r.granted() ? r.waitTicks() > 0 : r.slotless();
    }

    /** An exchange granted its slots but refused a continuation by the worker pool: the slots go back when it ends. */
    private void refused(Exchange exchange, TokenBucketRequest request, StoreCommand.Lease lease, Outcome r) {
        if (r != null && r.granted()) {
            leases.holdUntilDone(exchange, queue.chosen(exchange.getMessage(), request, r), lease);
        }
    }

    /**
     * The store's answer within the call ({@link BucketStore#reserveNow}) to an acquire of one key without a lease,
     * accepting a wait of {@code accept} nanoseconds; null when it has none (a remote store, several keys, a lease).
     */
    private static Outcome reserveNow(BucketStore store, TokenBucketRequest request, long accept,
                                      StoreCommand.Lease lease) {
        return request instanceof Acquire a && a.allOf().isEmpty() && lease == null
                ? store.reserveNow(a.key().stored(), a.key().limits(), a.tokens(), accept) : null;
    }

    /**
     * Reserves an acquire's tokens, accepting a wait of {@code accept} nanoseconds: on its key alone (the common
     * case, without the lists of the general one), with its all-of keys, or on the freest of its candidates.
     */
    public static CompletionStage<Outcome> reserve(BucketStore store, TokenBucketRequest request, long accept,
                                                    StoreCommand.Lease lease) {
        if (request instanceof Acquire a) {
            if (a.allOf().isEmpty() && lease == null) {
                return store.reserve(a.key().stored(), a.key().limits(), a.tokens(), accept);
            }
            return store.execute(StoreCommand.reserve(List.of(List.of(a.key().stored())),
                    List.of(List.of(a.key().limits())), Key.stored(a.allOf()), Key.limits(a.allOf()), a.tokens(),
                    accept).with(lease));
        }
        AcquireAny any = (AcquireAny) request;
        List<List<String>> groups = any.candidates().stream().map(c -> Key.stored(c.group())).toList();
        List<List<Limits>> groupLimits = any.candidates().stream().map(c -> Key.limits(c.group())).toList();
        return store.execute(StoreCommand.reserve(groups, groupLimits, Key.stored(any.allOf()),
                Key.limits(any.allOf()), any.tokens(), accept).with(lease));
    }

    /**
     * Completes an operation other than acquire: sets its headers and continues, at once when the store has
     * answered already, else where the exchange continues ({@link TokenBucketHandOff}).
     *
     * @param request the request answered: its operation says which headers the answer sets
     */
    private boolean answer(Exchange exchange, AsyncCallback callback, CompletionStage<Outcome> stage,
                           TokenBucketRequest request) {
        CompletableFuture<Outcome> answer = stage.toCompletableFuture();
        if (answer.isDone() && !answer.isCompletedExceptionally()) {
            answered(exchange.getMessage(), answer.join(), request);
            callback.done(true);
            return true;
        }
        answer.whenComplete((value, failure) -> services.handOff().execute(services.name(),
                exchange, callback, () -> {
            if (failure != null) {
                exchange.setException(storeFailed(failure));
            } else {
                answered(exchange.getMessage(), value, request);
            }
            callback.done(false);
        }, null));
        return false;
    }

    /**
     * Gives a refund's tokens back to every key it names (its own, and its all-of keys), in one store step: answers
     * the fewest tokens any of them has then.
     */
    static CompletionStage<Outcome> refund(BucketStore store, Refund refund) {
        return store.refund(refund.stored(), refund.limits(), refund.tokens());
    }

    /**
     * The headers of a refund, peek or penalize: the tokens remaining, and for the last two the wait estimate; of
     * throttled: the rate and whether it was cut; of rate: the rate alone; a remove has none.
     */
    private void answered(Message message, Outcome value, TokenBucketRequest request) {
        if (request instanceof Throttled || request instanceof Rate) {
            message.setHeader(TokenBucketConstants.RATE, value.factor());
            if (request instanceof Throttled) {
                message.setHeader(TokenBucketConstants.RATE_CUT, value.cut());
            }
        } else if (request instanceof Refund || request instanceof Peek || request instanceof Penalize) {
            message.setHeader(TokenBucketConstants.REMAINING, value.remaining());
            if (!(request instanceof Refund)) {
                // every slot held: when one may be free, as a refusal for want of one says
                message.setHeader(TokenBucketConstants.WAIT_ESTIMATE, TokenBucketLimitSource.ceilMillis(
                        value.slotless() ? services.statistics().slotWaitNanos(value.waitTicks())
                                : value.waitTicks()));
            }
        }
    }

    private TokenBucketStoreException storeFailed(Throwable failure) {
        return services.storeFailed(failure);
    }

    @Override
    protected void doStop() throws Exception {
        queue.abandonAll(this, "the producer stopped");
        super.doStop();
    }
}
