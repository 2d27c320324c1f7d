package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAccumulator;

import io.lettuce.core.RedisException;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.FallbackBucketStore;
import io.tokenbucket.store.Reservations;
import io.tokenbucket.store.StoreCommand;
import io.tokenbucket.store.local.LocalBucketStore;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Redis store's batching on a real Redis: reservations that queue behind calls in flight go together, and
 * still keep the bound, keep FIFO on a key, and fail one by one when their call fails.
 */
class RedisBatchingTest {

    private static final long MS = 1_000_000;
    private static final Duration TIMEOUT = Duration.ofSeconds(5);

    private RedisHandle redis;
    private RedisConnections connections;
    private RedisConnections.Lease lease;
    private final LongAccumulator largestBatch = new LongAccumulator(Math::max, 0);
    private final AtomicLong batched = new AtomicLong();

    @BeforeEach
    void start() {
        redis = RedisServers.standalone();
        connections = new RedisConnections();
        lease = connections.acquire(redis.uri(), TIMEOUT);
    }

    @AfterEach
    void stop() {
        connections.close();
        redis.close();
    }

    private RedisBucketStore store() {
        return new RedisBucketStore(lease::commands, false, "batching:", TIMEOUT, true, size -> {
            largestBatch.accumulate(size);
            batched.addAndGet(size);
        });
    }

    @Test
    void manyThreadsOnOneKeyNeverGetMoreThanTheBound() throws Exception {
        RedisBucketStore store = store();
        long capacity = 100;
        Limit limit = Limit.of(capacity, 1000, 1000 * MS); // 1,000 a second
        Limits limits = Limits.of(limit);
        int threads = 8;
        int perThread = 3_000;
        List<CompletableFuture<Outcome>> all = new ArrayList<>();
        long began = System.nanoTime();
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            List<CompletableFuture<Outcome>> mine = new ArrayList<>();
            Thread sender = new Thread(() -> {
                for (int i = 0; i < perThread; i++) {
                    mine.add(store.reserve("hot", limits, 1, 0).toCompletableFuture());
                }
                synchronized (all) {
                    all.addAll(mine);
                }
            });
            senders.add(sender);
            sender.start();
        }
        for (Thread sender : senders) {
            sender.join();
        }
        long granted = 0;
        for (CompletableFuture<Outcome> f : all) {
            granted += f.get(10, TimeUnit.SECONDS).granted() ? 1 : 0;
        }
        long elapsedNanos = System.nanoTime() - began;
        long bound = capacity + elapsedNanos * 1000 / TimeUnit.SECONDS.toNanos(1) + 1;
        assertThat(all).hasSize(threads * perThread);
        assertThat(largestBatch.get()).as("reservations went together").isGreaterThan(1);
        assertThat(granted).as("granted of %d in %d ms", all.size(), elapsedNanos / MS)
                .isGreaterThanOrEqualTo(capacity).isLessThanOrEqualTo(bound);
    }

    @Test
    void reservationsOnOneKeyGetTheirSlotsInArrivalOrder() throws Exception {
        RedisBucketStore store = store();
        // slots a second apart: far more than the few milliseconds by which mapping a slot onto our clock may
        // move it, so two slots out of order could not pass for in order (nothing waits for them here)
        Limits oneASecond = Limits.of(Limit.of(1, 1, 1000 * MS));
        int count = 300;
        store.reserve("warm-up", oneASecond, 1, 0).toCompletableFuture().get(5, TimeUnit.SECONDS); // loads the script
        List<CompletableFuture<Long>> releases = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            releases.add(store.reserve("fifo", oneASecond, 1, BucketMath.NO_LIMIT).toCompletableFuture()
                    .thenApply(r -> {
                        assertThat(r.granted()).isTrue();
                        return System.nanoTime() + r.waitTicks(); // when this one's slot comes, on our clock
                    }));
        }
        long previous = Long.MIN_VALUE;
        // the first slot is now: it waits nothing, so its release is when its answer came, not its slot; the
        // second and later ones wait, and their slots are on the Redis clock mapped onto ours
        releases.get(0).get(10, TimeUnit.SECONDS); // granted, as the others
        for (int i = 1; i < count; i++) {
            long release = releases.get(i).get(10, TimeUnit.SECONDS);
            if (i > 1) {
                // each slot one interval after the one before; half an interval of slack absorbs the clock
                // mapping and a stalled callback, and two slots out of order would be 0 or 2 intervals apart
                assertThat(release - previous).as("slot %d after slot %d", i, i - 1)
                        .isBetween(500 * MS, 1500 * MS);
            }
            previous = release;
        }
        assertThat(largestBatch.get()).as("reservations went together").isGreaterThan(1);
        assertThat(batched.get()).isEqualTo(count + 1);
    }

    @Test
    void aReservationOnSeveralKeysKeepsItsPlaceOnEachOfThemAmongTheOnesOnOneKey() throws Exception {
        RedisBucketStore store = store();
        // slots a second apart on every key, as in the test above: out of order would be 1 s early, not 1 s late
        Limits oneASecond = Limits.of(Limit.of(1, 1, 1000 * MS));
        List<String> keys = List.of("a", "b", "c", "d", "e", "f", "g", "h");
        store.reserve("warm-up", oneASecond, 1, 0).toCompletableFuture().get(5, TimeUnit.SECONDS); // loads the script
        java.util.Random random = new java.util.Random(23);
        List<List<String>> charged = new ArrayList<>();
        List<CompletableFuture<Long>> releases = new ArrayList<>();
        int several = 0;
        for (int i = 0; i < 400; i++) {
            List<String> shuffled = new ArrayList<>(keys);
            java.util.Collections.shuffle(shuffled, random);
            CompletableFuture<Outcome> answer;
            int kind = random.nextInt(4);
            if (kind < 2) {
                charged.add(List.of(shuffled.get(0)));
                answer = store.reserve(shuffled.get(0), oneASecond, 1, BucketMath.NO_LIMIT).toCompletableFuture();
            } else {
                // all-of on 2 or 3 keys, or the freest of 2 candidates with a shared key (which candidate is
                // charged is in the answer)
                several++;
                List<String> shared = shuffled.subList(1, kind == 2 ? 2 : 3);
                List<String> candidates = kind == 2 ? List.of(shuffled.get(0)) : shuffled.subList(3, 5);
                answer = Reservations.reserveAll(store, candidates, candidates.stream().map(k -> oneASecond).toList(),
                        shared,
                        shared.stream().map(k -> oneASecond).toList(), 1, BucketMath.NO_LIMIT).toCompletableFuture();
                List<String> keysOfIt = new ArrayList<>(shared);
                charged.add(keysOfIt);
                answer = answer.thenApply(r -> {
                    keysOfIt.add(candidates.get(r.chosen()));
                    return r;
                });
            }
            releases.add(answer.thenApply(r -> {
                assertThat(r.granted()).isTrue();
                return System.nanoTime() + r.waitTicks(); // when its slot comes, on our clock
            }));
        }
        java.util.Map<String, Long> previous = new java.util.HashMap<>();
        java.util.Map<String, Integer> previousIndex = new java.util.HashMap<>();
        for (int i = 0; i < releases.size(); i++) {
            long release = releases.get(i).get(10, TimeUnit.SECONDS);
            for (String key : charged.get(i)) {
                Long before = previous.put(key, release);
                Integer beforeIndex = previousIndex.put(key, i);
                if (before != null) {
                    // each reservation's slot at least an interval after the one before it on each of its keys
                    // (several keys: the latest of theirs), less half an interval for the clock mapping
                    assertThat(release - before).as("reservation %d %s on %s after reservation %d %s", i,
                            charged.get(i), key, beforeIndex, charged.get(beforeIndex)).isGreaterThan(500 * MS);
                }
            }
        }
        assertThat(several).as("reservations on several keys").isGreaterThan(100);
        assertThat(largestBatch.get()).as("reservations went together").isGreaterThan(1);
        assertThat(batched.get()).as("reservations sent, each once").isEqualTo(releases.size() + 1);
    }

    @Test
    void manyThreadsMixingReservationsOnOneAndOnSeveralKeysAllGetAnAnswerAndNoKeyPassesItsBound() throws Exception {
        RedisBucketStore store = store();
        Limit limit = Limit.of(20, 1000, 1000 * MS); // 1,000 a second after a burst of 20, on each key
        Limits limits = Limits.of(limit);
        List<String> keys = List.of("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l");
        int threads = 8;
        int perThread = 2_000;
        java.util.concurrent.ConcurrentHashMap<String, AtomicLong> grantedPerKey = new java.util.concurrent.ConcurrentHashMap<>();
        List<CompletableFuture<Outcome>> all = java.util.Collections.synchronizedList(new ArrayList<>());
        long began = System.nanoTime();
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long seed = t;
            Thread sender = new Thread(() -> {
                java.util.Random random = new java.util.Random(seed);
                for (int i = 0; i < perThread; i++) {
                    List<String> shuffled = new ArrayList<>(keys);
                    java.util.Collections.shuffle(shuffled, random);
                    CompletableFuture<Outcome> answer;
                    List<String> charged;
                    if (random.nextBoolean()) {
                        charged = List.of(shuffled.get(0));
                        answer = store.reserve(shuffled.get(0), limits, 1, 0).toCompletableFuture();
                    } else {
                        charged = shuffled.subList(0, 2 + random.nextInt(3));
                        answer = Reservations.reserveAll(store, charged.subList(0, 1), List.of(limits),
                                charged.subList(1,
                                charged.size()), charged.subList(1, charged.size()).stream().map(k -> limits)
                                .toList(), 1, 0).toCompletableFuture();
                    }
                    all.add(answer.whenComplete((r, failure) -> {
                        if (r != null && r.granted()) {
                            charged.forEach(k -> grantedPerKey.computeIfAbsent(k, x -> new AtomicLong())
                                    .incrementAndGet());
                        }
                    }));
                }
            });
            senders.add(sender);
            sender.start();
        }
        for (Thread sender : senders) {
            sender.join();
        }
        for (CompletableFuture<Outcome> f : new ArrayList<>(all)) {
            f.get(10, TimeUnit.SECONDS); // every one answered: none lost in a lane, none failed
        }
        long elapsedNanos = System.nanoTime() - began;
        long bound = limit.capacity() + elapsedNanos * 1000 / TimeUnit.SECONDS.toNanos(1) + 1;
        assertThat(all).hasSize(threads * perThread);
        assertThat(largestBatch.get()).as("reservations went together").isGreaterThan(1);
        for (String key : keys) {
            assertThat(grantedPerKey.get(key).get()).as("granted on %s in %d ms", key, elapsedNanos / MS)
                    .isPositive().isLessThanOrEqualTo(bound);
        }
    }

    @Test
    void reservationsOnManyKeysShareCallsAndEachGetsItsOwnAnswer() throws Exception {
        AtomicLong calls = new AtomicLong();
        RedisBucketStore store = new RedisBucketStore(lease::commands, false, "many:", TIMEOUT, true, size -> {
            largestBatch.accumulate(size);
            batched.addAndGet(size);
            calls.incrementAndGet();
        });
        int keys = 1_000;
        // key i holds i % 3 + 1 tokens an hour: its first i % 3 + 1 reservations pass, the next one is refused,
        // whichever call each went in and whoever shared it
        List<String> sent = new ArrayList<>();
        List<CompletableFuture<Outcome>> answers = new ArrayList<>();
        java.util.Random random = new java.util.Random(22);
        int[] perKey = new int[keys];
        for (int i = 0; i < 4 * keys; i++) {
            int k = random.nextInt(keys);
            long capacity = k % 3 + 1;
            perKey[k]++;
            sent.add("key " + k + " #" + perKey[k]);
            answers.add(store.reserve("k" + k, Limits.of(Limit.of(capacity, capacity, 3_600_000 * MS)), 1, 0)
                    .toCompletableFuture());
        }
        for (int i = 0; i < answers.size(); i++) {
            int k = Integer.parseInt(sent.get(i).split(" ")[1]);
            int nth = Integer.parseInt(sent.get(i).split("#")[1]);
            long capacity = k % 3 + 1;
            Outcome r = answers.get(i).get(10, TimeUnit.SECONDS);
            assertThat(r.granted()).as(sent.get(i)).isEqualTo(nth <= capacity);
            assertThat(r.remaining()).as(sent.get(i)).isEqualTo(Math.max(0, capacity - nth));
            if (r.granted()) {
                assertThat(r.waitTicks()).as(sent.get(i)).isZero();
            } else { // the next token is about an hour / capacity away (0 .. a minute less after the mapping)
                assertThat(r.waitTicks()).as(sent.get(i)).isBetween(3_540_000 * MS / capacity, 3_600_000 * MS / capacity);
            }
        }
        assertThat(largestBatch.get()).as("reservations on different keys went together").isGreaterThan(1);
        assertThat(batched.get()).isEqualTo(4L * keys);
        // a key's reservations alone would share few calls (4 each at most): many keys must have shared calls
        assertThat(calls.get()).as("calls for %d reservations", 4 * keys).isLessThanOrEqualTo(keys);
        // what Redis holds: each key used charged for what it granted (its tat an hour per token ahead of now)
        long now = RedisServers.micros(lease.commands().time().toCompletableFuture().get(5, TimeUnit.SECONDS));
        for (int k = 0; k < keys; k++) {
            String stored = lease.commands().get("many:k" + k).toCompletableFuture().get(5, TimeUnit.SECONDS);
            if (perKey[k] == 0) {
                assertThat(stored).as("key %d, never reserved", k).isNull();
                continue;
            }
            long capacity = k % 3 + 1;
            long granted = Math.min(perKey[k], capacity);
            long ahead = Long.parseLong(stored) - now; // tat - now: granted tokens at an hour / capacity each
            long hourMicros = 3_600_000_000L;
            assertThat(ahead).as("key %d, %d granted", k, granted)
                    .isBetween(granted * hourMicros / capacity - 60_000_000, granted * hourMicros / capacity);
        }
    }

    @Test
    void aBatchWhoseServerDiesFailsEachOfItsReservationsOnItsOwn() throws Exception {
        Limits limits = Limits.of(Limit.of(10_000, 10_000, 1000 * MS));
        FallbackBucketStore failing = new FallbackBucketStore(store(), null, System::nanoTime);
        try (LocalBucketStore local = new LocalBucketStore(System::nanoTime)) {
            FallbackBucketStore falling = new FallbackBucketStore(store(), local, System::nanoTime);
            // Redis holds every call (CLIENT PAUSE), so the first calls stay in flight and the rest queue behind
            redis.command("CLIENT", "PAUSE", "20000");
            int count = 1_000;
            List<CompletableFuture<Outcome>> failed = new ArrayList<>();
            List<CompletableFuture<Outcome>> fellBack = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                failed.add(failing.reserve("k" + (i % 7), limits, 1, 0).toCompletableFuture());
                fellBack.add(falling.reserve("k" + (i % 7), limits, 1, 0).toCompletableFuture());
            }
            assertThat(failed).noneMatch(CompletableFuture::isDone);
            redis.stop();
            for (CompletableFuture<Outcome> f : failed) {
                try {
                    f.get(10, TimeUnit.SECONDS);
                    org.assertj.core.api.Assertions.fail("a reservation answered by a dead Redis");
                } catch (ExecutionException e) {
                    // the connection lost (Lettuce's exception, or the socket's own when the reset reaches a call in
                    // flight first), or (for what was queued) the store timeout: as a call of its own
                    assertThat(e.getCause()).isInstanceOfAny(RedisException.class, TimeoutException.class,
                            java.io.IOException.class);
                }
            }
            assertThat(failing.failures()).as("each reservation failed on its own").isEqualTo(count);
            for (CompletableFuture<Outcome> f : fellBack) {
                assertThat(f.get(10, TimeUnit.SECONDS).granted()).isTrue();
            }
            assertThat(falling.fallbacks()).as("each reservation fell back on its own").isEqualTo(count);
            assertThat(local.size()).isEqualTo(7);
            assertThat(largestBatch.get()).as("the queued reservations went together").isGreaterThan(1);
        }
    }

    @Test
    void turnedOffEveryReservationIsACallOfItsOwn() throws Exception {
        RedisBucketStore store = new RedisBucketStore(lease::commands, false, "unbatched:", TIMEOUT, false,
                size -> largestBatch.accumulate(size));
        // 50 an hour: however slowly the calls go, no token comes back during the test
        Limits limits = Limits.of(Limit.of(50, 50, 3_600_000 * MS));
        List<CompletableFuture<Outcome>> all = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            all.add(store.reserve("one", limits, 1, 0).toCompletableFuture());
        }
        long granted = 0;
        for (CompletableFuture<Outcome> f : all) {
            granted += f.get(10, TimeUnit.SECONDS).granted() ? 1 : 0;
        }
        assertThat(granted).isEqualTo(50);
        assertThat(largestBatch.get()).as("no batch heard of").isZero();
    }

    @Test
    void aRefundAndARemoveOnSeveralKeysAreOneScriptCallEach() throws Exception {
        RedisBucketStore store = store();
        Limits limits = Limits.of(Limit.of(5, 5, 3_600_000 * MS)); // 5 an hour: nothing comes back in the test
        List<String> keys = List.of("a", "b", "c", "d");
        List<Limits> each = List.of(limits, limits, limits, limits);
        Step allOf = new Step(Step.Op.RESERVE, new int[] {1}, each, 3, 0);
        assertThat(store.execute(new StoreCommand(keys, allOf)).toCompletableFuture().get(10, TimeUnit.SECONDS)
                .granted()).isTrue();
        redis.command("CONFIG", "RESETSTAT");
        Outcome refunded = store.refund(keys, each, 2).toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertThat(refunded.remaining()).isEqualTo(4);
        assertThat(scriptCalls()).isEqualTo(1);
        store.execute(new StoreCommand(keys, new Step(Step.Op.REMOVE, new int[] {4}, each, 0, 0)))
                .toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertThat(scriptCalls()).isEqualTo(2);
        assertThat(redis.command("DBSIZE")).as("every bucket full again: no key").isEqualTo(0L);
    }

    /** The script calls Redis has run since its statistics were reset: EVALSHA and EVAL. */
    private long scriptCalls() {
        long calls = 0;
        for (String line : String.valueOf(redis.command("INFO", "commandstats")).split("\r?\n")) {
            if (line.startsWith("cmdstat_evalsha:") || line.startsWith("cmdstat_eval:")) {
                String counted = line.substring(line.indexOf("calls=") + 6);
                calls += Long.parseLong(counted.substring(0, counted.indexOf(',')));
            }
        }
        return calls;
    }
}
