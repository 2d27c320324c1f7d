package io.tokenbucket.camel.producer;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.camel.TokenBucketStoreType;
import io.tokenbucket.camel.producer.TokenBucketRequest.Acquire;
import io.tokenbucket.camel.producer.TokenBucketRequest.Key;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.StoreCommand;
import org.apache.camel.Exchange;
import org.apache.camel.spi.Synchronization;

/**
 * The in-flight slots one producer's admitted exchanges hold: each holds its slots under a lease of its own and gives
 * them back exactly once, when its unit of work ends (completed or failed, however it ends) or at operation
 * {@code release}, whichever comes first; then every queue of waiters under the endpoint's name is woken
 * (the component's {@code TokenBucketShared}). On a shared store each lease lasts {@code inFlightLease} unless
 * renewed, and every lease of a running exchange is renewed a third of that time after its last renewal, so a live
 * exchange never loses its slot and a dead instance's slots come back after at most the lease time. The local store's
 * slots live as long as their JVM. The exchanges that found every slot taken wait in {@link TokenBucketWaitQueue}.
 */
final class TokenBucketLeases {

    /** This JVM's part of every lease id: random, so that two instances never share an id. */
    private static final String INSTANCE = Long.toString(Math.abs(new java.security.SecureRandom().nextLong()), 36);
    private static final AtomicLong LEASES = new AtomicLong();

    private final TokenBucketServices services;
    private final Set<Release> held = ConcurrentHashMap.newKeySet();
    private volatile TokenBucketTimer.Entry renewal;

    /** The leases of the slots taken on the endpoint that {@code services} serve. */
    TokenBucketLeases(TokenBucketServices services) {
        this.services = services;
    }

    /**
     * A lease for a reservation of {@code request} on a shared store; null when none of its keys has an in-flight
     * limit, and on the local store, whose slots need none.
     */
    StoreCommand.Lease lease(TokenBucketRequest request) {
        if (!shared() || TokenBucketRequest.anySlotKeys(request).isEmpty()) {
            return null;
        }
        return new StoreCommand.Lease(INSTANCE + ":" + Long.toString(LEASES.incrementAndGet(), 36),
                TimeUnit.MILLISECONDS.toNanos(services.configuration().getInFlightLease()));
    }

    /**
     * Gives the slots {@code acquire} took under {@code lease} back when {@code exchange}'s unit of work ends, exactly
     * once, and renews them until then on a shared store. Call it when the reservation is granted; nothing happens
     * when it took none.
     */
    void holdUntilDone(Exchange exchange, Acquire acquire, StoreCommand.Lease lease) {
        List<Key> keys = TokenBucketRequest.slotKeys(acquire);
        if (!keys.isEmpty()) {
            Release release = new Release(keys, lease);
            services.statistics().inFlight(1);
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
        return "CamelTokenBucketSlots." + services.name();
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
        return services.configuration().getStore() != TokenBucketStoreType.local;
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
            long every = TimeUnit.MILLISECONDS.toNanos(services.configuration().getInFlightLease()) / 3;
            try {
                renewal = services.timer().schedule(() -> {
                    renewal = null;
                    if (!held.isEmpty()) {
                        scheduleRenewal();
                        try {
                            services.worker().execute(() -> held.forEach(Release::renew));
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

    /** Gives an exchange's slots back when its unit of work ends, once, then wakes the waiters of the name. */
    private final class Release extends AtomicBoolean implements Synchronization {
        private static final long serialVersionUID = 1L;
        private final transient List<Key> keys;
        private final transient StoreCommand.Lease lease;
        /** When the slots were granted ({@link System#nanoTime()}), for the hold time the statistics keep. */
        private final long granted = System.nanoTime();

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
                    services.store().execute(command(Step.Op.RENEW));
                } catch (RuntimeException e) {
                    // the next renewal tries again, well within the lease
                }
            }
        }

        private void release() {
            if (!compareAndSet(false, true)) {
                return;
            }
            services.statistics().inFlight(-1);
            services.statistics().slotHeld(System.nanoTime() - granted);
            held.remove(this);
            CompletionStage<Outcome> released;
            try {
                released = services.store().execute(command(Step.Op.RELEASE));
            } catch (RuntimeException e) {
                released = CompletableFuture.failedFuture(e); // a shared store's lease then expires on its own
            }
            released.whenComplete((done, failure) -> services.slotsReleased());
        }
    }
}
