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
import io.tokenbucket.camel.producer.TokenBucketRequest.Candidate;
import io.tokenbucket.camel.producer.TokenBucketRequest.Key;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
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
 * <p><b>Tokens.</b> A granted reservation's time is known: the component's timer releases the waiter then, never
 * before. An abandoned waiter (its route's producer stopped, or its wake-up could not be scheduled) fails with
 * {@link io.tokenbucket.camel.TokenBucketException} and its tokens are refunded to every key it charged.
 *
 * <p><b>Slots.</b> A waiter whose keys' slots are all taken waits in arrival order until a release lets it in. A
 * release anywhere under the endpoint's name in this Camel context tries the queue (the component's
 * {@code TokenBucketShared}); on a shared store (Redis) so does a release that another instance publishes, and, while
 * exchanges wait, a try every {@link #POLL_NANOS} (a dead instance's lease expires unannounced). The queue tries its
 * waiters in arrival order and skips one that shares a key with an earlier one still without a slot; a waiter of
 * candidates is tried on those none of whose slot keys an earlier waiter holds up. A new exchange of a key with waiters
 * queues behind them. On a shared store the store also keeps, per key, the waiters' tickets, so a freed slot goes to
 * the oldest, whichever instance holds it; a waiter withdraws its tickets when it leaves without its slot.
 *
 * <p><b>Stopping.</b> When the Camel context starts stopping ({@link #stopping}), waiting may hold the stop up for the
 * endpoint's {@code stopTimeout} at most: a waiter whose tokens come later is abandoned at once, as is any that arrives
 * later with such a time, and whatever still waits when the bound has passed is abandoned then.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketWaitQueue {

    /** How often waiters for a slot on a shared store try again without a release in this context: 20 ms. */
    static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    /**
     * Holds the in-flight slots a granted acquire took until its exchange ends: its producer's
     * {@link TokenBucketLeases#holdUntilDone}.
     */
    @FunctionalInterface
    public interface SlotHolder {
        void holdUntilDone(Exchange exchange, Acquire acquire, StoreCommand.Lease lease);
    }

    /** Reserves an acquire's tokens (and slots), accepting a wait of {@code acceptNanos}: what the queue retries. */
    @FunctionalInterface
    public interface Reservation {
        CompletionStage<Outcome> reserve(TokenBucketRequest attempt, long acceptNanos, StoreCommand.Lease lease);
    }

    private final TokenBucketServices services;
    private final Reservation reservation;
    private final TokenBucketStatistics statistics;
    private final TokenBucketConfiguration config;
    private final AtomicInteger places = new AtomicInteger();
    /** The waiters whose time is known. */
    private final Set<Waiter> timed = ConcurrentHashMap.newKeySet();
    // the waiters for a slot, in arrival order; one leaves from anywhere in it (its maxWait): no ArrayDeque
    private final LinkedHashSet<Waiter> queue = new LinkedHashSet<>(); // guarded by this
    // how many waiters hold each slot key: every exchange of a limited key asks it, so it must not walk the queue
    private final Map<String, Integer> waitingKeys = new HashMap<>(); // guarded by this
    private boolean draining; // guarded by this
    private boolean again; // guarded by this
    private TokenBucketTimer.Entry poll; // guarded by this
    private volatile long stopDeadline; // meaningful once stopping
    private volatile boolean stopping;
    private volatile boolean deadlinePassed;

    /**
     * @param services    the endpoint's services: its options, counters, store, and the component's timer, worker pool
     *                    and hand-off
     * @param reservation what a waiter retries
     */
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
    Waiter waiter(StatefulService owner, Exchange exchange, AsyncCallback callback, TokenBucketRequest request,
                  StoreCommand.Lease lease, SlotHolder leases, long start) {
        return new Waiter(owner, exchange, callback, request, lease, leases, start);
    }

    /**
     * Acts on the store's answer {@code r} to {@code request} for waiter {@code w}: true when the exchange may
     * continue now (admitted without a wait, or refused: its exception set), false when it waits (and continues
     * later through its callback).
     */
    boolean answered(Waiter w, TokenBucketRequest request, Outcome r) {
        Acquire acquire = chosen(w.exchange.getMessage(), request, r);
        if (!r.granted() && r.slotless()) {
            w.shown = acquire; // the candidate its refusal named, if it times out
            awaitSlot(w);
            return false;
        }
        if (!r.granted() || r.waitTicks() == 0) {
            places.decrementAndGet();
        }
        if (!r.granted()) {
            refuse(w.exchange, acquire, r, TokenBucketLimitSource.maxWaitNanos(config));
            return true;
        }
        w.leases.holdUntilDone(w.exchange, acquire, w.lease);
        if (r.waitTicks() == 0) {
            statistics.admitted(acquire.key().stored(), 0);
            passed(w.exchange.getMessage(), config, 0, r.remaining());
            return true;
        }
        w.acquire = acquire;
        w.remaining = r.remaining();
        // from the decision, not from now: a thread that reads its answer late still releases in the store's order
        w.slot = r.fromTicks() + r.waitTicks(); // the timer never runs a task before it: no release is early
        timed.add(w);
        try {
            w.timer = services.timer().schedule(w::release, w.slot);
        } catch (RejectedExecutionException e) {
            w.abandon("its wake-up could not be scheduled (" + e.getMessage() + ")");
        }
        // read after the add: a stop that began meanwhile either sees this waiter or is seen here
        if (deadlinePassed) {
            w.abandon(deadlineWhy());
        } else if (stopping && w.slot - stopDeadline > 0) {
            w.abandon(tooLateWhy());
        }
        w.abandonIfStopped();
        return false;
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
                    refused(acquire), false,
                    TokenBucketLimitSource.ceilMillis(statistics.slotWaitNanos(r.waitTicks()))));
        } else {
            exchange.setException(TokenBucketExceptions.rejected(name(), TokenBucketLimitSource.waits(config),
                    refused(acquire), TokenBucketLimitSource.ceilMillis(r.waitTicks()), full));
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

    /** {@code acquire} as a refusal's message names it: its keys, cost and limits, and its keys with slots. */
    static TokenBucketExceptions.Refused refused(Acquire acquire) {
        return new TokenBucketExceptions.Refused(acquire.key().sent(), Key.sent(acquire.allOf()), acquire.tokens(),
                TokenBucketLimitSource.describe(acquire.key().limits()), TokenBucketRequest.slotKeys(acquire).stream()
                .map(k -> "'" + TokenBucketExceptions.shown(k.sent()) + "' (" + k.limits().inFlight() + " in flight)")
                .toList());
    }

    /** Waiter {@code w}'s reservation failed ({@code failure}): it gives back its place and fails, continuing later. */
    void failed(Waiter w, Throwable failure) {
        places.decrementAndGet();
        statistics.storeError();
        w.exchange.setException(services.storeFailed(failure));
        w.handOff(() -> w.callback.done(false));
    }

    /** Runs {@code continuation} where {@code w}'s exchange continues; if it cannot, gives back what it holds. */
    void continueLater(Waiter w, TokenBucketRequest request, Outcome r, Runnable continuation) {
        w.handOff(continuation, () -> {
            if (r != null && r.granted()) { // the slots it got go back once, when the exchange, failed, ends
                w.leases.holdUntilDone(w.exchange, request instanceof AcquireAny any ? any.chosen(r.chosen())
                        : (Acquire) request, w.lease);
            }
            places.decrementAndGet();
        });
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
    void awaitSlot(Waiter w) {
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
        try {
            w.timer = services.timer().schedule(() -> w.fail(false, null), w.deadline);
        } catch (RejectedExecutionException e) {
            w.fail(true, "its maxWait could not be scheduled (" + e.getMessage() + ")");
        }
        drain(); // a slot released between the refusal and the queueing is not missed
        w.abandonIfStopped();
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
        for (Waiter w : timed) {
            if (w.slot - stopDeadline > 0) {
                w.abandon(tooLateWhy());
            }
        }
        Runnable atDeadline = () -> {
            deadlinePassed = true;
            abandonAll(null, deadlineWhy());
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

    private String tooLateWhy() {
        return "the Camel context began to stop and its tokens would only come after stopTimeout ("
                + config.getStopTimeout() + " ms)";
    }

    private String deadlineWhy() {
        return "stopTimeout (" + config.getStopTimeout() + " ms) passed after the Camel context began to stop";
    }

    /** Abandons every waiter sent through {@code owner} (null: every waiter), saying {@code why}. */
    void abandonAll(Object owner, String why) {
        List<Waiter> all;
        synchronized (this) {
            all = new ArrayList<>(queue);
        }
        all.addAll(timed);
        for (Waiter w : all) {
            if (owner == null || w.owner == owner) {
                w.abandon(why);
            }
        }
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
    private void pass(List<Waiter> waiting, int next, Set<String> blocked) {
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
                Waiter w = waiting.get(next++);
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
                    List<Waiter> rest = waiting;
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

    /**
     * One waiting exchange: for a slot (in the queue, {@link #keys} set), then, or only, for its tokens (in
     * {@link #timed}, {@link #slot} set). It leaves each exactly once: the slot queue under its own lock ({@link #done}),
     * the tokens' wait by whichever of its release or abandonment removes it from {@link #timed}.
     */
    final class Waiter {
        private final StatefulService owner;
        private final Exchange exchange;
        private final AsyncCallback callback;
        private final TokenBucketRequest request;
        private final StoreCommand.Lease lease;
        private final SlotHolder leases;
        private final long start;
        /** The stored slot keys it waits for, of every candidate; its maxWait's end ({@link System#nanoTime()}). */
        private Set<String> keys = Set.of();
        private long deadline;
        private boolean done; // guarded by this: it left the slot queue, or is leaving
        private boolean trying; // guarded by this: a retry is in flight
        private String failWhy; // guarded by this: a failure that came during a retry, applied after it
        private boolean failAbandoned; // guarded by this
        /** The acquire its messages name, when not its own or its first candidate. */
        private Acquire shown;
        /** Once granted with a wait: the acquire charged, the tokens left, when it is released. */
        private volatile Acquire acquire;
        private long remaining;
        private volatile long slot;
        private volatile TokenBucketTimer.Entry timer;

        private Waiter(StatefulService owner, Exchange exchange, AsyncCallback callback, TokenBucketRequest request,
                       StoreCommand.Lease lease, SlotHolder leases, long start) {
            this.owner = owner;
            this.exchange = exchange;
            this.callback = callback;
            this.request = request;
            this.lease = lease;
            this.leases = leases;
            this.start = start;
        }

        private void handOff(Runnable continuation) {
            handOff(continuation, null);
        }

        private void handOff(Runnable continuation, Runnable refused) {
            services.handOff().execute(name(), exchange, callback, continuation, refused);
        }

        /** On the timer thread, at its time: it leaves with its tokens, continuing where it is handed. */
        private void release() {
            if (timed.remove(this)) { // its one claim, or abandon's
                places.decrementAndGet();
                handOff(() -> {
                    long waited = System.nanoTime() - start;
                    statistics.admitted(acquire.key().stored(), waited);
                    passed(exchange.getMessage(), config, waited / 1_000_000, remaining);
                    callback.done(false);
                });
            }
        }

        /** Its producer stopped while the store answered or it was queued: nobody else would abandon it. */
        private void abandonIfStopped() {
            if (!owner.isRunAllowed()) {
                abandon("the producer stopped");
            }
        }

        /** Fails it, refunding its tokens or withdrawing its tickets, unless it left already. */
        void abandon(String why) {
            if (acquire == null) {
                fail(true, why);
                return;
            }
            if (!timed.remove(this)) {
                return;
            }
            places.decrementAndGet();
            TokenBucketTimer.Entry t = timer;
            if (t != null) {
                t.cancel();
            }
            Acquire charged = acquire;
            services.store().refund(charged.refund().stored(), charged.refund().limits(),
                    charged.refund().tokens()); // to every key it charged
            statistics.abandoned();
            exchange.setException(TokenBucketExceptions.abandoned(name(), charged.key().sent(), charged.tokens(),
                    why));
            // this may run on a store's I/O thread: the route's error handling goes where the exchange continues
            handOff(() -> callback.done(false));
        }

        private synchronized boolean gone() {
            return done;
        }

        /**
         * Its request narrowed to the candidates none of whose slot keys is in {@code blocked} (held up by an earlier
         * waiter); null when it has none such (or is no request of candidates), and it waits on behind them.
         */
        private TokenBucketRequest unblocked(Set<String> blocked) {
            if (!(request instanceof AcquireAny any)) {
                return null;
            }
            List<Candidate> free = new ArrayList<>(any.candidates().size());
            for (int c = 0; c < any.candidates().size(); c++) {
                if (TokenBucketRequest.slotKeys(any.chosen(c)).stream().noneMatch(k -> blocked.contains(k.stored()))) {
                    free.add(any.candidates().get(c));
                }
            }
            return free.isEmpty() ? null : new AcquireAny(List.copyOf(free), any.allOf(), any.tokens());
        }

        /** Reserves again as {@code attempt}: false when there is still no slot, true when it left. */
        private CompletionStage<Boolean> tryAdmit(TokenBucketRequest attempt) {
            synchronized (this) {
                if (done) {
                    return CompletableFuture.completedFuture(true);
                }
                trying = true;
            }
            CompletionStage<Outcome> answer;
            try {
                // the first waiter of its keys here: its tries hold its place among every instance's waiters
                answer = reservation.reserve(attempt, Math.max(0, deadline - System.nanoTime()),
                        lease == null ? null : lease.withTicket());
            } catch (RuntimeException e) {
                answer = CompletableFuture.failedFuture(e);
            }
            return answer.handle((outcome, failure) -> tried(attempt, outcome, failure));
        }

        private boolean tried(TokenBucketRequest attempt, Outcome outcome, Throwable failure) {
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
            leaveSlotQueue();
            if (failure == null && !outcome.slotless()) { // admitted or refused for its tokens, even if late
                if (!outcome.granted()) {
                    withdrawTickets(TokenBucketRequest.allSlotKeys(request)); // or it holds up the key
                } else if (attempt != request) { // its tickets on the candidates the narrowed attempt left out too
                    Set<String> tried = TokenBucketRequest.anySlotKeys(attempt);
                    withdrawTickets(TokenBucketRequest.allSlotKeys(request).stream()
                            .filter(k -> !tried.contains(k.stored())).toList());
                }
                continueLater(this, attempt, outcome, () -> {
                    if (answered(this, attempt, outcome)) {
                        callback.done(false);
                    }
                });
            } else if (failure != null) {
                failed(this, failure);
            } else {
                failNow(abandoned, why);
            }
            return true;
        }

        /**
         * Its maxWait passed ({@code abandoned} false) or it is abandoned: fails it unless it left already; during a
         * retry, once the retry has answered (a slot it got then is used: the exchange goes on).
         */
        private void fail(boolean abandoned, String why) {
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
            leaveSlotQueue();
            failNow(abandoned, why);
        }

        private void failNow(boolean abandoned, String why) {
            withdrawTickets(TokenBucketRequest.allSlotKeys(request));
            places.decrementAndGet();
            Acquire shown = this.shown != null ? this.shown
                    : request instanceof Acquire a ? a : ((AcquireAny) request).chosen(0);
            if (abandoned) {
                statistics.abandoned();
                exchange.setException(TokenBucketExceptions.abandonedSlot(name(), shown.key().sent(), why));
            } else {
                statistics.rejected(shown.key().stored());
                exchange.setException(TokenBucketExceptions.noSlot(name(), TokenBucketLimitSource.waits(config),
                        refused(shown), true,
                        TokenBucketLimitSource.ceilMillis(statistics.slotWaitNanos(0))));
            }
            handOff(() -> callback.done(false));
        }

        /** Withdraws its tickets on {@code keys} (a shared store's queue of waiters), so they hold up nobody. */
        private void withdrawTickets(List<Key> keys) {
            if (lease == null || keys.isEmpty()) {
                return;
            }
            try {
                services.store().execute(new StoreCommand(Key.stored(keys), new Step(Step.Op.RELEASE,
                        new int[] {keys.size()}, Key.limits(keys), 0, 0), lease));
            } catch (RuntimeException e) {
                // the ticket then expires on its own, within half a second
            }
        }

        private void leaveSlotQueue() {
            statistics.slotWaiting(-1);
            synchronized (TokenBucketWaitQueue.this) {
                if (queue.remove(this)) {
                    keys.forEach(key -> waitingKeys.computeIfPresent(key, (k, n) -> n == 1 ? null : n - 1));
                }
            }
            TokenBucketTimer.Entry t = timer;
            if (t != null) {
                t.cancel();
            }
        }
    }
}
