package io.tokenbucket.store.redis;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.TransactionResult;
import io.lettuce.core.api.sync.RedisCommands;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Steps;
import io.tokenbucket.testsupport.random.TestSeed;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code bucket.lua}'s {@code reserve} of several reservations against {@link BucketMath} applied in sequence, on a real Redis.
 *
 * <p>Each case SETs random states on 1 to 4 keys (no key; one number or several; before now, in debt within the burst,
 * beyond it, beyond the script's clamp of 2^52 µs), then sends one batch of 2 to 40 reservations, each on a random one
 * of those keys (or, one in five, on several of them: the freest of some candidates with the rest shared, expected as
 * {@code Steps.reserveAll}) with its own random limits (1 to 3; often a key's limits of before), tokens and maxWait
 * (the number of limits written '1' or '01', so a single limit goes through the script's short branch or its general
 * steps), and reads every key back (GET, PTTL, in the MULTI that runs the batch). The expected outcome is {@code
 * BucketMath.reserve} applied to the reservations in their order, each on the state the one before it left (aligned to
 * its limits, as {@code BucketMath.align} does), in microsecond ticks, at the one {@code now} the script returned;
 * compared field by field: each reservation's five numbers, each key's final state (every number; untouched when
 * nothing was granted on it) and its TTL (PX {@code ceil((latest - now) / 1000)}, less the milliseconds until the
 * PTTL). A written key whose PX of a ms or two was over before it was read is counted, not compared. maxWait stays
 * within the 365 days {@link RedisBucketStore} sends at most (beyond, sums could leave the doubles' exact range).
 *
 * <p>Random with a fixed seed ({@link TestSeed}: printed, another from {@code -Dtokenbucket.seed}). A mismatch
 * prints the case.
 */
class BucketScriptBatchDifferentialTest {

    private static final int CASES = 2_000;
    private static final long SEED = 20261201L;
    private static final long MAX_DEBT_MICROS = 1L << 52;
    private static final long MAX_BURST_MICROS = ScriptArgs.MAX_BURST_MICROS;
    private static final long YEAR_MICROS = TimeUnit.DAYS.toMicros(365);

    private static ScriptServer server;
    private static RedisCommands<String, String> commands;
    private static long expiryBaseSlackMs;

    private final Random random = TestSeed.random(getClass().getSimpleName(), SEED);

    @BeforeAll
    static void startRedis() {
        server = ScriptServer.start();
        expiryBaseSlackMs = Integer.parseInt(RedisServers.version().split("\\.")[0]) >= 7 ? 1 : 0;
        commands = server.commands;
    }

    @AfterAll
    static void stopRedis() {
        if (server != null) {
            server.close();
        }
    }

    /**
     * One reservation of a batch: on one key ({@code candidates} 0), or on several, the first {@code candidates} of
     * them candidates (each a group of one) and the rest shared.
     */
    private record Member(List<String> keys, List<Limits> limits, int candidates, long tokens, long maxWaitMicros) {
    }

    @Test
    void aBatchDecidesAndStoresAsTheMathAppliedInSequence() {
        List<String> mismatches = new ArrayList<>();
        int granted = 0;
        int refused = 0;
        int sameKeyTwice = 0;
        int severalKeys = 0;
        int sameWords = 0;
        int expired = 0;
        for (int id = 0; id < CASES; id++) {
            long nowEstimate = RedisServers.micros(commands.time());
            int keyCount = 1 + random.nextInt(4);
            Map<String, String> initial = new LinkedHashMap<>();
            Map<String, Limits> lastLimits = new HashMap<>();
            for (int k = 0; k < keyCount; k++) {
                String key = "batch:" + id + ":" + k;
                Limits limits = limits(1 + random.nextInt(3));
                lastLimits.put(key, limits);
                initial.put(key, state(limits, nowEstimate));
            }
            List<String> keys = new ArrayList<>(initial.keySet());
            List<Member> members = new ArrayList<>();
            int size = 2 + random.nextInt(39);
            for (int i = 0; i < size; i++) {
                if (i > 0 && random.nextInt(3) == 0) {
                    // the words of the one before (tokens, maxWait, limits) on keys of its own: what the store sends
                    // as '='
                    Member before = members.get(i - 1);
                    List<String> shuffled = new ArrayList<>(keys);
                    java.util.Collections.shuffle(shuffled, random);
                    if (before.keys().size() <= keys.size()) {
                        List<String> memberKeys = List.copyOf(shuffled.subList(0, before.keys().size()));
                        for (int k = 0; k < memberKeys.size(); k++) {
                            lastLimits.put(memberKeys.get(k), before.limits().get(k));
                        }
                        members.add(new Member(memberKeys, before.limits(), before.candidates(), before.tokens(),
                                before.maxWaitMicros()));
                        continue;
                    }
                }
                // a reservation on several keys now and then, among those on one key
                int count = keys.size() > 1 && random.nextInt(5) == 0 ? 2 + random.nextInt(keys.size() - 1) : 1;
                List<String> shuffled = new ArrayList<>(keys);
                java.util.Collections.shuffle(shuffled, random);
                List<String> memberKeys = shuffled.subList(0, count);
                List<Limits> memberLimits = new ArrayList<>();
                for (String key : memberKeys) {
                    Limits limits = random.nextInt(4) == 0 ? limits(1 + random.nextInt(3)) : lastLimits.get(key);
                    lastLimits.put(key, limits);
                    memberLimits.add(limits);
                }
                Limits limits = memberLimits.get(0);
                long smallest = memberLimits.stream().mapToLong(Limits::capacity).min().orElseThrow();
                long tokens = random.nextInt(3) == 0 ? 1 : 1 + (long) (random.nextDouble() * smallest);
                long maxWait = switch (random.nextInt(4)) {
                    case 0 -> 0;
                    case 1 -> YEAR_MICROS;
                    // RedisBucketStore never sends more than 365 days
                    default -> Math.min(YEAR_MICROS, (long) (random.nextDouble() * limits.get(0).interval() * 4));
                };
                members.add(new Member(List.copyOf(memberKeys), memberLimits, count == 1 ? 0 : 1 + random.nextInt(count),
                        Math.min(tokens, smallest), maxWait));
            }
            List<String> memberKeys = members.stream().flatMap(m -> m.keys().stream()).toList();
            sameKeyTwice += memberKeys.stream().distinct().count() < memberKeys.size() ? 1 : 0;
            severalKeys += members.stream().filter(m -> m.candidates() > 0).count();
            for (var e : initial.entrySet()) {
                if (e.getValue() == null) {
                    commands.del(e.getKey());
                } else {
                    commands.set(e.getKey(), e.getValue());
                }
            }
            List<String> argv = new ArrayList<>(List.of("reserve"));
            Member before = null;
            List<String> beforeWords = null;
            for (Member m : members) {
                List<String> words = new ArrayList<>();
                words.add(Long.toString(m.tokens()));
                words.add(Long.toString(m.maxWaitMicros()));
                if (m.candidates() > 0) {
                    words.addAll(List.of("C", Integer.toString(m.keys().size()), Integer.toString(m.candidates())));
                }
                for (Limits limits : m.limits()) {
                    // '1' takes the script's short branch for one limit; '01', the same number, the general steps
                    words.add((random.nextBoolean() ? "0" : "") + limits.size());
                    for (int i = 0; i < limits.size(); i++) {
                        words.add(Long.toString(limits.get(i).capacity()));
                        words.add(Long.toString(limits.get(i).interval()));
                    }
                }
                boolean same = before != null && m.limits() == before.limits() && m.tokens() == before.tokens()
                        && m.maxWaitMicros() == before.maxWaitMicros() && m.candidates() == before.candidates();
                if (same) {
                    words = beforeWords;
                }
                // the same words again as ReservationCalls sends them ('='), or in full
                if (same && random.nextInt(4) != 0) {
                    argv.add(ReservationCalls.SAME_WORDS);
                    sameWords++;
                } else {
                    argv.addAll(words);
                }
                before = m;
                beforeWords = words;
            }
            // the script, then every key's GET and PTTL and a TIME, in one MULTI: Redis runs them back to back, so
            // no client round trip lets a PX of a millisecond run out between the script and the reads, or between
            // a key's GET and its PTTL
            commands.multi();
            commands.evalsha(BucketScript.DIGEST, ScriptOutputType.MULTI, memberKeys.toArray(String[]::new),
                    argv.toArray(new String[0]));
            for (String key : keys) {
                commands.get(key);
                commands.pttl(key);
            }
            commands.time();
            TransactionResult results = commands.exec();
            assertThat(results.wasDiscarded()).as("case %d's MULTI", id).isFalse();
            List<Long> reply = ReserveReplies.fiveEach(results.get(0),
                    members.stream().mapToInt(m -> Math.max(1, m.candidates())).toArray());
            Map<String, String> stored = new HashMap<>();
            Map<String, Long> pttl = new HashMap<>();
            for (int k = 0; k < keys.size(); k++) {
                stored.put(keys.get(k), results.get(1 + 2 * k));
                pttl.put(keys.get(k), results.get(2 + 2 * k));
            }
            long after = RedisServers.micros(results.get(results.size() - 1));

            // the reference: BucketMath in sequence at the script's now
            long now = reply.size() >= 5 ? reply.get(4) : 0;
            Map<String, long[]> states = new HashMap<>();
            for (var e : initial.entrySet()) {
                states.put(e.getKey(), parse(e.getValue(), now));
            }
            List<Long> expected = new ArrayList<>();
            Map<String, Boolean> written = new HashMap<>();
            for (Member m : members) {
                long[][] aligned = new long[m.keys().size()][];
                for (int k = 0; k < aligned.length; k++) {
                    aligned[k] = BucketMath.align(states.get(m.keys().get(k)), now, m.limits().get(k));
                }
                if (m.candidates() == 0) {
                    Steps.One d = Steps.reserve(aligned[0], now, m.tokens(), m.limits().get(0), m.maxWaitMicros());
                    if (d.granted()) {
                        states.put(m.keys().get(0), d.tatTicks());
                        written.put(m.keys().get(0), true);
                    }
                    granted += d.granted() ? 1 : 0;
                    refused += d.granted() ? 0 : 1;
                    expected.addAll(List.of(d.granted() ? 1L : 0L, d.waitTicks(), d.remaining(), 1L, now));
                    continue;
                }
                int c = m.candidates();
                Steps.All d = Steps.reserveAll(Arrays.copyOfRange(aligned, 0, c), m.limits().subList(0, c),
                        Arrays.copyOfRange(aligned, c, aligned.length), m.limits().subList(c, aligned.length), now,
                        m.tokens(), m.maxWaitMicros());
                if (d.granted()) {
                    // the chosen candidate's state first, then the shared keys'
                    List<String> charged = new ArrayList<>(List.of(m.keys().get(d.chosen())));
                    charged.addAll(m.keys().subList(c, aligned.length));
                    for (int k = 0; k < charged.size(); k++) {
                        states.put(charged.get(k), d.tatTicks()[k]);
                        written.put(charged.get(k), true);
                    }
                }
                granted += d.granted() ? 1 : 0;
                refused += d.granted() ? 0 : 1;
                expected.addAll(List.of(d.granted() ? 1L : 0L, d.waitTicks(), d.remaining(), d.chosen() + 1L, now));
            }
            StringJoiner problems = new StringJoiner("; ");
            // then the Redis clock read after the members' work: from the script's now to the TIME read after it
            long end = reply.isEmpty() ? -1 : reply.get(reply.size() - 1);
            if (reply.isEmpty() || !reply.subList(0, reply.size() - 1).equals(expected) || end < now || end > after) {
                problems.add("reply " + reply + ", expected " + expected + " and a now from " + now + " to " + after);
            }
            for (String key : keys) {
                if (!written.containsKey(key)) {
                    if (!java.util.Objects.equals(stored.get(key), initial.get(key)) || pttl.get(key) >= 0) {
                        problems.add(key + " untouched expected " + initial.get(key) + ", was " + stored.get(key)
                                + " pttl " + pttl.get(key));
                    }
                    continue;
                }
                long[] state = states.get(key);
                String text = String.join(" ", Arrays.stream(state).mapToObj(Long::toString).toList());
                long latest = Arrays.stream(state).max().orElseThrow();
                long px = (latest - now + 999) / 1000;
                long elapsedMs = (after - now) / 1000 + 1;
                if (pttl.get(key) == -2 && px <= elapsedMs + expiryBaseSlackMs
                        && (stored.get(key) == null || stored.get(key).equals(text))) {
                    expired++; // its PX of a ms or two was over before the GET or the PTTL: nothing left to compare
                    continue;
                }
                if (!text.equals(stored.get(key))) {
                    problems.add(key + " stored " + stored.get(key) + ", expected " + text);
                }
                if (pttl.get(key) > px + expiryBaseSlackMs || pttl.get(key) < px - elapsedMs) {
                    problems.add(key + " pttl " + pttl.get(key) + ", expected " + px + " less up to " + elapsedMs);
                }
            }
            if (problems.length() > 0 && mismatches.size() < 8) {
                mismatches.add("case " + id + ": initial " + initial + ", members " + members + ": " + problems);
            }
        }
        assertThat(mismatches).as(String.join("\n", mismatches)).isEmpty();
        // the generator reaches what it is meant to: both outcomes, several reservations on one key
        assertThat(granted).as("granted").isGreaterThan(CASES);
        assertThat(refused).as("refused").isGreaterThan(CASES);
        assertThat(expired).as("written keys that expired before they were read").isLessThan(CASES / 20);
        assertThat(sameKeyTwice).as("batches with a key more than once").isGreaterThan(CASES / 2);
        assertThat(severalKeys).as("reservations on several keys").isGreaterThan(CASES);
        assertThat(sameWords).as("reservations sent as '='").isGreaterThan(CASES);
    }

    /** A stored state as the script reads it: the clamp at {@code now + 2^52}; null is no key. */
    private static long[] parse(String stored, long now) {
        if (stored == null) {
            return null;
        }
        return Arrays.stream(stored.split(" ")).mapToLong(Long::parseLong)
                .map(t -> Math.min(t, now + MAX_DEBT_MICROS)).toArray();
    }

    /** {@code count} limits in microsecond ticks, each with a burst of at most 2^51 µs. */
    private Limits limits(int count) {
        Limit[] limits = new Limit[count];
        for (int i = 0; i < count; i++) {
            long interval = switch (random.nextInt(4)) {
                case 0 -> 1 + random.nextInt(1000);
                case 1 -> 1_000 + random.nextInt(1_000_000);
                case 2 -> MAX_BURST_MICROS / (1 + random.nextInt(100));
                default -> 1 + random.nextInt(100_000_000);
            };
            long largest = MAX_BURST_MICROS / interval;
            long capacity = Math.min(largest, random.nextBoolean() ? 1 + random.nextInt(10) : 1 + random.nextInt(1000));
            limits[i] = Limit.of(capacity, 1, interval);
        }
        return Limits.of(limits);
    }

    /** A state for {@code limits}: none, or 1 to 3 numbers around now, in the burst, beyond it or beyond the clamp. */
    private String state(Limits limits, long now) {
        if (random.nextInt(5) == 0) {
            return null;
        }
        int numbers = random.nextInt(4) == 0 ? 1 + random.nextInt(3) : limits.size();
        StringJoiner words = new StringJoiner(" ");
        for (int i = 0; i < numbers; i++) {
            Limit l = limits.get(Math.min(i, limits.size() - 1));
            long tat = switch (random.nextInt(5)) {
                case 0 -> now - random.nextInt(10_000_000);
                case 1 -> now + (long) (random.nextDouble() * l.burst());
                case 2 -> now + l.burst() + (long) (random.nextDouble() * l.interval() * 3);
                case 3 -> now + MAX_DEBT_MICROS + random.nextInt(1_000_000);
                default -> now + (long) (random.nextDouble() * l.burst() * 1.2);
            };
            words.add(Long.toString(tat));
        }
        return words.toString();
    }
}
