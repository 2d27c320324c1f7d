package io.tokenbucket.math;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import io.tokenbucket.testsupport.random.TestSeed;
import org.junit.jupiter.api.Test;

import static io.tokenbucket.math.BucketMath.NO_LIMIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link BucketMath#reserveAll} with plain numbers: ticks are milliseconds, a key's state is the array of
 * {@code tat}s each step returns.
 */
class BucketMathAllOfTest {

    private static final Limits ONE_PER_SECOND = Limits.of(Limit.of(1, 1, 1000));
    private static final Limits TEN_PER_SECOND = Limits.of(Limit.of(5, 10, 1000)); // burst 5, 100 ms a token

    private static long[] full(long now) {
        return new long[] {now};
    }

    private static Steps.All all(long[] key, Limits keyLimits, long[] shared, Limits sharedLimits, long now,
                                     long maxWait) {
        return Steps.reserveAll(new long[][] {key}, List.of(keyLimits), new long[][] {shared},
                List.of(sharedLimits), now, 1, maxWait);
    }

    @Test
    void theWaitIsTheLongestAndEveryKeyIsChargedAtTheReleaseInstant() {
        long[] proxy = {1000}; // used up until 1000: its next token is at 1000
        Steps.All d = all(proxy, ONE_PER_SECOND, full(0), TEN_PER_SECOND, 0, NO_LIMIT);
        assertThat(d.granted()).isTrue();
        assertThat(d.waitTicks()).isEqualTo(1000);
        assertThat(d.tatTicks(0)).containsExactly(2000); // the longest wait's key: as a reservation of its own
        assertThat(d.tatTicks(1)).containsExactly(1100); // the host: one token taken at 1000, not at 0
        assertThat(d.remaining()).isZero(); // the proxy has none left
    }

    @Test
    void aKeyWhoseDebtIsBeyondTheReleaseIsChargedFromItsOwnBase() {
        long[] host = {700}; // with one more token 300 ms beyond its burst of 500: its own wait is 300
        Steps.All d = all(full(0), ONE_PER_SECOND, host, TEN_PER_SECOND, 0, NO_LIMIT);
        assertThat(d.waitTicks()).isEqualTo(300);
        assertThat(d.tatTicks(0)).containsExactly(1300); // the proxy: its token taken at 300
        assertThat(d.tatTicks(1)).containsExactly(800);
    }

    @Test
    void aRefusalChargesNoKeyAndSaysTheWait() {
        long[] proxy = {1000};
        long[] host = {0};
        Steps.All d = all(proxy, ONE_PER_SECOND, host, TEN_PER_SECOND, 0, 999);
        assertThat(d.granted()).isFalse();
        assertThat(d.waitTicks()).isEqualTo(1000);
        assertThat(d.tatTicks(0)).isSameAs(proxy);
        assertThat(d.tatTicks(1)).isSameAs(host);
        assertThat(d.remaining()).isZero();
    }

    @Test
    void withOneKeyOfOneLimitItIsTheOrdinaryReservation() {
        Limit limit = Limit.of(3, 2, 1000);
        Random random = TestSeed.random("BucketMathAllOfTest.withOneKeyOfOneLimit", 14);
        long tat = 0;
        for (int i = 0; i < 2000; i++) {
            long now = i * 97L + random.nextInt(50);
            long maxWait = random.nextBoolean() ? NO_LIMIT : random.nextInt(2000);
            Steps.One one = Steps.reserve(tat, now, 1, limit, maxWait);
            Steps.All all = Steps.reserveAll(new long[][] {{tat}}, List.of(Limits.of(limit)),
                    new long[0][], List.of(), now, 1, maxWait);
            assertThat(all.granted()).isEqualTo(one.granted());
            assertThat(all.waitTicks()).isEqualTo(one.waitTicks());
            assertThat(all.remaining()).isEqualTo(one.remaining());
            assertThat(all.tatTicks(0)).containsExactly(one.tatTicks(0));
            tat = one.tatTicks(0);
        }
    }

    @Test
    void theFreestCandidateIsTheOneWhoseWaitWithTheSharedKeysIsShortest() {
        long[][] proxies = {{3000}, {1500}, {2000}};
        long[] host = {400}; // its own wait: 0 (burst 500)
        Steps.All d = Steps.reserveAll(proxies, List.of(ONE_PER_SECOND, ONE_PER_SECOND, ONE_PER_SECOND),
                new long[][] {host}, List.of(TEN_PER_SECOND), 0, 1, NO_LIMIT);
        assertThat(d.chosen()).isEqualTo(1);
        assertThat(d.waitTicks()).isEqualTo(1500);
        assertThat(d.tatTicks(0)).containsExactly(2500);
        assertThat(d.tatTicks(1)).containsExactly(1600);
        // when the host is the slowest, every candidate waits as long: the one with most tokens is chosen
        long[] busyHost = {2000};
        Steps.All tie = Steps.reserveAll(new long[][] {{500}, {0}, {0}},
                List.of(Limits.of(Limit.of(2, 2, 1000)), Limits.of(Limit.of(2, 2, 1000)), ONE_PER_SECOND),
                new long[][] {busyHost}, List.of(TEN_PER_SECOND), 0, 1, NO_LIMIT);
        assertThat(tie.waitTicks()).isEqualTo(1600);
        assertThat(tie.chosen()).isEqualTo(1);
    }

    @Test
    void everyLimitOfEveryKeyCounts() {
        Limits twoLimits = Limits.of(Limit.of(5, 5, 1000), Limit.of(2, 2, 10_000)); // 5/s and 2 per 10 s
        long[] key = {0, 5000}; // the slow limit has one token left
        Steps.All first = all(key, twoLimits, full(0), TEN_PER_SECOND, 0, NO_LIMIT);
        assertThat(first.waitTicks()).isZero();
        Steps.All second = all(first.tatTicks(0), twoLimits, first.tatTicks(1), TEN_PER_SECOND, 0, NO_LIMIT);
        assertThat(second.waitTicks()).isEqualTo(5000);
        assertThat(second.tatTicks(0)).containsExactly(5200, 15_000);
        assertThat(second.tatTicks(1)).containsExactly(5100);
    }

    @Test
    void badArgumentsFailClearly() {
        assertThatThrownBy(() -> Steps.reserveAll(new long[0][], List.of(), new long[][] {{0}},
                List.of(ONE_PER_SECOND), 0, 1, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one candidate");
        assertThatThrownBy(() -> Steps.reserveAll(new long[][] {{0}}, List.of(TEN_PER_SECOND),
                new long[][] {{0}}, List.of(ONE_PER_SECOND), 0, 2, NO_LIMIT))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("exceeds capacity 1");
    }

    @Test
    void extremeClocksAndLongWaitsNeitherWrapNorAdmit() {
        long now = Long.MAX_VALUE - 10;
        long[] proxy = {now + BucketMath.MAX_WAIT_TICKS}; // waits the longest wait there is
        Steps.All d = all(proxy, ONE_PER_SECOND, full(now), TEN_PER_SECOND, now, NO_LIMIT);
        assertThat(d.granted()).isTrue();
        assertThat(d.waitTicks()).isEqualTo(BucketMath.MAX_WAIT_TICKS);
        assertThat(d.tatTicks(1)[0] - now).isEqualTo(BucketMath.MAX_WAIT_TICKS + 100);
        Steps.All beyond = all(d.tatTicks(0), ONE_PER_SECOND, d.tatTicks(1), TEN_PER_SECOND, now, NO_LIMIT);
        assertThat(beyond.granted()).isFalse();
    }

    /**
     * Mixed single and all-of reservations on random keys at random instants, each released at {@code now + wait}:
     * on every key, the tokens released in any window of length {@code d} are at most {@code C + d/T} (plus one for
     * rounding), and the waiters whose wait comes from a key's own debt are released on it in reservation order.
     * Charging each key from its own base instead fails the first check (see {@code ownBaseWouldOverAdmit}).
     */
    @Test
    void noKeyIsOverAdmittedAtReleaseAndWaitersStayInOrder() {
        Limits[] limits = {Limits.of(Limit.of(2, 1, 1000)), Limits.of(Limit.of(1, 2, 1000)),
            Limits.of(Limit.of(3, 10, 1000)), Limits.of(Limit.of(1, 1, 300))};
        Random random = TestSeed.random("BucketMathAllOfTest.noKeyIsOverAdmitted", 1414);
        long[][] tats = new long[limits.length][];
        for (int k = 0; k < tats.length; k++) {
            tats[k] = full(0);
        }
        List<List<Long>> releases = new ArrayList<>();
        List<List<Long>> ownOrder = new ArrayList<>();
        for (int k = 0; k < limits.length; k++) {
            releases.add(new ArrayList<>());
            ownOrder.add(new ArrayList<>());
        }
        long now = 0;
        for (int i = 0; i < 5000; i++) {
            now += random.nextInt(120);
            int a = random.nextInt(limits.length);
            int b = random.nextInt(limits.length);
            long maxWait = random.nextInt(4) == 0 ? 0 : 20_000;
            if (a == b) {
                Steps.One d = Steps.reserve(tats[a], now, 1, limits[a], maxWait);
                if (d.granted()) {
                    tats[a] = d.tatTicks();
                    releases.get(a).add(now + d.waitTicks());
                    if (d.waitTicks() > 0) {
                        ownOrder.get(a).add(now + d.waitTicks());
                    }
                }
                continue;
            }
            long waitOfA = Steps.peek(tats[a], now, 1, limits[a]).waitTicks();
            Steps.All d = Steps.reserveAll(new long[][] {tats[a]}, List.of(limits[a]),
                    new long[][] {tats[b]}, List.of(limits[b]), now, 1, maxWait);
            if (d.granted()) {
                tats[a] = d.tatTicks(0);
                tats[b] = d.tatTicks(1);
                releases.get(a).add(now + d.waitTicks());
                releases.get(b).add(now + d.waitTicks());
                if (d.waitTicks() > 0 && d.waitTicks() == waitOfA) {
                    ownOrder.get(a).add(now + d.waitTicks());
                }
            }
        }
        for (int k = 0; k < limits.length; k++) {
            assertThat(releases.get(k)).hasSizeGreaterThan(100);
            assertWithinBound(releases.get(k), limits[k].get(0));
            assertThat(ownOrder.get(k)).as("key %d's own waiters", k).isSorted();
        }
    }

    /** What {@link #noKeyIsOverAdmittedAtReleaseAndWaitersStayInOrder} guards against, shown on the alternative. */
    @Test
    void ownBaseWouldOverAdmit() {
        // host 1 token per 100 ms, no burst; five proxies each used up for 0..1000 ms: charged from its own base, the
        // host hands out five tokens at 0..400 that are all used at 1000
        Limit host = Limit.of(1, 10, 1000);
        long tat = 0;
        List<Long> releases = new ArrayList<>();
        for (int p = 0; p < 5; p++) {
            long now = p * 100L;
            long proxyWait = 1000 - now;
            long ownBase = Math.max(tat, now) + host.interval();
            tat = ownBase;
            releases.add(now + proxyWait);
        }
        assertThat(releases).containsOnly(1000L); // five at one instant: over a bound of 1 + 0/100
        // charged at the release instant, they come 100 ms apart
        long[] hostTats = full(0);
        List<Long> charged = new ArrayList<>();
        for (int p = 0; p < 5; p++) {
            long now = p * 100L;
            Steps.All d = all(new long[] {1000}, ONE_PER_SECOND, hostTats, Limits.of(host), now, NO_LIMIT);
            hostTats = d.tatTicks(1);
            charged.add(now + d.waitTicks());
        }
        assertThat(charged).containsExactly(1000L, 1100L, 1200L, 1300L, 1400L);
    }

    /** At most {@code C + d/T + 1} releases in any window of length {@code d}. */
    private static void assertWithinBound(List<Long> releaseList, Limit limit) {
        long[] releases = releaseList.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(releases);
        for (long window : new long[] {1, 100, 1000, 5000}) {
            long bound = limit.capacity() + window / limit.interval() + 1;
            for (int i = 0, j = 0; i < releases.length; i++) {
                while (releases[i] - releases[j] >= window) {
                    j++;
                }
                assertThat((long) (i - j + 1)).as("released in a %d ms window", window).isLessThanOrEqualTo(bound);
            }
        }
    }

    /**
     * Head-of-line blocking beyond a burst. A fast proxy (10 a second, burst 1) and a slow host (1 per 10 s): the
     * second all-of exchange waits 10 s for the host and charges the proxy at that release, so the proxy's state says
     * "owed until 10.1 s", and a single exchange on the proxy alone, for any other host, now waits 10.1 s although
     * the proxy is idle from 0.1 s to 10 s and serving it at 0.1 s would keep every window within the proxy's limit.
     * A bucket's one number cannot hold that hole: this is the documented price of never over-admitting a key
     * (BucketMath's javadoc, the adoc's all-of section), pinned here so that a change of it changes them too.
     */
    @Test
    void anAllOfExchangeHeldBackBySlowKeyKeepsItsOtherKeyBusyUntilItsRelease() {
        Limits proxyLimits = Limits.of(Limit.of(1, 10, 1000)); // burst 1, 100 ms a token
        Limits hostLimits = Limits.of(Limit.of(1, 1, 10_000)); // 1 per 10 s
        Steps.All first = all(full(0), proxyLimits, full(0), hostLimits, 0, NO_LIMIT);
        Steps.All second = all(first.tatTicks(0), proxyLimits, first.tatTicks(1), hostLimits, 0, NO_LIMIT);
        assertThat(second.waitTicks()).isEqualTo(10_000);
        Steps.One alone = Steps.reserve(second.tatTicks(0), 0, 1, proxyLimits, NO_LIMIT);
        assertThat(alone.waitTicks()).as("the proxy is owed until the host's release plus one proxy token")
                .isEqualTo(10_100);
    }

    /** {@code op} on a proxy (state {@code proxy}) and a host (state {@code host}) as one group of two keys. */
    private static Outcome both(Step.Op op, long amount, long[][] tats, RateState[] rates, long now) {
        return BucketMath.decide(new Step(op, new int[] {2}, List.of(ONE_PER_SECOND, TEN_PER_SECOND), amount, 0),
                now, tats, rates, new long[2]);
    }

    /**
     * The other operations of the one step on several keys: a refund gives back to every key and answers the fewest
     * tokens left; a penalty makes every key wait, answered as a peek of one token; a peek decides as a reservation
     * would and stores nothing; a remove leaves every key full. The proxy (1 a second, burst 1) used up until 1000,
     * the host (burst 5, 100 ms a token) with 2 of its 5 tokens left.
     */
    @Test
    void refundPenalizePeekAndRemoveActOnEveryKeyOfTheStep() {
        long[] proxy = {1000};
        long[] host = {300};
        long[][] tats = {proxy, host};
        RateState[] rates = new RateState[2];
        Outcome peek = both(Step.Op.PEEK, 1, tats, rates, 0);
        assertThat(peek).isEqualTo(new Outcome(false, 0, 1000, 0, Adaptive.PPM, false, false, 0));
        assertThat(tats[0]).isSameAs(proxy);
        assertThat(tats[1]).isSameAs(host);

        Outcome refund = both(Step.Op.REFUND, 1, tats, rates, 0);
        assertThat(tats[0]).containsExactly(0); // the proxy full again
        assertThat(tats[1]).containsExactly(200); // the host: one token of 100 ms back
        assertThat(refund).isEqualTo(new Outcome(true, 0, 0, 1, Adaptive.PPM, false, false, 0)); // the proxy's 1

        Outcome penalized = both(Step.Op.PENALIZE, 2000, tats, rates, 0);
        assertThat(tats[0]).containsExactly(2000); // no token before 2000: debt penalty + C*T - T
        assertThat(tats[1]).containsExactly(2400);
        assertThat(penalized).isEqualTo(new Outcome(false, 0, 2000, 0, Adaptive.PPM, false, false, 0));

        Outcome removed = both(Step.Op.REMOVE, 0, tats, rates, 5000);
        assertThat(tats[0]).containsExactly(5000);
        assertThat(tats[1]).containsExactly(5000);
        assertThat(removed.remaining()).isEqualTo(1);
        assertThat(both(Step.Op.PEEK, 1, tats, rates, 5000).remaining()).isEqualTo(1);
    }
}
