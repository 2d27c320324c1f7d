package io.tokenbucket.store.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.StoreCommand;
import io.tokenbucket.store.local.LocalBucketStore;
import io.tokenbucket.testsupport.random.TestSeed;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.Test;

import static io.tokenbucket.store.AdaptiveStoreContract.get;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * In-flight slots and the waiters' tickets decided by {@code BucketMath} (the local store) and by {@code bucket.lua}
 * (Redis) on the same random sequence of reservations (one key, all-of keys, the freest of candidate groups; some of
 * waiters that take tickets), waiters' retries and withdrawals, releases of the slots a reservation took, peeks,
 * removes and throttled signals on a key whose rate adapts: every answer's grant, want of a slot and chosen candidate
 * must agree. The rates are far above what the sequence asks, so only the slots and tickets decide; leases and
 * tickets outlive the run, so the clocks of the two stores do not matter.
 */
class InFlightStoresDifferentialTest {

    private static final int STEPS = 4_000;
    private static final int KEYS = 5;

    private record Held(StoreCommand.Lease lease, List<String> keys, List<Limits> limits) {
    }

    /** How long the run's leases and tickets last: longer than the run. */
    private static final long LIVES = TimeUnit.MINUTES.toNanos(10);

    @Test
    void theLocalStoreAndTheScriptDecideEverySlotAlike() {
        Random random = TestSeed.random("InFlightStoresDifferentialTest", 20261203L);
        Limits[] limits = new Limits[KEYS];
        Limit fast = Limit.of(1_000_000_000L, 1_000_000_000L, TimeUnit.SECONDS.toNanos(1));
        for (int k = 0; k < KEYS; k++) {
            limits[k] = switch (k % 3) {
                case 0 -> Limits.inFlightOnly(1 + random.nextInt(3));
                case 1 -> k == 4 ? Limits.of(fast).withAdaptive(Adaptive.of(100_000, 500_000, 250_000, 0,
                        TimeUnit.HOURS.toNanos(1))).withInFlight(2) : Limits.of(fast).withInFlight(1 + random.nextInt(3));
                default -> k == 2 ? Limits.of(fast) : Limits.inFlightOnly(1);
            };
        }
        String run = UUID.randomUUID().toString();
        List<String> mismatches = new ArrayList<>();
        try (RedisHandle redis = RedisServers.shared()) {
            redis.flushAll();
            RedisConnections connections = new RedisConnections();
            RedisConnections.Lease connection = connections.acquire(redis.uri(), Duration.ofSeconds(5));
            BucketStore script = new RedisBucketStore(connection::commands, false, run + ":", Duration.ofSeconds(5),
                    false, size -> { });
            BucketStore math = new LocalBucketStore();
            List<Held> held = new ArrayList<>();
            List<StoreCommand> waiting = new ArrayList<>();
            int[] seen = new int[5]; // granted, refused for a slot, granted of a later candidate, tickets, waiters in
            for (int s = 0; s < STEPS && mismatches.size() < 10; s++) {
                int op = random.nextInt(10);
                StoreCommand retry = null;
                if (op < 2 && !waiting.isEmpty()) { // a waiter tries again, or gives up (its tickets withdrawn)
                    StoreCommand w = waiting.remove(random.nextInt(waiting.size()));
                    if (random.nextInt(3) > 0) {
                        retry = w;
                    } else {
                        release(math, script, w.keys(), w.step().limits(), w.lease());
                        continue;
                    }
                }
                if (retry != null || op < 5) {
                    StoreCommand command = retry != null ? retry : reservation(random, limits, s);
                    List<String> keys = command.keys();
                    int[] groups = command.step().groups();
                    List<Limits> keyLimits = command.step().limits();
                    int used = command.step().shared();
                    Outcome expected = get(math.execute(command));
                    Outcome actual = get(script.execute(command));
                    if (expected.granted() != actual.granted() || expected.slotless() != actual.slotless()
                            || expected.granted() && expected.chosen() != actual.chosen()) {
                        mismatches.add("step " + s + (retry != null ? " retry " : " reserve ") + keys + " groups "
                                + java.util.Arrays.toString(groups) + ": math " + expected + ", script " + actual);
                    }
                    seen[0] += expected.granted() ? 1 : 0;
                    seen[1] += expected.slotless() ? 1 : 0;
                    seen[2] += expected.granted() && expected.chosen() > 0 ? 1 : 0;
                    seen[3] += expected.slotless() && command.lease().ticket() ? 1 : 0;
                    seen[4] += retry != null && expected.granted() ? 1 : 0;
                    if (expected.slotless() && actual.slotless() && command.lease().ticket()) {
                        waiting.add(command); // it waits, holding its tickets
                    }
                    if (expected.granted() && actual.granted() && expected.chosen() == actual.chosen()) {
                        held(held, command, expected.chosen(), keys, groups, keyLimits, used);
                    }
                    continue;
                }
                if (op < 5) {
                    continue;
                }
                if (op < 8 && !held.isEmpty()) {
                    Held h = held.remove(random.nextInt(held.size()));
                    release(math, script, h.keys(), h.limits(), h.lease());
                } else if (op < 8) {
                    continue;
                } else if (op < 9) {
                    int k = random.nextInt(KEYS);
                    Outcome expected = get(math.peek("k" + k, limits[k], 1));
                    Outcome actual = get(script.peek("k" + k, limits[k], 1));
                    boolean slotsOnly = limits[k].size() == 0;
                    if (expected.slotless() != actual.slotless()
                            || slotsOnly && expected.remaining() != actual.remaining()) {
                        mismatches.add("step " + s + " peek k" + k + ": math " + expected + ", script " + actual);
                    }
                } else if (random.nextBoolean()) { // a throttled signal on the key whose rate adapts
                    get(math.throttle("k4", limits[4]));
                    get(script.throttle("k4", limits[4]));
                } else {
                    int k = random.nextInt(KEYS); // the slots stay: the exchanges holding them still run
                    get(math.remove("k" + k, limits[k]));
                    get(script.remove("k" + k, limits[k]));
                }
            }
            script.close();
            connections.close();
            System.out.printf("in-flight differential: %d granted (%d of a later candidate, %d of a waiter's retry), %d"
                    + " refused for a slot (%d taking tickets)%n", seen[0], seen[2], seen[4], seen[1], seen[3]);
            for (int n : seen) {
                assertThat(n).as("the sequence reaches every case").isGreaterThan(50);
            }
        }
        assertThat(mismatches).isEmpty();
    }

    /**
     * A reservation of one token on distinct keys, at most four: groups of one or two keys, then shared keys; half of
     * them accept a wait, and of those half are waiters that take tickets.
     */
    private static StoreCommand reservation(Random random, Limits[] limits, int s) {
        List<Integer> pool = new ArrayList<>();
        for (int k = 0; k < KEYS; k++) {
            pool.add(k);
        }
        java.util.Collections.shuffle(pool, random);
        int candidates = 1 + random.nextInt(2);
        int[] groups = new int[candidates];
        int used = 0;
        for (int c = 0; c < candidates; c++) {
            groups[c] = 1 + (random.nextInt(4) == 0 ? 1 : 0);
            used += groups[c];
        }
        int shared = random.nextInt(Math.min(2, KEYS - used) + 1);
        List<String> keys = new ArrayList<>();
        List<Limits> keyLimits = new ArrayList<>();
        for (int i = 0; i < used + shared; i++) {
            keys.add("k" + pool.get(i));
            keyLimits.add(limits[pool.get(i)]);
        }
        int kind = random.nextInt(4); // 0, 1: no wait; 2: a wait without a ticket; 3: a waiter with tickets
        StoreCommand.Lease lease = new StoreCommand.Lease("l" + s, LIVES, kind == 3 ? LIVES : 0);
        return new StoreCommand(keys, new Step(Step.Op.RESERVE, groups, keyLimits, 1, kind < 2 ? 0 : LIVES), lease);
    }

    /** Records the slots a granted reservation took: on the chosen group's keys and the shared keys, where limited. */
    private static void held(List<Held> held, StoreCommand command, int chosen, List<String> keys, int[] groups,
                             List<Limits> keyLimits, int used) {
        List<String> taken = new ArrayList<>();
        List<Limits> takenLimits = new ArrayList<>();
        int first = 0;
        for (int c = 0; c < chosen; c++) {
            first += groups[c];
        }
        for (int i = 0; i < keys.size(); i++) {
            boolean charged = i >= first && i < first + groups[chosen] || i >= used;
            if (charged && keyLimits.get(i).inFlight() > 0) {
                taken.add(keys.get(i));
                takenLimits.add(keyLimits.get(i));
            }
        }
        if (!taken.isEmpty()) {
            held.add(new Held(command.lease(), taken, takenLimits));
        }
    }

    /** A release of {@code lease} on {@code keys} in both stores: its slots there given back, its tickets withdrawn. */
    private static void release(BucketStore math, BucketStore script, List<String> keys, List<Limits> limits,
                                StoreCommand.Lease lease) {
        Step step = new Step(Step.Op.RELEASE, new int[] {keys.size()}, limits, 0, 0);
        get(math.execute(new StoreCommand(keys, step, lease)));
        get(script.execute(new StoreCommand(keys, step, lease)));
    }
}
