package io.tokenbucket.camel.producer;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.camel.TokenBucketMode;
import io.tokenbucket.camel.TokenBucketStatistics;
import io.tokenbucket.camel.TokenBucketStoreType;
import io.tokenbucket.camel.producer.TokenBucketRequest.Acquire;
import io.tokenbucket.camel.producer.TokenBucketRequest.AcquireAny;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.StoreCommand;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.StatefulService;

/**
 * The exchanges of one endpoint that wait, whichever route sent them and whatever they wait for: tokens at a known
 * time (their reservation is granted with a wait), an in-flight slot at an unknown one, or a slot and then their
 * tokens. Each holds one of the endpoint's {@code maxWaiting} places and no thread; the queue is given what to retry
 * ({@link Reservation}) and acts on every answer itself, so an exchange leaves it admitted, refused, failed by the
 * store, over its maxWait or abandoned, exactly once, and continues where {@link TokenBucketHandOff} says.
 *
 * <p><b>Slots.</b> A waiter whose keys' slots are all taken waits in arrival order until a release lets it in. A
 * release anywhere under the endpoint's name in this Camel context tries the queue (the component's
 * {@code TokenBucketShared}); on a shared store (Redis) so does a release that another instance publishes, and, while
 * exchanges wait, a try every {@link #POLL_NANOS} (a dead instance's lease expires unannounced). The queue tries its
 * waiters in arrival order and skips one that shares a key with an earlier one still without a slot; a waiter of
 * candidates is tried on those none of whose slot keys an earlier waiter holds up. A new exchange of a key with waiters
 * queues behind them. On a shared store the store also keeps, per key, the waiters' tickets, so a freed slot goes to
 * the oldest, whichever instance holds it ({@link TokenBucketWaiter}).
 *
 * <p><b>Stopping.</b> When the Camel context starts stopping ({@link #stopping}), waiting may hold the stop up for the
 * endpoint's {@code stopTimeout} at most: a waiter whose tokens come later is abandoned at once, as is any that arrives
 * later with such a time, and whatever still waits when the bound has passed is abandoned then, as is any that
 * begins to wait after it.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketWaitQueue {

    /** How often waiters for a slot on a shared store try again without a release in this context: 20 ms. */
    static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    /** Reserves an acquire's tokens (and slots), accepting a wait of {@code acceptNanos}: what the queue retries. */
    @FunctionalInterface
    public interface Reservation {
        CompletionStage<Outcome> reserve(TokenBucketRequest attempt, long acceptNanos, StoreCommand.Lease lease);
    }

    final TokenBucketServices services;
    final Reservation reservation;
    final TokenBucketStatistics statistics;
    final TokenBucketConfiguration config;
    private final AtomicInteger places = new AtomicInteger();
    /** The waiters whose time is known. */
    final Set<TokenBucketWaiter> timed = ConcurrentHashMap.newKeySet();
    // the waiters for a slot, in arrival order; one leaves from anywhere in it (its maxWait): no ArrayDeque
    private final LinkedHashSet<TokenBucketWaiter> queue = new LinkedHashSet<>(); // guarded by this
    // how many waiters hold each slot key: every exchange of a limited key asks it, so it must not walk the queue
    private final Map<String, Integer> waitingKeys = new HashMap<>(); // guarded by this
    private boolean draining; // guarded by this
    private boolean again; // guarded by this
    private TokenBucketTimer.Entry poll; // guarded by this
    private volatile long stopDeadline; // meaningful once stopping
    private volatile boolean stopping;
    private volatile boolean deadlinePassed;
    /** Whether a waiter may wait on after its producer stopped (its route running on): see abandonOrphans. */
    private volatile boolean orphans;

    /** The wait queue of the endpoint of {@code services}, whose waiters retry by {@code reservation}. */
    public TokenBucketWaitQueue(TokenBucketServices services, Reservation reservation) {
        this.services = services;
        this.reservation = reservation;
        this.statistics = services.statistics();
        this.config = services.configuration();
    }

    /** The limiter name of the endpoint whose exchanges wait here. */
    public String name() {
        return services.name();
    }

    /** Takes one of the {@code maxWaiting} places; false when every one is taken. */
    boolean takePlace() {
        int max = config.getMaxWaiting();
        for (int n = places.get(); n < max; n = places.get()) {
            if (places.compareAndSet(n, n + 1)) {
                return true;
            }
        }
        return false;
    }

    /** Gives back a place taken by an exchange that will not wait after all. */
    void leavePlace() {
        places.decrementAndGet();
    }

    /** How many exchanges hold a place: waiting, or about to. */
    public int waiting() {
        return places.get();
    }

    /**
     * An exchange of {@code request} that holds a place, sent through {@code owner} (its producer, whose stop
     * abandons it), its slots held by {@code leases} once granted; {@code start}: when it asked
     * ({@link System#nanoTime()}), from which its wait and maxWait count.
     */
    TokenBucketWaiter waiter(StatefulService owner, Exchange exchange, AsyncCallback callback,
                             TokenBucketRequest request, StoreCommand.Lease lease, TokenBucketLeases leases,
                             long start) {
        return new TokenBucketWaiter(this, owner, exchange, callback, request, lease, leases, start);
    }

    /**
     * Acts on the store's answer {@code r} to {@code request} for waiter {@code w}: true when the exchange may
     * continue now (admitted without a wait, or refused: its exception set), false when it waits (and continues
     * later through its callback).
     */
    boolean answered(TokenBucketWaiter w, TokenBucketRequest request, Outcome r) {
        Acquire acquire = chosen(w.exchange.getMessage(), request, r);
        if (!r.granted() && r.slotless()) {
            w.shown = acquire; // the candidate its refusal named, if it times out
            awaitSlot(w);
            return false;
        }
        if (r.granted() && r.waitTicks() > 0) {
            w.awaitTokens(acquire, r);
            return false;
        }
        leavePlace();
        settled(w.exchange, acquire, w.leases, w.lease, r, TokenBucketLimitSource.maxWaitNanos(config));
        return true;
    }

    /**
     * Acts on the answer {@code r} to an acquire that does not wait: it passes (holding its slots, if any, until it
     * ends) or is refused. {@code acceptedNanos}: the wait it was allowed, 0 when it held no waiting place.
     */
    void settle(Exchange exchange, TokenBucketRequest request, TokenBucketLeases leases, StoreCommand.Lease lease,
                Outcome r, long acceptedNanos) {
        settled(exchange, chosen(exchange.getMessage(), request, r), leases, lease, r, acceptedNanos);
    }

    private void settled(Exchange exchange, Acquire acquire, TokenBucketLeases leases, StoreCommand.Lease lease,
                         Outcome r, long acceptedNanos) {
        if (r.granted()) {
            admitted(exchange, acquire, leases, lease, r.remaining());
        } else {
            refuse(exchange, acquire, r, acceptedNanos);
        }
    }

    /** An acquire granted without a wait, {@code remaining} tokens left: it passes, holding its slots until it ends. */
    void admitted(Exchange exchange, Acquire acquire, TokenBucketLeases leases, StoreCommand.Lease lease,
                  long remaining) {
        leases.holdUntilDone(exchange, acquire, lease);
        statistics.admitted(acquire.key().stored(), 0);
        TokenBucketWaiter.passed(exchange.getMessage(), config, 0, remaining);
    }

    /** Why a waiter whose tokens come at {@code slot} must not wait, the Camel context stopping; null: it may. */
    String stopWhy(long slot) {
        if (deadlinePassed) {
            return "stopTimeout (" + config.getStopTimeout() + " ms) passed after the Camel context began to stop";
        }
        return stopping && slot - stopDeadline > 0 ? "the Camel context began to stop and its tokens would only come"
                + " after stopTimeout (" + config.getStopTimeout() + " ms)" : null;
    }

    /** Takes {@code w} from the slot queue. */
    synchronized void leave(TokenBucketWaiter w) {
        if (queue.remove(w)) {
            w.keys.forEach(key -> waitingKeys.computeIfPresent(key, (k, n) -> n == 1 ? null : n - 1));
        }
    }

    /** The acquire an answer names: the request's own, or the candidate chosen, whose key the exchange then shows. */
    Acquire chosen(Message message, TokenBucketRequest request, Outcome r) {
        if (request instanceof AcquireAny any) {
            Acquire acquire = any.chosen(r.chosen());
            message.setHeader(config.getKeyHeader(), acquire.key().sent());
            return acquire;
        }
        return (Acquire) request;
    }

    /**
     * Refuses {@code acquire} with the answer {@code r}: in check mode by its headers, else by its exception.
     * {@code acceptedNanos}: the wait it was allowed; 0 where maxWait allows one, when every waiting place was taken.
     */
    void refuse(Exchange exchange, Acquire acquire, Outcome r, long acceptedNanos) {
        boolean full = acceptedNanos == 0 && TokenBucketLimitSource.maxWaitNanos(config) > 0;
        statistics.rejected(acquire.key().stored());
        if (config.getMode() == TokenBucketMode.check) {
            exchange.getMessage().setHeader(TokenBucketConstants.ALLOWED, Boolean.FALSE);
            exchange.getMessage().setHeader(TokenBucketConstants.REMAINING, r.remaining());
        } else if (r.slotless()) {
            exchange.setException(TokenBucketExceptions.noSlot(name(), TokenBucketLimitSource.waits(config),
                    TokenBucketWaiter.refused(acquire), false,
                    TokenBucketLimitSource.ceilMillis(statistics.slotWaitNanos(r.waitTicks()))));
        } else {
            exchange.setException(TokenBucketExceptions.rejected(name(), TokenBucketLimitSource.waits(config),
                    TokenBucketWaiter.refused(acquire), TokenBucketLimitSource.ceilMillis(r.waitTicks()), full));
        }
    }

    /** Whether an exchange of {@code request} must queue behind waiters that share one of its slot keys. */
    boolean mustQueue(TokenBucketRequest request) {
        // the common case, answered without the lock every exchange of the endpoint would share: no slot to queue for
        if (request instanceof Acquire a && TokenBucketRequest.slotKeys(a).isEmpty()) {
            return false;
        }
        synchronized (this) { // a loop, not a stream: every exchange of a limited key asks while any waits
            if (!waitingKeys.isEmpty()) {
                for (String key : TokenBucketRequest.anySlotKeys(request)) {
                    if (waitingKeys.containsKey(key)) {
                        return true;
                    }
                }
            }
            return false;
        }
    }

    /** Makes {@code w} wait for a slot, until its maxWait from its start; its callback is called later. */
    void awaitSlot(TokenBucketWaiter w) {
        w.keys = TokenBucketRequest.anySlotKeys(w.request);
        w.deadline = w.start + TokenBucketLimitSource.maxWaitNanos(config);
        statistics.slotWaiting(1);
        if (shared()) { // a slot freed in another instance wakes this one's waiters through Redis
            services.storeBinding().watchReleases(services::slotsReleased);
        }
        synchronized (this) {
            queue.add(w);
            w.keys.forEach(key -> waitingKeys.merge(key, 1, Integer::sum));
            if (shared() && poll == null) {
                schedulePoll();
            }
        }
        w.failAtDeadline();
        drain(); // a slot released between the refusal and the queueing is not missed
        w.abandonIfStopped();
        // read after the add: the stop's deadline passing meanwhile either abandoned this waiter or is seen here (an
        // exchange still in flight may reach the endpoint only after it)
        if (deadlinePassed) {
            w.abandon(stopWhy(0));
        }
    }

    private boolean shared() {
        return config.getStore() != TokenBucketStoreType.local;
    }

    /** Tries the queue every {@link #POLL_NANOS} while it holds waiters; under this object's lock. */
    private void schedulePoll() {
        try {
            poll = services.timer().schedule(() -> {
                synchronized (this) {
                    poll = null;
                    if (queue.isEmpty()) {
                        return;
                    }
                    schedulePoll();
                }
                try {
                    services.worker().execute(this::drain);
                } catch (RejectedExecutionException refused) {
                    // a full pool: try here, or a waiter whose slot is free would wait for room in the pool (its
                    // hand-off then fails it, giving the slot back); a stopping one abandons the waiters itself
                    if (!stopping) {
                        drain();
                    }
                }
            }, System.nanoTime() + POLL_NANOS);
        } catch (RejectedExecutionException stopping) {
            poll = null; // the component stops: the waiters are abandoned with it
        }
    }

    /** Clears a stop: the endpoint (re)started. */
    public void started() {
        stopping = false;
        deadlinePassed = false;
    }

    /**
     * The Camel context began to stop at {@code now} ({@link System#nanoTime()}): abandons the waiters whose tokens
     * come after {@code now + stopTimeout}, and schedules the abandonment of every waiter still there then.
     */
    public void stopping(long now) {
        stopDeadline = now + TimeUnit.MILLISECONDS.toNanos(config.getStopTimeout());
        stopping = true;
        for (TokenBucketWaiter w : timed) {
            String why = stopWhy(w.slot);
            if (why != null) {
                w.abandon(why);
            }
        }
        Runnable atDeadline = () -> {
            deadlinePassed = true;
            abandonAll(null, stopWhy(0));
        };
        try {
            // on the timer thread only the hand-off: abandoning refunds tokens, which may be many store calls
            services.timer().schedule(() -> {
                try {
                    services.worker().execute(atDeadline);
                } catch (RejectedExecutionException stopped) {
                    atDeadline.run();
                }
            }, stopDeadline);
        } catch (RejectedExecutionException timerStopped) {
            atDeadline.run();
        }
    }

    /**
     * Abandons every waiter sent through {@code owner} that stopped with its route
     * ({@link TokenBucketWaiter#ownerStopped}), or every waiter ({@code owner} null), saying {@code why}.
     */
    void abandonAll(Object owner, String why) {
        for (TokenBucketWaiter w : waiters()) {
            if (owner == null || w.owner == owner && w.ownerStopped()) {
                w.abandon(why);
            } else if (w.owner == owner) {
                orphans = true; // a cache let its producer go, its route running on: abandonOrphans looks again
            }
        }
    }

    /**
     * Abandons the waiters whose producer a cache let go ({@code toD}, a recipient list) once the route they wait in
     * has stopped: their producer stopped before the route did, so its stop did not abandon them, and the route's own
     * stop abandons only the waiters of the producers it stops. Runs once a second with the sweep.
     */
    public void abandonOrphans() {
        if (!orphans) {
            return;
        }
        orphans = false;
        for (TokenBucketWaiter w : waiters()) {
            if (w.orphaned()) {
                w.abandon("its route stopped");
            } else if (!w.owner.isRunAllowed()) {
                orphans = true; // its route runs on: looked at again next time
            }
        }
    }

    /** Every waiter, for a slot or for its time. */
    private List<TokenBucketWaiter> waiters() {
        List<TokenBucketWaiter> all;
        synchronized (this) {
            all = new ArrayList<>(queue);
        }
        all.addAll(timed);
        return all;
    }

    /**
     * Tries the slot waiters in arrival order, each once, again while releases came meanwhile. One drain runs at a
     * time; a release during a drain makes it go round again, so none is missed. A store that answers later (Redis)
     * goes on with the next waiter from its answer.
     */
    public void drain() {
        synchronized (this) {
            if (queue.isEmpty()) {
                return; // a release with nobody waiting, the common case
            }
            if (draining) {
                again = true;
                return;
            }
            draining = true;
        }
        pass(null, 0, null);
    }

    /** Goes on with a drain at waiter {@code next} of {@code waiting} (null: a new round), given the keys blocked. */
    private void pass(List<TokenBucketWaiter> waiting, int next, Set<String> blocked) {
        while (true) {
            if (waiting == null) {
                synchronized (this) {
                    again = false;
                    waiting = new ArrayList<>(queue);
                }
                next = 0;
                blocked = new HashSet<>();
            }
            while (next < waiting.size()) {
                if (allBlocked(blocked)) {
                    break; // no waiter left that could get a slot this round: one key's many waiters cost one try
                }
                TokenBucketWaiter w = waiting.get(next++);
                TokenBucketRequest attempt = w.request;
                if (!Collections.disjoint(w.keys, blocked)) {
                    attempt = w.unblocked(blocked);
                    if (attempt == null) {
                        if (!w.gone()) { // one that left holds up nobody
                            blocked.addAll(w.keys);
                        }
                        continue;
                    }
                }
                CompletableFuture<Boolean> left = w.tryAdmit(attempt).toCompletableFuture();
                if (!left.isDone()) {
                    List<TokenBucketWaiter> rest = waiting;
                    int after = next;
                    Set<String> stillBlocked = blocked;
                    left.whenComplete((gone, failure) -> {
                        if (!Boolean.TRUE.equals(gone)) {
                            stillBlocked.addAll(w.keys);
                        }
                        pass(rest, after, stillBlocked);
                    });
                    return;
                }
                if (!left.join()) {
                    blocked.addAll(w.keys);
                }
            }
            synchronized (this) {
                if (!again) {
                    draining = false;
                    return;
                }
            }
            waiting = null;
        }
    }

    /** Whether every key a waiter holds is in {@code blocked}. */
    private synchronized boolean allBlocked(Set<String> blocked) {
        return blocked.size() >= waitingKeys.size() && blocked.containsAll(waitingKeys.keySet());
    }

}
