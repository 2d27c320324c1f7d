package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.TokenBucketRequest.Acquire;
import io.tokenbucket.store.StoreCommand;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;

/**
 * The exchanges of one endpoint that found every in-flight slot of their keys taken, whichever of its producers (the
 * routes sending to it) they came through: they wait here, holding no thread, until a release lets them in, in the
 * order they came (the slots admitted exchanges hold, and their leases, are {@link TokenBucketLeases}'s). One queue
 * per endpoint, not per producer: with one per producer, a release woke the queues in no set order, and a waiter of
 * one route took the slot before an earlier waiter of another.
 *
 * <p>A release anywhere under the endpoint's name in this Camel context wakes every queue of that name
 * ({@link TokenBucketComponent#slotsReleased}). On a shared store (Redis) a slot may also come free in another
 * instance, which publishes its release when the key has waiters ({@link TokenBucketStoreBinding#watchReleases}),
 * or when a dead instance's lease expires, which nobody announces: while exchanges wait, the queue is also tried
 * every {@link #POLL_NANOS}. A queue tries its waiters in arrival order and skips a waiter that shares a key with an
 * earlier one still without a slot, so no later exchange takes a key's slot before an earlier one of this endpoint;
 * a waiter of candidates is then tried on its candidates none of whose slot keys an earlier waiter holds up (a slot
 * of theirs that comes free is one no earlier waiter can use). A new exchange of a key with waiters queues behind
 * them instead of taking a slot freed for them. A waiter leaves
 * when it gets its slot (its reservation then goes on as any other: after its wait for tokens, if any), when its
 * {@code maxWait} (counted from its arrival) has passed, rejected as an exchange whose tokens come too late is, or
 * when its producer stops, abandoned.
 *
 * <p>On a shared store the store also keeps, per key, a queue of the waiters' tickets (each instance's first waiter
 * of a key holds one, renewed by its tries, expiring half a second after its last): a freed slot goes to the oldest
 * ticket, whichever instance holds it, so instances are served in turn instead of the releasing one re-taking its
 * slot. A waiter of several candidates holds a ticket on each, and gives up the others when one admits it.
 */
final class TokenBucketSlots {

    /** How often waiters on a shared store try again without a release in this context: 20 ms. */
    static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private final TokenBucketEndpoint endpoint;
    // in arrival order; a waiter leaves from anywhere in it (its maxWait), so not an ArrayDeque's O(n) remove
    private final LinkedHashSet<TokenBucketSlotWaiter> queue = new LinkedHashSet<>(); // guarded by this
    // how many waiters hold each slot key: every exchange of a limited key asks it, so it must not walk the queue
    private final Map<String, Integer> waitingKeys = new HashMap<>(); // guarded by this
    private boolean draining; // guarded by this
    private boolean again; // guarded by this
    private TokenBucketTimer.Entry poll; // guarded by this

    TokenBucketSlots(TokenBucketEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    /** The endpoint whose exchanges wait here. */
    TokenBucketEndpoint endpoint() {
        return endpoint;
    }

    /** {@code waiter} leaves the queue (once: a second call finds it gone). */
    synchronized void left(TokenBucketSlotWaiter waiter) {
        if (queue.remove(waiter)) {
            for (String key : waiter.keys) {
                waitingKeys.computeIfPresent(key, (k, n) -> n == 1 ? null : n - 1);
            }
        }
    }

    /** The limiter name of the endpoint whose exchanges wait here. */
    String name() {
        return endpoint.getName();
    }

    /** Whether an exchange of {@code request} must queue behind waiters that share one of its slot keys. */
    boolean mustQueue(TokenBucketRequest request) {
        // the common case, answered without the lock every exchange of the endpoint would share: no slot to queue for
        if (request instanceof Acquire a && TokenBucketLeases.slotKeys(a).isEmpty()) {
            return false;
        }
        synchronized (this) {
            if (waitingKeys.isEmpty()) {
                return false;
            }
        }
        Set<String> mine = TokenBucketLeases.anySlotKeys(request);
        synchronized (this) { // a loop, not a stream: every exchange of a limited key asks while any waits
            for (String key : mine) {
                if (waitingKeys.containsKey(key)) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * Makes {@code exchange}, holding a waiting place, wait for a slot; its callback is called later, never from this
     * call.
     *
     * @param producer the producer it came through, whose {@code decide} continues it once it has an answer
     * @param shown the acquire its messages name (its own, or the candidate a refusal named)
     * @param start when the exchange asked for its tokens ({@link System#nanoTime()}): its maxWait counts from then
     */
    void await(TokenBucketProducer producer, Exchange exchange, AsyncCallback callback, TokenBucketRequest request,
               Acquire shown, StoreCommand.Lease lease, long start, long maxWaitNanos) {
        TokenBucketSlotWaiter waiter = new TokenBucketSlotWaiter(this, producer, exchange, callback, request, shown,
                lease, start, start + maxWaitNanos);
        endpoint.getStatistics().slotWaiting(1);
        if (shared()) { // a slot freed in another instance wakes this one's waiters through Redis
            endpoint.storeBinding().watchReleases(() -> endpoint.getComponent().slotsReleased(name()));
        }
        synchronized (this) {
            queue.add(waiter);
            for (String key : waiter.keys) {
                waitingKeys.merge(key, 1, Integer::sum);
            }
            if (shared() && poll == null) {
                schedulePoll();
            }
        }
        try {
            waiter.timer = endpoint.getComponent().timer().schedule(() -> waiter.fail(false, null),
                    start + maxWaitNanos);
        } catch (RejectedExecutionException e) {
            waiter.fail(true, "its maxWait could not be scheduled (" + e.getMessage() + ")");
        }
        drain(); // a slot released between the refusal and the queueing is not missed
    }

    private boolean shared() {
        return endpoint.getConfiguration().getStore() != TokenBucketStoreType.local;
    }

    /** Tries the queue every {@link #POLL_NANOS} while it holds waiters; under this object's lock. */
    private void schedulePoll() {
        try {
            poll = endpoint.getComponent().timer().schedule(() -> {
                synchronized (this) {
                    poll = null;
                    if (queue.isEmpty()) {
                        return;
                    }
                    schedulePoll();
                }
                drainOnWorker();
            }, System.nanoTime() + POLL_NANOS);
        } catch (RejectedExecutionException stopping) {
            poll = null; // the component stops: the waiters are abandoned with it
        }
    }

    private void drainOnWorker() {
        try {
            endpoint.getComponent().worker().execute(this::drain);
        } catch (RejectedExecutionException stopping) {
            // the waiters are abandoned when the producer stops
        }
    }

    /** Fails every waiter that came through {@code producer}, saying {@code why} (the producer or the context stopped). */
    void abandonAll(TokenBucketProducer producer, String why) {
        List<TokenBucketSlotWaiter> all;
        synchronized (this) {
            all = new ArrayList<>(queue);
        }
        for (TokenBucketSlotWaiter w : all) {
            if (w.producer() == producer) {
                w.fail(true, why);
            }
        }
    }

    /**
     * Tries the waiters in arrival order, each once, again while releases came meanwhile. One drain runs at a time;
     * a release during a drain makes it go round again, so none is missed. A store that answers later (Redis) goes on
     * with the next waiter from its answer.
     */
    void drain() {
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
    private void pass(List<TokenBucketSlotWaiter> waiting, int next, Set<String> blocked) {
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
                TokenBucketSlotWaiter w = waiting.get(next++);
                TokenBucketRequest attempt = w.request();
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
                    List<TokenBucketSlotWaiter> rest = waiting;
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
