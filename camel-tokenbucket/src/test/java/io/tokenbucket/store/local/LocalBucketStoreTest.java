package io.tokenbucket.store.local;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.Rate;
import io.tokenbucket.store.Reservations;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The local store on a clock the tests move by hand (nanoseconds). */
class LocalBucketStoreTest {

    private static final long MS = 1_000_000L;

    private final AtomicLong clock = new AtomicLong(1_000 * MS);
    private final LocalBucketStore store = new LocalBucketStore(clock::get);
    private final ExecutorService pool = Executors.newFixedThreadPool(4);

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    /**
     * The lock-free path is the locked one: the same reservations, refunds, penalties and removes on a store with it
     * and on one without, at the same instants, answer the same and leave the same states (read back by peeks).
     * Random limits, costs, waits and steps of time; the limits of a key change now and then, so the lock-free path
     * also reads states the locked path wrote for other limits. Waits accepted include negative ones and ones past
     * the store's ceiling (capped as a command caps them); reservations come through {@code reserveNow} (no command
     * built), through {@code reserve} and through {@code takeNow} (accepting no wait, a primitive answer); the clock
     * starts anywhere, so it may pass the end of the range of a {@code long}, and the markers of the table, during
     * the run.
     */
    @ParameterizedTest(name = "clock from {0}")
    @ValueSource(longs = {1_000 * MS, Long.MAX_VALUE - 1_000_000 * MS, Long.MIN_VALUE, -1_000_000 * MS})
    void theLockFreeReservationAnswersAsTheLockedPath(long start) {
        clock.set(start);
        java.util.Random random = new java.util.Random(22);
        LocalBucketStore locked = new LocalBucketStore(clock::get, false);
        int lockFreeGrants = 0;
        for (int i = 0; i < 20_000; i++) {
            String key = "k" + random.nextInt(4);
            Limit limit = Limit.of(1 + random.nextInt(20), 1 + random.nextInt(10), (1 + random.nextInt(1000)) * MS);
            Limits limits = random.nextInt(10) == 0 ? Limits.of(limit, Limit.of(5, 1, 50 * MS)) : Limits.of(limit);
            long tokens = 1 + random.nextInt((int) limits.capacity());
            long maxWait = switch (random.nextInt(5)) {
                case 0 -> 0;
                case 1 -> random.nextInt(2000) * MS;
                case 2 -> random.nextBoolean() ? -1 - random.nextInt(2000) * MS : Long.MIN_VALUE;
                case 3 -> BucketStore.MAX_WAIT_NANOS + random.nextInt(2);
                default -> BucketMath.NO_LIMIT;
            };
            Outcome expected;
            Outcome actual;
            switch (random.nextInt(20)) {
                case 0 -> {
                    expected = locked.refund(key, limits, tokens).toCompletableFuture().join();
                    actual = store.refund(key, limits, tokens).toCompletableFuture().join();
                }
                case 1 -> {
                    long penalty = random.nextInt(3000) * MS;
                    expected = locked.penalize(key, limits, penalty).toCompletableFuture().join();
                    actual = store.penalize(key, limits, penalty).toCompletableFuture().join();
                }
                case 2 -> {
                    expected = locked.remove(key, limits).toCompletableFuture().join();
                    actual = store.remove(key, limits).toCompletableFuture().join();
                }
                case 3 -> { // the primitive answer of a reservation accepting no wait: the tokens left, or none taken
                    expected = locked.reserveNow(key, limits, tokens, 0);
                    assertThat(store.takeNow(key, limits, tokens)).as("take at step %d on %s", i, key)
                            .isEqualTo(expected.granted() ? expected.remaining() : BucketStore.NOT_TAKEN);
                    actual = expected;
                }
                default -> {
                    expected = locked.reserveNow(key, limits, tokens, maxWait);
                    actual = random.nextBoolean() ? store.reserveNow(key, limits, tokens, maxWait)
                            : store.reserve(key, limits, tokens, maxWait).toCompletableFuture().join();
                    lockFreeGrants += limits.size() == 1 && actual.granted() ? 1 : 0;
                }
            }
            assertThat(actual).as("step %d on %s", i, key).isEqualTo(expected);
            assertThat(store.peek(key, limits, 1).toCompletableFuture().join()).as("state after step %d", i)
                    .isEqualTo(locked.peek(key, limits, 1).toCompletableFuture().join());
            clock.addAndGet(random.nextInt(4) == 0 ? 0 : random.nextInt(300) * MS);
        }
        assertThat(lockFreeGrants).as("grants on the lock-free path, of 20,000 steps").isGreaterThan(5_000);
    }

    /**
     * On one key of a fixed rate, a reservation accepting a wait is the same as one accepting none followed, when that
     * is refused, by the one accepting the wait: the same answers and the same states at the same instants. The
     * producer relies on it to let an exchange that passes at once take no waiting place
     * ({@code TokenBucketProducer.acquire}, through {@code BucketStore.takeNow}).
     */
    @Test
    void aReservationWithoutWaitThenWithItAnswersAsTheOneAcceptingTheWait() {
        java.util.Random random = new java.util.Random(23);
        LocalBucketStore direct = new LocalBucketStore(clock::get);
        int grantedFirst = 0;
        int askedTwice = 0;
        for (int i = 0; i < 20_000; i++) {
            String key = "k" + random.nextInt(4);
            Limits limits = Limits.of(Limit.of(1 + random.nextInt(20), 1 + random.nextInt(10),
                    (1 + random.nextInt(1000)) * MS));
            long tokens = 1 + random.nextInt((int) limits.capacity());
            long maxWait = random.nextInt(4) == 0 ? BucketMath.NO_LIMIT : random.nextInt(2000) * MS;
            Outcome expected = direct.reserveNow(key, limits, tokens, maxWait);
            Outcome actual = store.reserveNow(key, limits, tokens, 0);
            if (actual.granted()) {
                grantedFirst++;
            } else {
                askedTwice++;
                actual = store.reserveNow(key, limits, tokens, maxWait);
            }
            assertThat(actual).as("step %d on %s", i, key).isEqualTo(expected);
            assertThat(store.peek(key, limits, 1).toCompletableFuture().join()).as("state after step %d", i)
                    .isEqualTo(direct.peek(key, limits, 1).toCompletableFuture().join());
            clock.addAndGet(random.nextInt(4) == 0 ? 0 : random.nextInt(300) * MS);
        }
        assertThat(grantedFirst).as("granted without a wait, of 20,000 steps").isGreaterThan(2_000);
        assertThat(askedTwice).as("refused without a wait, of 20,000 steps").isGreaterThan(2_000);
    }

    @Test
    void theFreestCandidateIsChosenAtOneInstantEvenWhenTimePassesBetweenReadings() {
        AtomicLong step = new AtomicLong(); // how far the clock moves at each reading
        LocalBucketStore moving = new LocalBucketStore(() -> clock.getAndAdd(step.get()));
        Limits onePerHour = Limits.of(Limit.of(1, 1, 3_600_000 * MS));
        // booked 1 ms apart: a, then b, then c; their tokens come back in that order
        for (String key : List.of("a", "b", "c")) {
            assertThat(moving.reserveNow(key, onePerHour, 1, 0).granted()).isTrue();
            clock.addAndGet(MS);
        }
        // a busy machine: 5 ms pass at every reading. Read once per candidate, c would look soonest (its wait read
        // 10 ms after a's, for a token due only 2 ms after a's)
        step.set(5 * MS);
        assertThat(Reservations.reserveFreest(moving, List.of("a", "b", "c"), List.of(onePerHour, onePerHour,
                onePerHour), 1,
                BucketMath.NO_LIMIT).toCompletableFuture().join().chosen()).as("a's token comes back first").isZero();
    }

    @Test
    void keysAreIndependent() {
        Limit one = Limit.of(1, 1, 1000 * MS);
        assertThat(store.reserveNow("a", Limits.of(one), 1, 0).granted()).isTrue();
        assertThat(store.reserveNow("a", Limits.of(one), 1, 0).granted()).isFalse();
        assertThat(store.reserveNow("b", Limits.of(one), 1, 0).granted()).isTrue();
    }

    @Test
    void waitsAreReservedInOrderAndRefusalsConsumeNothing() {
        Limit two = Limit.of(2, 2, 1000 * MS);
        assertThat(store.reserveNow("k", Limits.of(two), 2, BucketMath.NO_LIMIT).waitTicks()).isZero();
        assertThat(store.reserveNow("k", Limits.of(two), 1, 100 * MS).granted()).isFalse();
        assertThat(store.reserveNow("k", Limits.of(two), 1, BucketMath.NO_LIMIT).waitTicks()).isEqualTo(500 * MS);
        assertThat(store.reserveNow("k", Limits.of(two), 1, BucketMath.NO_LIMIT).waitTicks()).isEqualTo(1000 * MS);
        clock.addAndGet(1000 * MS);
        Outcome peek = store.peek("k", Limits.of(two), 1).toCompletableFuture().join();
        assertThat(peek.waitTicks()).isEqualTo(500 * MS);
        assertThat(peek.remaining()).isZero();
        clock.addAndGet(1000 * MS);
        assertThat(store.peek("k", Limits.of(two), 1).toCompletableFuture().join().remaining()).isEqualTo(2);
    }

    /**
     * A wait counts from the instant the store decided, whoever reads the answer when: the lock-free path, the
     * locked path and an in-flight key all answer the clock reading they decided at, so a caller that releases at
     * {@code fromTicks + waitTicks} releases in the order the store reserved.
     */
    @ParameterizedTest(name = "in flight {0}")
    @ValueSource(ints = {0, 3})
    void aWaitCountsFromTheInstantOfTheDecision(int inFlight) {
        Limits limits = Limits.of(Limit.of(1, 1, 1000 * MS)).withInFlight(inFlight);
        List<Long> releases = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            long decidedAt = clock.get();
            Outcome o = store.reserveNow("k", limits, 1, BucketMath.NO_LIMIT);
            clock.addAndGet(250 * MS); // the next one asks later...
            assertThat(o.fromTicks()).isEqualTo(decidedAt); // ...and this answer is read later still: same instant
            releases.add(o.fromTicks() + o.waitTicks());
        }
        assertThat(releases).containsExactly(1_000 * MS, 2_000 * MS, 3_000 * MS);
    }

    @Test
    void refundGivesTokensBackAndRemoveStartsFull() {
        Limit three = Limit.of(3, 3, 3000 * MS);
        store.reserveNow("k", Limits.of(three), 3, 0);
        assertThat(store.peek("k", Limits.of(three), 1).toCompletableFuture().join().remaining()).isZero();
        store.refund("k", Limits.of(three), 2);
        assertThat(store.peek("k", Limits.of(three), 1).toCompletableFuture().join().remaining()).isEqualTo(2);
        store.remove("k", Limits.of(three));
        assertThat(store.size()).isZero();
        assertThat(store.peek("k", Limits.of(three), 1).toCompletableFuture().join().remaining()).isEqualTo(3);
    }

    @Test
    void sweepDropsOnlyFullBucketsAndChangesNoOutcome() {
        Limit one = Limit.of(1, 1, 1000 * MS);
        store.reserveNow("busy", Limits.of(one), 1, 0);
        clock.addAndGet(500 * MS);
        store.reserveNow("fresh", Limits.of(one), 1, 0);
        clock.addAndGet(600 * MS); // "busy" is full again, "fresh" is not
        assertThat(store.sweep()).isEqualTo(1);
        assertThat(store.size()).isEqualTo(1);
        assertThat(store.reserveNow("busy", Limits.of(one), 1, 0).granted()).isTrue();
        assertThat(store.reserveNow("fresh", Limits.of(one), 1, 0).granted()).isFalse();
    }

    /**
     * A rate state lives until the bucket has been full for the memory, exactly, as a Redis key lives until its
     * latest tat plus the memory; a key whose state is the fresh one (no slow start, at the ceiling) is swept as
     * soon as it is full.
     */
    @Test
    void theSweepKeepsARateStateUntilTheBucketHasBeenFullForTheMemory() {
        // 10 per second, burst 1; memory 60 s; starting at 0.25: 400 ms a token, a step per 3 tokens
        Limits slow = Limits.of(Limit.of(1, 10, 1000 * MS))
                .withAdaptive(Adaptive.of(100_000, 500_000, 100_000, 0, 60_000 * MS).withStart(250_000));
        Limits plain = Limits.of(Limit.of(1, 10, 1000 * MS))
                .withAdaptive(Adaptive.of(100_000, 500_000, 100_000, 0, 60_000 * MS));
        long start = clock.get();
        assertThat(store.reserveNow("slow", slow, 1, 0).granted()).isTrue(); // starting, one token of credit
        assertThat(store.reserveNow("plain", plain, 1, 0).granted()).isTrue(); // the ceiling: no rate state
        assertThat(Rate.of(store.rate("slow", slow).toCompletableFuture().join()))
                .isEqualTo(new Rate(false, 250_000, true));
        clock.set(start + 400 * MS); // both full: "slow" since now, "plain" since 300 ms
        assertThat(store.sweep()).as("plain, full, without a rate state").isEqualTo(1);
        clock.set(start + 400 * MS + 60_000 * MS - 1);
        assertThat(store.sweep()).isZero();
        assertThat(store.size()).isEqualTo(1);
        clock.set(start + 400 * MS + 60_000 * MS);
        assertThat(store.sweep()).as("full for the memory: its rate forgotten").isEqualTo(1);
        assertThat(store.size()).isZero();
        // a key at the ceiling after its start is kept as long: without state it would start again at 0.25
        // one token a millisecond at the ceiling, a step per token, +0.5 of the rate each: seven tokens after the
        // cut reach the ceiling (0.125, back to 0.9 of where the cut came, 0.1875 and 0.225, to it, 0.25, then
        // growing steps beyond it: 0.375, 0.5625, 0.84375, the ceiling)
        Limits fast = Limits.of(Limit.of(1, 1, MS))
                .withAdaptive(Adaptive.of(100_000, 500_000, 500_000, 0, 60_000 * MS).withStart(250_000));
        long t = clock.get();
        store.throttle("up", fast).toCompletableFuture().join(); // at the start: cut to 0.125, remembering 0.25
        for (int i = 0; i < 7; i++) {
            assertThat(store.reserveNow("up", fast, 1, BucketMath.NO_LIMIT).granted()).isTrue();
        }
        assertThat(store.rate("up", fast).toCompletableFuture().join().factorPpm()).isEqualTo(Adaptive.PPM);
        clock.set(t + 60_000 * MS); // the emptied bucket and seven tokens were booked within the first 40 ms
        assertThat(store.sweep()).isZero();
        assertThat(Rate.of(store.rate("up", fast).toCompletableFuture().join()))
                .isEqualTo(new Rate(false, Adaptive.PPM, false));
        clock.set(t + 70_000 * MS);
        assertThat(store.sweep()).isEqualTo(1);
        assertThat(Rate.of(store.rate("up", fast).toCompletableFuture().join()))
                .isEqualTo(new Rate(false, 250_000, true));
    }

    @Test
    void aMillionKeysLeaveNothingBehindOnceIdle() {
        Limit one = Limit.of(1, 1, 10 * MS);
        for (int i = 0; i < 1_000_000; i++) {
            assertThat(store.reserveNow("key-" + i, Limits.of(one), 1, 0).granted()).isTrue();
        }
        assertThat(store.size()).isEqualTo(1_000_000);
        clock.addAndGet(10 * MS);
        assertThat(store.sweep()).isEqualTo(1_000_000);
        assertThat(store.size()).isZero();
    }

    @Test
    void manyThreadsOnOneKeyGetExactlyTheCapacity() throws Exception {
        Limit fifty = Limit.of(50, 50, 1000 * MS);
        CountDownLatch start = new CountDownLatch(1);
        AtomicLong granted = new AtomicLong();
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            futures.add(pool.submit(() -> {
                start.await();
                for (int i = 0; i < 10_000; i++) {
                    if (store.reserveNow("hot", Limits.of(fifty), 1, 0).granted()) {
                        granted.incrementAndGet();
                    }
                }
                return null;
            }));
        }
        start.countDown();
        for (Future<?> f : futures) {
            f.get(30, TimeUnit.SECONDS);
        }
        assertThat(granted.get()).isEqualTo(50); // the clock stood still: the burst and not one more
    }

    /**
     * The CAMEL-24926 race: a sweep dropping a bucket while a reservation on it is in flight. In each round the
     * clock jumps past every bucket's refill (so every bucket is full, and a sweep wants to drop it), then two
     * threads hammer every key with the clock standing still while a third sweeps. Each key
     * must grant exactly one token per round: a lost reservation would grant a second.
     */
    @Test
    void sweepingDuringReservationsNeverLosesOne() throws Exception {
        Limit onePer10ms = Limit.of(1, 1, 10 * MS);
        int keys = 16;
        int rounds = 2000;
        AtomicLongArray granted = new AtomicLongArray(keys);
        // three parties per round: the sweeper sweeps for as long as the workers reserve, at least once
        CyclicBarrier round = new CyclicBarrier(3, () -> clock.addAndGet(20 * MS));
        AtomicLong workerRoundsDone = new AtomicLong();
        Future<Long> sweeper = pool.submit(() -> {
            long swept = 0;
            for (int r = 0; r < rounds; r++) {
                round.await(30, TimeUnit.SECONDS);
                do {
                    swept += store.sweep();
                } while (workerRoundsDone.get() < 2L * (r + 1));
            }
            return swept;
        });
        List<Future<?>> workers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            workers.add(pool.submit(() -> {
                for (int r = 0; r < rounds; r++) {
                    round.await(30, TimeUnit.SECONDS);
                    for (int rep = 0; rep < 3; rep++) {
                        for (int k = 0; k < keys; k++) {
                            if (store.reserveNow("k" + k, Limits.of(onePer10ms), 1, 0).granted()) {
                                granted.incrementAndGet(k);
                            }
                        }
                    }
                    workerRoundsDone.incrementAndGet();
                }
                return null;
            }));
        }
        for (Future<?> w : workers) {
            w.get(60, TimeUnit.SECONDS);
        }
        assertThat(sweeper.get(10, TimeUnit.SECONDS)).as("buckets the sweep dropped").isPositive();
        for (int k = 0; k < keys; k++) {
            assertThat(granted.get(k)).as("tokens granted on key k%d", k).isEqualTo(rounds);
        }
    }

    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a spin ignores interrupts
    void aClockReadingTheRetiredMarkerStillReservesAndNeverSpins() {
        // Long.MIN_VALUE marks a retired bucket; a clock that reads exactly that (an injected one, or nanoTime after
        // wrapping) must still give fresh buckets a state a reservation can use
        LocalBucketStore atTheMarker = new LocalBucketStore(() -> Long.MIN_VALUE);
        Limit one = Limit.of(1, 1, 1_000_000_000L);
        assertThat(atTheMarker.reserveNow("k", Limits.of(one), 1, 0).granted()).isTrue();
        assertThat(atTheMarker.reserveNow("k", Limits.of(one), 1, 0).granted()).isFalse();
        Limits two = Limits.of(one, Limit.of(5, 5, 60_000_000_000L));
        assertThat(atTheMarker.reserveNow("m", two, 1, 0).granted()).isTrue();
    }

    @Test
    void aWaitOfExactlyTheCeilingIsGrantedAndOneNanosecondMoreIsRefusedOnEveryPath() throws Exception {
        long ceiling = BucketStore.MAX_WAIT_NANOS;
        Limit atTheCeiling = Limit.of(1, 1, ceiling);
        Limit pastIt = Limit.of(1, 1, ceiling + 1);
        Limit hourly = Limit.of(100, 100, TimeUnit.HOURS.toNanos(1));
        // the clock stands still: after the first token the next one is exactly one interval away
        for (Limit limit : List.of(atTheCeiling, pastIt)) {
            boolean granted = limit == atTheCeiling;
            String one = "one-" + limit.interval();
            store.reserveNow(one, Limits.of(limit), 1, 0);
            Outcome r = store.reserveNow(one, Limits.of(limit), 1, BucketMath.NO_LIMIT);
            assertThat(r.granted()).as("one limit, a wait of %d ns", r.waitTicks()).isEqualTo(granted);
            assertThat(r.waitTicks()).isEqualTo(limit.interval());

            String several = "several-" + limit.interval();
            Limits both = Limits.of(limit, hourly);
            get(store.reserve(several, both, 1, 0));
            Outcome m = get(store.reserve(several, both, 1, BucketMath.NO_LIMIT));
            assertThat(m.granted()).as("several limits, a wait of %d ns", m.waitTicks()).isEqualTo(granted);

            String freest = "freest-" + limit.interval();
            store.reserveNow(freest, Limits.of(limit), 1, 0);
            Outcome f = get(Reservations.reserveFreest(store, List.of(freest), List.of(Limits.of(limit)), 1,
                    BucketMath.NO_LIMIT));
            assertThat(f.granted()).as("candidates, a wait of %d ns", f.waitTicks()).isEqualTo(granted);
        }
    }

    private static <T> T get(java.util.concurrent.CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    /**
     * All-of reservations over the same keys named in opposite orders, lock-free single reservations on those keys
     * and sweeps, from four threads at once: no deadlock (the locks are taken in key order, whatever order the keys
     * are named in), and every key grants exactly its capacity, counted over both kinds of reservation.
     */
    @Test
    @Timeout(30)
    void allOfReservationsInAnyOrderBesideTheLockFreePathNeitherDeadlockNorOverAdmit() throws Exception {
        Limits forty = Limits.of(Limit.of(40, 1, 3_600_000 * MS));
        List<String> keys = List.of("a", "b", "c");
        AtomicLongArray granted = new AtomicLongArray(3);
        CyclicBarrier start = new CyclicBarrier(4);
        List<Future<?>> workers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int thread = t;
            workers.add(pool.submit(() -> {
                start.await();
                for (int i = 0; i < 400; i++) {
                    int x = (i + thread) % 3;
                    int y = (x + 1 + thread % 2) % 3; // threads 0 and 2 name (x, x+1), threads 1 and 3 (x, x+2)
                    if (i % 4 == 0) {
                        if (store.reserveNow(keys.get(x), forty, 1, 0).granted()) {
                            granted.incrementAndGet(x);
                        }
                    } else if (i % 50 == 1) {
                        store.sweep();
                    } else if (Reservations.reserveAll(store, List.of(keys.get(x)), List.of(forty),
                            List.of(keys.get(y)),
                            List.of(forty), 1, 0).toCompletableFuture().join().granted()) {
                        granted.incrementAndGet(x);
                        granted.incrementAndGet(y);
                    }
                }
                return null;
            }));
        }
        for (Future<?> w : workers) {
            w.get(30, TimeUnit.SECONDS);
        }
        for (int k = 0; k < 3; k++) {
            assertThat(granted.get(k)).as("key %s", keys.get(k)).isLessThanOrEqualTo(40);
            assertThat(store.peek(keys.get(k), forty, 1).toCompletableFuture().join().remaining()).isEqualTo(40 - granted.get(k));
        }
    }

    @Test
    void anAllOfReservationOnAClockThatWasMovedByHand() {
        Limits onePerSecond = Limits.of(Limit.of(1, 1, 1000 * MS));
        Limits tenPerSecond = Limits.of(Limit.of(5, 10, 1000 * MS));
        store.reserveNow("proxy", onePerSecond, 1, 0);
        Outcome c = Reservations.reserveAll(store, List.of("proxy"), List.of(onePerSecond), List.of("host"),
                List.of(tenPerSecond),
                1, BucketMath.NO_LIMIT).toCompletableFuture().join();
        assertThat(c.waitTicks()).isEqualTo(1000 * MS);
        // the host's token is taken at the release, a second from now: 1100 ms owed, none of its burst of 5 left
        assertThat(store.peek("host", tenPerSecond, 1).toCompletableFuture().join().remaining()).isZero();
        clock.addAndGet(700 * MS); // 400 ms owed now: one token back
        assertThat(store.peek("host", tenPerSecond, 1).toCompletableFuture().join().remaining()).isEqualTo(1);
        store.refund("proxy", onePerSecond, 1);
        store.refund("host", tenPerSecond, 1);
        assertThat(store.peek("host", tenPerSecond, 1).toCompletableFuture().join().remaining()).isEqualTo(2);
        assertThat(store.peek("proxy", onePerSecond, 1).toCompletableFuture().join().remaining()).isZero(); // its own token still owed
        clock.addAndGet(300 * MS);
        assertThat(store.peek("proxy", onePerSecond, 1).toCompletableFuture().join().remaining()).isEqualTo(1);
    }

    /**
     * An all-of reservation locks every key it names, one stack frame per key: five thousand candidates with one
     * shared key overflowed the stack (a StackOverflowError no caller handles, leaving the exchange unanswered).
     * Past {@link BucketStore#MAX_KEYS} keys it is refused at once, naming the count, on any thread.
     */
    @Test
    void anAllOfReservationOfMoreKeysThanTheCeilingIsRefusedNotAStackOverflow() throws Exception {
        Limits five = Limits.of(Limit.of(5, 1, 1000 * MS));
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 5000; i++) {
            keys.add("k" + i);
        }
        Future<Throwable> outcome = pool.submit(() -> {
            try {
                Reservations.reserveAll(store, keys, java.util.Collections.nCopies(keys.size(), five), List.of("host"),
                        List.of(five), 1, 0);
                return null;
            } catch (Throwable t) {
                return t;
            }
        });
        assertThat(outcome.get(10, TimeUnit.SECONDS)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most " + BucketStore.MAX_KEYS).hasMessageContaining("5001");
        // at the ceiling it is granted, on a pool thread's ordinary stack
        List<String> most = keys.subList(0, BucketStore.MAX_KEYS - 1);
        assertThat(pool.submit(() -> Reservations.reserveAll(store, most, java.util.Collections.nCopies(most.size(),
                five),
                List.of("host"), List.of(five), 1, 0).toCompletableFuture().join()).get(10, TimeUnit.SECONDS)
                .granted()).isTrue();
    }

    /** The ceiling counts every key of every candidate's group: 600 candidates with a pair key each are 1,201 keys. */
    @Test
    void theCeilingCountsTheKeysChargedWithEachCandidate() {
        Limits five = Limits.of(Limit.of(5, 1, 1000 * MS));
        List<String> keys = new ArrayList<>();
        List<List<String>> pairs = new ArrayList<>();
        for (int i = 0; i < 600; i++) {
            keys.add("p" + i);
            pairs.add(List.of("p" + i + "|h"));
        }
        assertThatThrownBy(() -> Reservations.reserveAll(store, keys, java.util.Collections.nCopies(600, five), pairs,
                java.util.Collections.nCopies(600, List.of(five)), List.of("h"), List.of(five), 1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most " + BucketStore.MAX_KEYS).hasMessageContaining("1201")
                .hasMessageContaining("600 keys charged with them");
    }
}
