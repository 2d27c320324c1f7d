package io.tokenbucket.store;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import org.junit.jupiter.api.Test;

import static io.tokenbucket.store.AdaptiveStoreContract.get;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * In-flight limits as every store must keep them: mixed into {@link BucketStoreContract}, so they run against each
 * store there (local, Redis, Redis batched, the cluster, batched on the cluster). Every reservation takes its slots
 * under a lease of its own, as the endpoint's exchanges do; the local store ignores the lease's time.
 */
public interface InFlightStoreContract {

    /** The store under test. */
    BucketStore contractStore();

    /** Another store instance on the same state as {@link #contractStore()}, or null when a store has no such. */
    BucketStore anotherInstance();

    /** A lease of a minute, unique to this call. */
    private static StoreCommand.Lease lease() {
        return new StoreCommand.Lease(UUID.randomUUID().toString(), TimeUnit.MINUTES.toNanos(1));
    }

    private static Outcome take(BucketStore store, String key, Limits limits, StoreCommand.Lease lease) {
        return get(store.execute(new StoreCommand(List.of(key), Step.reserve(limits, 1, 0), lease)));
    }

    private static void release(BucketStore store, List<String> keys, List<Limits> limits, Step.Op op,
                                StoreCommand.Lease lease) {
        get(store.execute(new StoreCommand(keys, new Step(op, new int[] {keys.size()}, limits, 0, 0), lease)));
    }

    private static long free(BucketStore store, String key, Limits limits) {
        return get(store.peek(key, limits, 1)).remaining();
    }

    @Test
    default void aKeyNeverHoldsMoreSlotsThanItsLimitAndEveryReleaseGivesOneBack() throws Exception {
        BucketStore store = contractStore();
        Limits three = Limits.inFlightOnly(3);
        String key = "slots-" + UUID.randomUUID();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger admitted = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < 6; t++) {
                runs.add(pool.submit(() -> {
                    for (int i = 0; i < 150; i++) {
                        StoreCommand.Lease lease = lease();
                        Outcome o = take(store, key, three, lease);
                        if (o.granted()) {
                            admitted.incrementAndGet();
                            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            inside.decrementAndGet();
                            release(store, List.of(key), List.of(three), Step.Op.RELEASE, lease);
                        } else {
                            assertThat(o.slotless()).isTrue();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> run : runs) {
                run.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(most.get()).isBetween(1, 3);
        assertThat(admitted.get()).isPositive();
        assertThat(free(store, key, three)).isEqualTo(3);
    }

    @Test
    default void aFullKeyRefusesAsSlotlessUntilItsSlotIsReleasedWhateverTheWaitAccepted() {
        BucketStore store = contractStore();
        Limits limits = Limits.of(Limit.of(100, 100, TimeUnit.SECONDS.toNanos(1))).withInFlight(1);
        String key = "full-" + UUID.randomUUID();
        StoreCommand.Lease first = lease();
        assertThat(take(store, key, limits, first).granted()).isTrue();
        StoreCommand.Lease waiter = lease().withTicket(); // it will wait: it takes a ticket
        StoreCommand waits = new StoreCommand(List.of(key), Step.reserve(limits, 1, BucketStore.MAX_WAIT_NANOS),
                waiter);
        Outcome refused = get(store.execute(waits));
        assertThat(refused.granted()).isFalse();
        assertThat(refused.slotless()).isTrue();
        if (anotherInstance() != null) { // a store whose slots are leases tells them apart
            release(store, List.of(key), List.of(limits), Step.Op.RELEASE, lease()); // not its lease: nothing back
            assertThat(take(store, key, limits, lease()).slotless()).isTrue();
        }
        release(store, List.of(key), List.of(limits), Step.Op.RELEASE, first);
        if (anotherInstance() != null) {
            // a shared store keeps the slot for the reservation that waited (its ticket), not for a newcomer
            assertThat(take(store, key, limits, lease()).slotless()).isTrue();
        }
        assertThat(get(store.execute(waits)).granted()).isTrue();
    }

    @Test
    default void anAllOfReservationTakesASlotOnEachKeyAndOneReleaseGivesBothBack() {
        BucketStore store = contractStore();
        Limits one = Limits.inFlightOnly(1);
        Limits rate = Limits.of(Limit.of(100, 100, TimeUnit.SECONDS.toNanos(1)));
        String tag = UUID.randomUUID().toString();
        // one hash tag, so that the cluster takes them in one call
        String proxy = "{" + tag + "}proxy";
        String host = "{" + tag + "}host";
        String shared = "{" + tag + "}rate";
        StoreCommand.Lease lease = lease();
        StoreCommand both = new StoreCommand(List.of(proxy, host, shared),
                new Step(Step.Op.RESERVE, new int[] {1}, List.of(one, one, rate), 1, 0), lease);
        assertThat(get(store.execute(both)).granted()).isTrue();
        assertThat(free(store, proxy, one)).isZero();
        assertThat(free(store, host, one)).isZero();
        StoreCommand again = new StoreCommand(both.keys(), both.step(), lease());
        assertThat(get(store.execute(again)).slotless()).isTrue();
        release(store, List.of(proxy, host), List.of(one, one), Step.Op.RELEASE, lease);
        assertThat(free(store, proxy, one)).isEqualTo(1);
        assertThat(free(store, host, one)).isEqualTo(1);
    }

    @Test
    default void aCandidateWithAFreeSlotIsChosenOverAFullOne() {
        BucketStore store = contractStore();
        Limits one = Limits.of(Limit.of(100, 100, TimeUnit.SECONDS.toNanos(1))).withInFlight(1);
        String tag = UUID.randomUUID().toString();
        List<String> keys = List.of("{" + tag + "}a", "{" + tag + "}b");
        StoreCommand pick = new StoreCommand(keys, new Step(Step.Op.RESERVE, new int[] {1, 1}, List.of(one, one), 1,
                0), lease());
        Outcome first = get(store.execute(pick));
        Outcome second = get(store.execute(new StoreCommand(keys, pick.step(), lease())));
        assertThat(first.granted()).isTrue();
        assertThat(second.granted()).isTrue();
        assertThat(second.chosen()).isEqualTo(1 - first.chosen());
        Outcome third = get(store.execute(new StoreCommand(keys, pick.step(), lease())));
        assertThat(third.slotless()).isTrue();
    }

    @Test
    default void aWaiterOfSeveralCandidatesHoldsItsPlaceOnEachAndGivesUpTheOthersWhenAdmitted() {
        BucketStore store = contractStore();
        Limits one = Limits.inFlightOnly(1);
        String tag = UUID.randomUUID().toString();
        String a = "{" + tag + "}a";
        String b = "{" + tag + "}b";
        StoreCommand.Lease holdsA = lease();
        StoreCommand.Lease holdsB = lease();
        assertThat(take(store, a, one, holdsA).granted()).isTrue();
        assertThat(take(store, b, one, holdsB).granted()).isTrue();
        StoreCommand waits = new StoreCommand(List.of(a, b), new Step(Step.Op.RESERVE, new int[] {1, 1},
                List.of(one, one), 1, BucketStore.MAX_WAIT_NANOS), lease().withTicket());
        assertThat(get(store.execute(waits)).slotless()).isTrue();
        release(store, List.of(a), List.of(one), Step.Op.RELEASE, holdsA);
        assertThat(take(store, a, one, lease()).slotless()).as("a newcomer on a, behind the waiter's ticket")
                .isTrue();
        Outcome admitted = get(store.execute(waits));
        assertThat(admitted.granted()).isTrue();
        assertThat(admitted.chosen()).isZero();
        release(store, List.of(b), List.of(one), Step.Op.RELEASE, holdsB);
        assertThat(take(store, b, one, lease()).granted()).as("b: the admitted waiter's ticket there is gone")
                .isTrue();
    }

    @Test
    default void removeKeepsTheSlotsOfExchangesStillRunning() {
        BucketStore store = contractStore();
        Limits one = Limits.of(Limit.of(1, 1, TimeUnit.HOURS.toNanos(1))).withInFlight(1);
        String key = "removed-" + UUID.randomUUID();
        StoreCommand.Lease lease = lease();
        assertThat(take(store, key, one, lease).granted()).isTrue();
        get(store.remove(key, one));
        Outcome after = take(store, key, one, lease());
        assertThat(after.slotless()).isTrue(); // the tokens are back, the slot is not
        release(store, List.of(key), List.of(one), Step.Op.RELEASE, lease);
        assertThat(take(store, key, one, lease()).granted()).isTrue();
    }

    @Test
    default void anotherInstanceSeesTheSlotsAndItsReleaseFreesThem() {
        BucketStore other = anotherInstance();
        if (other == null) {
            return; // a store of its own: nothing is shared
        }
        try {
            BucketStore store = contractStore();
            Limits one = Limits.inFlightOnly(1);
            String key = "shared-" + UUID.randomUUID();
            StoreCommand.Lease lease = lease();
            assertThat(take(store, key, one, lease).granted()).isTrue();
            assertThat(take(other, key, one, lease()).slotless()).isTrue();
            release(other, List.of(key), List.of(one), Step.Op.RELEASE, lease); // any instance may end a lease
            assertThat(take(other, key, one, lease()).granted()).isTrue();
        } finally {
            other.close();
        }
    }

    @Test
    default void twoWaitersOfTheSameTwoKeysNeverHoldEachOtherUpForEver() {
        BucketStore other = anotherInstance();
        if (other != null) {
            other.close();
        }
        BucketStore store = contractStore();
        Limits one = Limits.inFlightOnly(1);
        String tag = UUID.randomUUID().toString();
        String a = "{" + tag + "}a";
        String b = "{" + tag + "}b";
        StoreCommand.Lease holdsA = lease();
        StoreCommand.Lease holdsB = lease();
        // x and y (two instances' first waiters) each want both keys; x is refused while only a is taken
        Step both = new Step(Step.Op.RESERVE, new int[] {1}, List.of(one, one), 1, BucketStore.MAX_WAIT_NANOS);
        StoreCommand x = new StoreCommand(List.of(a, b), both, lease().withTicket());
        StoreCommand y = new StoreCommand(List.of(a, b), both, lease().withTicket());
        assertThat(take(store, a, one, holdsA).granted()).isTrue();
        assertThat(get(store.execute(x)).slotless()).isTrue();
        take(store, b, one, holdsB); // a newcomer on b: granted unless b is kept for x
        assertThat(get(store.execute(y)).slotless()).isTrue();
        release(store, List.of(a), List.of(one), Step.Op.RELEASE, holdsA);
        release(store, List.of(b), List.of(one), Step.Op.RELEASE, holdsB);
        // both keys free: the two keep trying (as waiters do) and one of them gets both
        boolean admitted = false;
        for (int i = 0; i < 5 && !admitted; i++) {
            admitted = get(store.execute(x)).granted() || get(store.execute(y)).granted();
        }
        assertThat(admitted).as("one of two waiters admitted once both keys are free").isTrue();
    }

    @Test
    default void aLeaseNamedAsAWordOfAStoredStateIsRefusedOrHoldsItsSlot() {
        BucketStore store = contractStore();
        Limits one = Limits.inFlightOnly(1);
        for (String id : List.of("q", "s", "r")) { // the words that mark the parts of a Redis state
            StoreCommand.Lease odd;
            try {
                odd = new StoreCommand.Lease(id, TimeUnit.MINUTES.toNanos(1));
            } catch (IllegalArgumentException refused) {
                assertThat(refused).hasMessageContaining("'" + id + "'");
                continue;
            }
            String key = "odd-" + UUID.randomUUID();
            assertThat(take(store, key, one, odd).granted()).isTrue();
            assertThat(take(store, key, one, lease()).slotless()).as("the slot of lease '%s' is held", id).isTrue();
        }
    }

    @Test
    default void refundPenalizeThrottleRatePeekKeepTheSlotsOfAKeyWhoseRateAdapts() {
        BucketStore store = contractStore();
        Limits limits = Limits.of(Limit.of(10, 10, TimeUnit.SECONDS.toNanos(1)))
                .withAdaptive(io.tokenbucket.math.Adaptive.of(100_000, 500_000, 250_000, 0, TimeUnit.HOURS.toNanos(1)))
                .withInFlight(2);
        String key = "kept-" + UUID.randomUUID();
        StoreCommand.Lease first = lease();
        StoreCommand.Lease second = lease();
        assertThat(take(store, key, limits, first).granted()).isTrue();
        assertThat(take(store, key, limits, second).granted()).isTrue();
        get(store.refund(key, limits, 5));
        get(store.penalize(key, limits, TimeUnit.MILLISECONDS.toNanos(1)));
        get(store.throttle(key, limits));
        get(store.rate(key, limits));
        assertThat(get(store.peek(key, limits, 1)).slotless()).isTrue();
        assertThat(take(store, key, limits, lease()).slotless()).as("both slots still held").isTrue();
        release(store, List.of(key), List.of(limits), Step.Op.RENEW, second); // a renewal keeps it
        assertThat(get(store.peek(key, limits, 1)).slotless()).isTrue();
        release(store, List.of(key), List.of(limits), Step.Op.RELEASE, first);
        assertThat(get(store.peek(key, limits, 1)).slotless()).as("first's slot back").isFalse();
    }
}
