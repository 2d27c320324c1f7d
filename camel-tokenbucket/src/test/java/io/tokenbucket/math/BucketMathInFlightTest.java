package io.tokenbucket.math;

import java.util.List;

import org.junit.jupiter.api.Test;

import static io.tokenbucket.math.BucketMath.NO_LIMIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * In-flight limits in {@link BucketMath#decide}: slots taken by the charge, given back by {@link Step.Op#RELEASE},
 * full keys never chosen, and the waiters' tickets that order who gets a freed slot. Ticks are milliseconds.
 */
class BucketMathInFlightTest {

    private static final Limits TWO_IN_FLIGHT = Limits.inFlightOnly(2);
    private static final Limits TEN_PER_SECOND_ONE_IN_FLIGHT = Limits.of(Limit.of(10, 10, 1000)).withInFlight(1);
    private static final Limits TEN_PER_SECOND = Limits.of(Limit.of(10, 10, 1000));

    /** The state of a few keys, carried from step to step as a store would. */
    private static final class Keys {
        final long[][] tats;
        final RateState[] rates;
        final long[] slots;
        final String[][] tickets;

        Keys(List<Limits> limits, long now) {
            tats = new long[limits.size()][];
            for (int i = 0; i < tats.length; i++) {
                tats[i] = BucketMath.align(null, now, limits.get(i));
            }
            rates = new RateState[limits.size()];
            slots = new long[limits.size()];
            tickets = new String[limits.size()][];
        }

        Outcome step(Step step, long now) {
            return BucketMath.decide(step, now, tats, rates, slots);
        }

        /** {@code step} by {@code waiter} (null: none), with the waiters' tickets. */
        Outcome step(Step step, long now, Waiter waiter) {
            return BucketMath.decide(step, now, tats, rates, slots, tickets, waiter);
        }
    }

    private static Step reserve(Limits limits, long maxWait) {
        return Step.reserve(limits, 1, maxWait);
    }

    @Test
    void aKeyAdmitsAtMostItsLimitUntilOneIsReleased() {
        Keys k = new Keys(List.of(TWO_IN_FLIGHT), 0);
        assertThat(k.step(reserve(TWO_IN_FLIGHT, NO_LIMIT), 0).granted()).isTrue();
        Outcome second = k.step(reserve(TWO_IN_FLIGHT, NO_LIMIT), 0);
        assertThat(second.granted()).isTrue();
        assertThat(second.remaining()).isZero(); // no slot left
        Outcome third = k.step(reserve(TWO_IN_FLIGHT, NO_LIMIT), 5000); // however long it would wait
        assertThat(third.granted()).isFalse();
        assertThat(third.slotless()).isTrue();
        assertThat(k.slots[0]).isEqualTo(2);

        Outcome released = k.step(Step.of(Step.Op.RELEASE, TWO_IN_FLIGHT, 0), 5000);
        assertThat(released.granted()).isTrue(); // answered as a peek: a slot is free now
        assertThat(released.remaining()).isEqualTo(1);
        assertThat(k.slots[0]).isEqualTo(1);
        assertThat(k.step(reserve(TWO_IN_FLIGHT, 0), 5000).granted()).isTrue();
    }

    @Test
    void aReleaseNeverGoesBelowNoneHeld() {
        Keys k = new Keys(List.of(TWO_IN_FLIGHT), 0);
        k.step(Step.of(Step.Op.RELEASE, TWO_IN_FLIGHT, 0), 0);
        assertThat(k.slots[0]).isZero();
        k.step(reserve(TWO_IN_FLIGHT, 0), 0);
        k.step(reserve(TWO_IN_FLIGHT, 0), 0);
        assertThat(k.step(reserve(TWO_IN_FLIGHT, 0), 0).granted()).isFalse();
    }

    @Test
    void aSlotIsHeldThroughTheWaitForTokensAndOneIsTakenWhateverTheTokens() {
        Limits limits = Limits.of(Limit.of(1, 1, 1000)).withInFlight(3);
        Keys k = new Keys(List.of(limits), 0);
        assertThat(k.step(reserve(limits, NO_LIMIT), 0).waitTicks()).isZero();
        Outcome waits = k.step(reserve(limits, NO_LIMIT), 0);
        assertThat(waits.granted()).isTrue();
        assertThat(waits.waitTicks()).isEqualTo(1000);
        assertThat(k.slots[0]).isEqualTo(2);
        Outcome refused = k.step(reserve(limits, 500), 0); // refused for its wait: takes no slot
        assertThat(refused.granted()).isFalse();
        assertThat(refused.slotless()).isFalse();
        assertThat(k.slots[0]).isEqualTo(2);
    }

    @Test
    void aFullSharedKeyRefusesEveryGroupAndChargesNothing() {
        List<Limits> limits = List.of(TEN_PER_SECOND, TEN_PER_SECOND_ONE_IN_FLIGHT);
        Step step = new Step(Step.Op.RESERVE, new int[] {1}, limits, 1, NO_LIMIT);
        Keys k = new Keys(limits, 0);
        assertThat(k.step(step, 0).granted()).isTrue();
        long[] proxyBefore = k.tats[0];
        Outcome refused = k.step(step, 0);
        assertThat(refused.granted()).isFalse();
        assertThat(refused.slotless()).isTrue();
        assertThat(k.tats[0]).isSameAs(proxyBefore); // the proxy's tokens are not taken either
        assertThat(k.slots).containsExactly(0, 1); // only the key with an in-flight limit counts
    }

    @Test
    void aCandidateWithAFreeSlotIsChosenOverAFullOneHoweverSoonerTheFullOneIs() {
        Limits slowOneSlot = Limits.of(Limit.of(1, 1, 1000)).withInFlight(1);
        List<Limits> limits = List.of(TEN_PER_SECOND_ONE_IN_FLIGHT, slowOneSlot);
        Step step = new Step(Step.Op.RESERVE, new int[] {1, 1}, limits, 1, NO_LIMIT);
        Keys k = new Keys(limits, 0);
        assertThat(k.step(step, 0).chosen()).isZero(); // both free at once: the one with more tokens
        Outcome second = k.step(step, 0);
        assertThat(second.granted()).isTrue();
        assertThat(second.chosen()).isEqualTo(1); // candidate 0 is full
        assertThat(k.step(step, 0).slotless()).isTrue();

        k.slots[1] = 0; // candidate 1 released, but its tokens far away: still chosen over the full candidate 0
        k.tats[1] = new long[] {9000};
        Outcome third = k.step(step, 0);
        assertThat(third.granted()).isTrue();
        assertThat(third.chosen()).isEqualTo(1);
        assertThat(third.waitTicks()).isEqualTo(9000);
    }

    @Test
    void removeKeepsTheSlotsOfExchangesStillRunning() {
        Keys k = new Keys(List.of(TWO_IN_FLIGHT), 0);
        k.step(reserve(TWO_IN_FLIGHT, 0), 0);
        k.step(Step.of(Step.Op.REMOVE, TWO_IN_FLIGHT, 0), 0);
        assertThat(k.slots[0]).isEqualTo(1);
    }

    @Test
    void aPeekSaysWhetherASlotIsFree() {
        Keys k = new Keys(List.of(TEN_PER_SECOND_ONE_IN_FLIGHT), 0);
        assertThat(k.step(Step.of(Step.Op.PEEK, TEN_PER_SECOND_ONE_IN_FLIGHT, 1), 0).granted()).isTrue();
        k.step(reserve(TEN_PER_SECOND_ONE_IN_FLIGHT, 0), 0);
        Outcome peek = k.step(Step.of(Step.Op.PEEK, TEN_PER_SECOND_ONE_IN_FLIGHT, 1), 0);
        assertThat(peek.granted()).isFalse();
        assertThat(peek.slotless()).isTrue();
        assertThat(peek.remaining()).isZero();
    }

    @Test
    void inFlightLimitsOutOfRangeAreRefusedNamingTheValue() {
        assertThatThrownBy(() -> Limits.inFlightOnly(0)).hasMessageContaining("was 0");
        assertThatThrownBy(() -> Limits.inFlightOnly(Long.MAX_VALUE)).hasMessageContaining(
                "was " + Long.MAX_VALUE);
        assertThatThrownBy(() -> TEN_PER_SECOND.withInFlight(-1)).hasMessageContaining("was -1");
        assertThat(TEN_PER_SECOND.withInFlight(0)).isSameAs(TEN_PER_SECOND);
        assertThat(Limits.inFlightOnly(Limits.MAX_IN_FLIGHT).inFlight()).isEqualTo(Limits.MAX_IN_FLIGHT);
    }

    @Test
    void aKeyWithoutRateLimitsTakesAnyTokensButNotZero() {
        assertThat(TWO_IN_FLIGHT.capacity()).isEqualTo(Long.MAX_VALUE);
        TWO_IN_FLIGHT.checkCost(Long.MAX_VALUE);
        assertThatThrownBy(() -> TWO_IN_FLIGHT.checkCost(0)).hasMessageContaining("was 0");
    }

    @Test
    void anAdaptiveKeyBelowItsCeilingKeepsItsInFlightLimit() {
        // a rate that adapts, cut to half: its limits are scaled, and the in-flight limit must stay with them
        Limits adaptive = Limits.of(Limit.of(100, 100, 1000)).withAdaptive(Adaptive.of(100_000, 500_000, 250_000,
                0, 3_600_000)).withInFlight(1);
        Keys k = new Keys(List.of(adaptive), 0);
        k.step(Step.of(Step.Op.THROTTLE, adaptive, 1), 0);
        assertThat(k.rates[0].factorPpm()).isLessThan(Adaptive.PPM);
        assertThat(k.step(reserve(adaptive, NO_LIMIT), 0).granted()).isTrue();
        Outcome second = k.step(reserve(adaptive, NO_LIMIT), 0);
        assertThat(second.granted()).isFalse();
        assertThat(second.slotless()).isTrue();
        assertThat(k.slots[0]).isEqualTo(1);
    }

    // ---- the waiters' tickets -----------------------------------------------------------------------------------

    private static final Limits ONE_IN_FLIGHT = Limits.inFlightOnly(1);

    private static Waiter waits(String id) {
        return new Waiter(id, true);
    }

    @Test
    void aFreedSlotGoesToTheOldestWaiterNotToWhoeverAsksFirst() {
        Keys k = new Keys(List.of(ONE_IN_FLIGHT), 0);
        Waiter holder = new Waiter("holder", false);
        assertThat(k.step(reserve(ONE_IN_FLIGHT, NO_LIMIT), 0, holder).granted()).isTrue();
        assertThat(k.step(reserve(ONE_IN_FLIGHT, NO_LIMIT), 1, waits("w1")).slotless()).isTrue();
        assertThat(k.step(reserve(ONE_IN_FLIGHT, NO_LIMIT), 2, waits("w2")).slotless()).isTrue();
        assertThat(k.tickets[0]).containsExactly("w1", "w2");
        assertThat(k.step(reserve(ONE_IN_FLIGHT, NO_LIMIT), 3, waits("w1")).slotless()).isTrue();
        assertThat(k.tickets[0]).as("a retry keeps its place").containsExactly("w1", "w2");

        k.step(Step.of(Step.Op.RELEASE, ONE_IN_FLIGHT, 0), 4, holder);
        assertThat(k.slots[0]).isZero();
        assertThat(k.step(reserve(ONE_IN_FLIGHT, NO_LIMIT), 5, new Waiter("newcomer", false)).slotless())
                .as("two tickets ahead of one without").isTrue();
        assertThat(k.step(Step.of(Step.Op.PEEK, ONE_IN_FLIGHT, 1), 5, null).slotless())
                .as("a peek has every ticket ahead").isTrue();
        assertThat(k.step(reserve(ONE_IN_FLIGHT, NO_LIMIT), 6, waits("w2")).slotless()).as("w1 is ahead").isTrue();
        assertThat(k.step(reserve(ONE_IN_FLIGHT, NO_LIMIT), 7, waits("w1")).granted()).isTrue();
        assertThat(k.tickets[0]).as("admitted, its ticket goes").containsExactly("w2");
        assertThat(k.slots[0]).isEqualTo(1);
    }

    @Test
    void onlyARefusalForASlotThatAcceptsAWaitOfAWaiterThatTakesTicketsPlacesOne() {
        Limits oneTokenOneSlot = Limits.of(Limit.of(1, 1, 1000)).withInFlight(1);
        Keys k = new Keys(List.of(oneTokenOneSlot), 0);
        assertThat(k.step(reserve(oneTokenOneSlot, 0), 0, new Waiter("a", false)).granted()).isTrue();
        assertThat(k.step(reserve(oneTokenOneSlot, 0), 0, waits("no-wait")).slotless()).isTrue();
        assertThat(k.step(reserve(oneTokenOneSlot, NO_LIMIT), 0, new Waiter("no-ticket", false)).slotless()).isTrue();
        assertThat(k.tickets[0]).isNull();
        assertThat(k.step(reserve(oneTokenOneSlot, NO_LIMIT), 0, waits("waiter")).slotless()).isTrue();
        assertThat(k.tickets[0]).containsExactly("waiter");
        k.step(Step.of(Step.Op.RELEASE, oneTokenOneSlot, 0), 0, new Waiter("a", false));
        // the slot is free for it, the token is not: refused for its wait, not for a slot
        Outcome tokens = k.step(reserve(oneTokenOneSlot, 10), 1, waits("waiter"));
        assertThat(tokens.granted()).isFalse();
        assertThat(tokens.slotless()).isFalse();
        assertThat(tokens.waitTicks()).isEqualTo(999);
        assertThat(k.tickets[0]).as("its ticket stays as it was").containsExactly("waiter");
    }

    @Test
    void aWaiterOfSeveralKeysStandsOnEachInOneOrderAndGivesUpTheOthersWhenAdmitted() {
        Keys k = new Keys(List.of(ONE_IN_FLIGHT, ONE_IN_FLIGHT), 0);
        Step a = new Step(Step.Op.RESERVE, new int[] {1}, List.of(ONE_IN_FLIGHT), 1, 0);
        k.step(a, 0, new Waiter("holds-a", false)); // a is taken, b is free
        Step both = new Step(Step.Op.RESERVE, new int[] {1}, List.of(ONE_IN_FLIGHT, ONE_IN_FLIGHT), 1, NO_LIMIT);
        assertThat(k.step(both, 1, waits("x")).slotless()).isTrue();
        assertThat(k.step(both, 2, waits("y")).slotless()).isTrue();
        assertThat(k.tickets[0]).containsExactly("x", "y");
        assertThat(k.tickets[1]).as("on the free key too, in the same order").containsExactly("x", "y");

        Step candidates = new Step(Step.Op.RESERVE, new int[] {1, 1}, List.of(ONE_IN_FLIGHT, ONE_IN_FLIGHT), 1,
                NO_LIMIT);
        Outcome x = k.step(candidates, 3, waits("x"));
        assertThat(x.granted()).isTrue();
        assertThat(x.chosen()).as("b, free for x, first in line").isEqualTo(1);
        assertThat(k.tickets[0]).as("its ticket on a, not chosen, goes too").containsExactly("y");
        assertThat(k.tickets[1]).containsExactly("y");
    }

    @Test
    void aReleaseByAWaiterWithdrawsItsTicketAndGivesBackNoSlotThere() {
        Keys k = new Keys(List.of(ONE_IN_FLIGHT), 0);
        k.step(reserve(ONE_IN_FLIGHT, 0), 0, new Waiter("holder", false));
        k.step(reserve(ONE_IN_FLIGHT, NO_LIMIT), 1, waits("gives-up"));
        k.step(Step.of(Step.Op.RELEASE, ONE_IN_FLIGHT, 0), 2, waits("gives-up"));
        assertThat(k.tickets[0]).isNull();
        assertThat(k.slots[0]).as("the holder's slot stays").isEqualTo(1);
        k.step(Step.of(Step.Op.RELEASE, ONE_IN_FLIGHT, 0), 3, new Waiter("holder", false));
        assertThat(k.slots[0]).isZero();
    }
}
