package io.tokenbucket.camel;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.camel.TokenBucketRequest.Acquire;
import io.tokenbucket.camel.TokenBucketRequest.AcquireAny;
import io.tokenbucket.camel.TokenBucketRequest.Key;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.StoreCommand;
import org.apache.camel.AsyncCallback;
import org.apache.camel.Exchange;
import org.apache.camel.spi.Synchronization;

/**
 * The in-flight slots of one producer's exchanges: each admitted exchange holds its slots under a lease of its own
 * and gives them back exactly once, when its unit of work ends (completed or failed, however it ends); the exchanges
 * that found every slot taken wait here, holding no thread, until a release lets them in, in the order they came.
 *
 * <p>A release anywhere under the endpoint's name in this Camel context wakes every producer's queue of that name
 * ({@link TokenBucketComponent#slotsReleased}). On a shared store (Redis) a slot may also come free in another
 * instance, which publishes its release when the key has waiters ({@link TokenBucketStoreBinding#watchReleases}),
 * or when a dead instance's lease expires, which nobody announces: while exchanges wait, the queue is also tried
 * every {@link #POLL_NANOS}. A queue tries its waiters in arrival order and skips a waiter that shares a key with an
 * earlier one still without a slot, so no later exchange takes a key's slot before an earlier one of this producer;
 * a new exchange of a key with waiters queues behind them instead of taking a slot freed for them. A waiter leaves
 * when it gets its slot (its reservation then goes on as any other: after its wait for tokens, if any), when its
 * {@code maxWait} (counted from its arrival) has passed, rejected as an exchange whose tokens come too late is, or
 * when its producer stops, abandoned.
 *
 * <p>On a shared store the store also keeps, per key, a queue of the waiters' tickets (each instance's first waiter
 * of a key holds one, renewed by its tries, expiring half a second after its last): a freed slot goes to the oldest
 * ticket, whichever instance holds it, so instances are served in turn instead of the releasing one re-taking its
 * slot. A waiter of several candidates holds a ticket on each, and gives up the others when one admits it.
 *
 * <p>On a shared store each lease lasts {@code inFlightLease} unless renewed, and every lease of a running exchange
 * is renewed a third of that time after its last renewal, so a live exchange never loses its slot and a dead
 * instance's slots come back after at most the lease time. The local store's slots live as long as their JVM.
 */
final class TokenBucketSlots {

    /** How often waiters on a shared store try again without a release in this context: 20 ms. */
    static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    /** This JVM's part of every lease id: random, so that two instances never share an id. */
    private static final String INSTANCE = Long.toString(Math.abs(new java.security.SecureRandom().nextLong()), 36);
    private static final AtomicLong LEASES = new AtomicLong();

    private final TokenBucketEndpoint endpoint;
    private final Retry retry;
    private final ArrayDeque<SlotWaiter> queue = new ArrayDeque<>(); // guarded by this
    private final Set<Release> held = ConcurrentHashMap.newKeySet();
    private boolean draining; // guarded by this
    private boolean again; // guarded by this
    private TokenBucketTimer.Entry poll; // guarded by this
    private volatile TokenBucketTimer.Entry renewal;

    /** Runs a waiter's reservation again and acts on a grant or a refusal that is not for want of a slot. */
    interface Retry {
        /** The store's answer to the waiter's reservation under {@code lease}, accepting a wait of {@code maxWaitNanos}. */
        CompletionStage<Outcome> reserve(TokenBucketRequest request, StoreCommand.Lease lease, long maxWaitNanos);

        /** Continues the exchange with {@code outcome} (not slotless), holding its waiting place. */
        void decide(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, StoreCommand.Lease lease,
                    Outcome outcome, long start);
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
        boolean own = acquire.key().limits().inFlight() > 0;
        if (acquire.allOf().isEmpty()) { // the common case, asked by every granted acquire: no list built
            return own ? List.of(acquire.key()) : List.of();
        }
        List<Key> keys = new ArrayList<>(1 + acquire.allOf().size());
        if (own) {
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
     * The stored keys with an in-flight limit that {@code request} (an acquire, or an acquire of the freest candidate)
     * may take a slot of: of every candidate and group, and its all-of keys.
     */
    private static Set<String> anySlotKeys(TokenBucketRequest request) {
        return stored(allSlotKeys(request));
    }

    /** The keys with an in-flight limit of every candidate (and group) of {@code request} and its all-of keys, once. */
    private static List<Key> allSlotKeys(TokenBucketRequest request) {
        if (request instanceof Acquire a) {
            return slotKeys(a);
        }
        AcquireAny any = (AcquireAny) request;
        java.util.Map<String, Key> keys = new java.util.LinkedHashMap<>();
        for (int c = 0; c < any.candidates().size(); c++) {
            for (Key k : slotKeys(any.chosen(c))) {
                keys.putIfAbsent(k.stored(), k);
            }
        }
        return new ArrayList<>(keys.values());
    }

    private static Set<String> stored(List<Key> keys) {
        Set<String> stored = new HashSet<>();
        for (Key k : keys) {
            stored.add(k.stored());
        }
        return stored;
    }

    /**
     * A lease for a reservation of {@code request} on a shared store; null when none of its keys has an in-flight limit,
     * and on the local store, whose slots need none.
     */
    StoreCommand.Lease lease(TokenBucketRequest request) {
        if (!shared() || anySlotKeys(request).isEmpty()) {
            return null;
        }
        return new StoreCommand.Lease(INSTANCE + ":" + Long.toString(LEASES.incrementAndGet(), 36),
                TimeUnit.MILLISECONDS.toNanos(endpoint.getConfiguration().getInFlightLease()));
    }

    /**
     * Gives the slots {@code acquire} took under {@code lease} back when {@code exchange}'s unit of work ends, exactly
     * once, and renews them until then on a shared store. Call it when the reservation is granted; nothing happens
     * when it took none.
     */
    void holdUntilDone(Exchange exchange, Acquire acquire, StoreCommand.Lease lease) {
        List<Key> keys = slotKeys(acquire);
        if (!keys.isEmpty()) {
            Release release = new Release(keys, lease);
            endpoint.getStatistics().inFlight(1);
            Held taken = held(exchange);
            if (taken == null) {
                taken = new Held(exchange);
                exchange.setProperty(heldProperty(), taken);
            }
            taken.releases.add(release);
            if (shared()) {
                held.add(release);
                scheduleRenewal();
            }
            exchange.getExchangeExtension().addOnCompletion(release);
        }
    }

    /** The exchange property that lists the releases of the slots an exchange holds on this endpoint. */
    private String heldProperty() {
        return "CamelTokenBucketSlots." + endpoint.getName();
    }

    /**
     * The releases of the slots {@code exchange} itself holds on this endpoint, or null. A copy of an exchange (split,
     * multicast, wire tap) has its properties, this one too, but none of its slots: those stay the original's.
     */
    private Held held(Exchange exchange) {
        Held taken = exchange.getProperty(heldProperty(), Held.class);
        return taken != null && taken.owner == exchange ? taken : null;
    }

    /** The releases of the slots one exchange, its owner, holds on an endpoint (an exchange property's value). */
    private static final class Held {
        private final Exchange owner;
        private final List<Release> releases = new ArrayList<>(1);

        Held(Exchange owner) {
            this.owner = owner;
        }
    }

    /**
     * Gives back now every slot {@code exchange} holds on this endpoint (operation {@code release}); each is given
     * back once, so its release when the exchange ends does nothing.
     */
    void releaseNow(Exchange exchange) {
        Held taken = held(exchange);
        if (taken != null) {
            exchange.removeProperty(heldProperty());
            taken.releases.forEach(Release::release);
        }
    }

    private boolean shared() {
        return endpoint.getConfiguration().getStore() != TokenBucketStoreType.local;
    }

    /** Whether an exchange of {@code request} must queue behind waiters that share one of its slot keys. */
    boolean mustQueue(TokenBucketRequest request) {
        // the common case, answered without the lock every exchange of the endpoint would share: no slot to queue for
        if (request instanceof Acquire a && slotKeys(a).isEmpty()) {
            return false;
        }
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

    /**
     * Makes {@code exchange}, holding a waiting place, wait for a slot; its callback is called later, never from this
     * call.
     *
     * @param shown the acquire its messages name (its own, or the candidate a refusal named)
     * @param start when the exchange asked for its tokens ({@link System#nanoTime()}): its maxWait counts from then
     */
    void await(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, Acquire shown,
               StoreCommand.Lease lease, long start, long maxWaitNanos) {
        SlotWaiter waiter = new SlotWaiter(exchange, callback, request, shown, lease, start, start + maxWaitNanos);
        endpoint.getStatistics().slotWaiting(1);
        if (shared()) { // a slot freed in another instance wakes this one's waiters through Redis
            endpoint.storeBinding().watchReleases(() -> endpoint.getComponent().slotsReleased(name()));
        }
        synchronized (this) {
            queue.add(waiter);
            if (shared() && poll == null) {
                schedulePoll();
            }
        }
        try {
            waiter.timer = endpoint.getComponent().timer().schedule(() -> waiter.fail(false, null),
                    waiter.deadline);
        } catch (RejectedExecutionException e) {
            waiter.fail(true, "its maxWait could not be scheduled (" + e.getMessage() + ")");
        }
        drain(); // a slot released between the refusal and the queueing is not missed
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

    /** Renews every held lease a third of the lease time from now, and again after that while any is held. */
    private void scheduleRenewal() {
        if (renewal != null) {
            return;
        }
        synchronized (this) {
            if (renewal != null) {
                return;
            }
            long every = TimeUnit.MILLISECONDS.toNanos(endpoint.getConfiguration().getInFlightLease()) / 3;
            try {
                renewal = endpoint.getComponent().timer().schedule(() -> {
                    renewal = null;
                    if (!held.isEmpty()) {
                        scheduleRenewal();
                        try {
                            endpoint.getComponent().worker().execute(() -> held.forEach(Release::renew));
                        } catch (RejectedExecutionException stopping) {
                            // the context stops; its exchanges end and release their slots
                        }
                    }
                }, System.nanoTime() + every);
            } catch (RejectedExecutionException stopping) {
                renewal = null;
            }
        }
    }

    private void drainOnWorker() {
        try {
            endpoint.getComponent().worker().execute(this::drain);
        } catch (RejectedExecutionException stopping) {
            // the waiters are abandoned when the producer stops
        }
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
    private void pass(List<SlotWaiter> waiting, int next, Set<String> blocked) {
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
                SlotWaiter w = waiting.get(next++);
                if (w.keys.stream().anyMatch(blocked::contains)) {
                    blocked.addAll(w.keys);
                    continue;
                }
                CompletableFuture<Boolean> left = w.tryAdmit().toCompletableFuture();
                if (!left.isDone()) {
                    List<SlotWaiter> rest = waiting;
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

    /** An exchange waiting for a slot. */
    private final class SlotWaiter {
        private final Exchange exchange;
        private final AsyncCallback callback;
        private final TokenBucketRequest request;
        /** The acquire its messages name: its own, or the candidate the refusal named. */
        private final Acquire shown;
        private final StoreCommand.Lease lease;
        private final long start;
        private final long deadline;
        private final Set<String> keys;
        private boolean done; // guarded by this waiter
        private boolean trying; // guarded by this waiter: a retry is in flight
        private String failWhy; // guarded by this waiter: a failure that came during a retry, applied after it
        private boolean failAbandoned; // guarded by this waiter
        private volatile TokenBucketTimer.Entry timer;

        SlotWaiter(Exchange exchange, AsyncCallback callback, TokenBucketRequest request, Acquire shown,
                   StoreCommand.Lease lease, long start, long deadline) {
            this.exchange = exchange;
            this.callback = callback;
            this.request = request;
            this.shown = shown;
            this.lease = lease;
            this.start = start;
            this.deadline = deadline;
            this.keys = anySlotKeys(request);
        }

        /**
         * Runs the reservation again: false when there is still no slot (it goes on waiting), true when it left
         * (admitted, refused for its tokens, failed, or already gone).
         */
        CompletionStage<Boolean> tryAdmit() {
            synchronized (this) {
                if (done) {
                    return CompletableFuture.completedFuture(true);
                }
                trying = true;
            }
            CompletionStage<Outcome> answer;
            try {
                // the first waiter of its keys here: its tries hold its place among every instance's waiters
                answer = retry.reserve(request, lease == null ? null : lease.withTicket(),
                        Math.max(0, deadline - System.nanoTime()));
            } catch (RuntimeException e) {
                answer = CompletableFuture.failedFuture(e);
            }
            return answer.handle(this::answered);
        }

        private boolean answered(Outcome outcome, Throwable failure) {
            String why;
            boolean abandoned;
            synchronized (this) {
                trying = false;
                if (failure == null && outcome.slotless() && failWhy == null && !failAbandoned) {
                    return false; // no slot yet: it waits on
                }
                done = true;
                why = failWhy;
                abandoned = failAbandoned;
            }
            leave();
            if (failure == null && !outcome.slotless()) { // admitted or refused for its tokens, even if late
                if (!outcome.granted()) {
                    withdrawTicket(); // an admission takes its ticket out; a refusal must, or it holds up the key
                }
                continueOnWorker(() -> retry.decide(exchange, callback, request, lease, outcome, start));
            } else if (failure != null) {
                endpoint.stopWaiting();
                endpoint.getStatistics().storeError();
                exchange.setException(TokenBucketExceptions.storeFailed(endpoint.getName(), endpoint.storeBinding(),
                        endpoint.getConfiguration().getStoreTimeout(), failure));
                continueOnWorker(() -> callback.done(false));
            } else {
                failNow(abandoned, why);
            }
            return true;
        }

        /**
         * Its maxWait passed ({@code abandoned} false) or it is abandoned: fails it unless it left already; during a
         * retry, once the retry has answered (a slot it got then is used: the exchange goes on).
         */
        void fail(boolean abandoned, String why) {
            synchronized (this) {
                if (done) {
                    return;
                }
                if (trying) {
                    failAbandoned = abandoned;
                    failWhy = why == null ? "" : why;
                    return;
                }
                done = true;
            }
            leave();
            failNow(abandoned, why);
        }

        private void failNow(boolean abandoned, String why) {
            withdrawTicket();
            endpoint.stopWaiting();
            if (abandoned) {
                endpoint.getStatistics().abandoned();
                exchange.setException(TokenBucketExceptions.abandonedSlot(endpoint.getName(), shown.key().sent(),
                        why));
            } else {
                endpoint.getStatistics().rejected(shown.key().stored());
                exchange.setException(TokenBucketExceptions.noSlot(endpoint.getName(), endpoint.getConfiguration(),
                        shown, true));
            }
            continueOnWorker(() -> callback.done(false));
        }

        /**
         * On a shared store a waiter holds a ticket in its keys' queues (its place among every instance's waiters):
         * one that gives up withdraws it, so it holds up nobody until it expires. A release of its lease does that.
         */
        private void withdrawTicket() {
            List<Key> keys = allSlotKeys(request);
            if (lease == null || keys.isEmpty()) {
                return;
            }
            try {
                endpoint.store().execute(new StoreCommand(Key.stored(keys), new Step(Step.Op.RELEASE,
                        new int[] {keys.size()}, Key.limits(keys), 0, 0), lease));
            } catch (RuntimeException e) {
                // the ticket then expires on its own, within half a second
            }
        }

        private void leave() {
            endpoint.getStatistics().slotWaiting(-1);
            synchronized (TokenBucketSlots.this) {
                queue.remove(this);
            }
            TokenBucketTimer.Entry t = timer;
            if (t != null) {
                t.cancel();
            }
        }

        private void continueOnWorker(Runnable continuation) {
            TokenBucketWaiters.continueOnWorker(endpoint, exchange, callback, continuation);
        }
    }

    /** Gives an exchange's slots back when its unit of work ends, once, then wakes the waiters of the name. */
    private final class Release extends AtomicBoolean implements Synchronization {
        private static final long serialVersionUID = 1L;
        private final transient List<Key> keys;
        private final transient StoreCommand.Lease lease;

        Release(List<Key> keys, StoreCommand.Lease lease) {
            this.keys = keys;
            this.lease = lease;
        }

        @Override
        public void onComplete(Exchange exchange) {
            release();
        }

        @Override
        public void onFailure(Exchange exchange) {
            release();
        }

        private StoreCommand command(Step.Op op) {
            return new StoreCommand(Key.stored(keys), new Step(op, new int[] {keys.size()}, Key.limits(keys), 0, 0),
                    lease);
        }

        /** Keeps the slots from expiring (a shared store's leases), unless they were released meanwhile. */
        void renew() {
            if (!get()) {
                try {
                    endpoint.store().execute(command(Step.Op.RENEW));
                } catch (RuntimeException e) {
                    // the next renewal tries again, well within the lease
                }
            }
        }

        private void release() {
            if (!compareAndSet(false, true)) {
                return;
            }
            endpoint.getStatistics().inFlight(-1);
            held.remove(this);
            CompletionStage<Outcome> released;
            try {
                released = endpoint.store().execute(command(Step.Op.RELEASE));
            } catch (RuntimeException e) {
                released = CompletableFuture.failedFuture(e); // a shared store's lease then expires on its own
            }
            released.whenComplete((done, failure) -> endpoint.getComponent().slotsReleased(endpoint.getName()));
        }
    }
}
