package io.tokenbucket.store.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.sync.RedisCommands;
import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.AdaptiveMath;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.RateState;
import io.tokenbucket.math.Steps;
import io.tokenbucket.testsupport.random.TestSeed;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code bucket.lua}'s adaptive rate against {@link AdaptiveMath} and {@link BucketMath}, case by case, on a real
 * Redis: the guard that the script's AIMD is the Java step for step.
 *
 * <p>Each case SETs a state (no key; tats about now, in debt, beyond the burst; with or without a rate state of a
 * random factor, credit, last cut around the hold and the memory and tokens counted since it, starting or not, in
 * the form the script writes or the three-number one of before the slow start), runs one operation on adaptive limits (1 or 2 limits
 * from {@link BucketScriptDifferentialTest}'s generator, in microseconds, up to a burst of 2^51; a random floor,
 * decrease, increase, hold, memory, step and start, a third of them without a slow start) and reads the key back.
 * The expected outcome is the Java steps in microsecond ticks at the {@code now} the script returned: the current rate ({@link AdaptiveMath#current}), the
 * limits scaled by it ({@link AdaptiveMath#scaledInterval}, saturating at the script's 2^51), the bucket step, then
 * {@link AdaptiveMath#earn} on a grant or {@link AdaptiveMath#cut} (measured on the tokens counted since the last cut)
 * and {@link AdaptiveMath#emptied} on a signal.
 * Compared: the reply (every number) and the stored text (every number, the rate after 'r', none when it is
 * {@link Adaptive#fresh()}; no key when the math says full and forgotten; the SET text untouched when nothing is
 * written). States the script never writes
 * (garbage words, the clamp) are {@link BucketScriptDifferentialTest}'s; here every state is one the script could
 * have written.
 */
class BucketScriptAdaptiveDifferentialTest {

    private static final int CASES = 4_000;
    private static final long SEED = 20261202L;
    private static final long MAX_BURST_MICROS = ScriptArgs.MAX_BURST_MICROS;
    private static final long YEAR_MICROS = TimeUnit.DAYS.toMicros(365);
    private static final long PPM = Adaptive.PPM;
    private static final String[] OPS = {"reserve", "reserve", "peek", "refund", "penalize", "throttle", "throttle",
        "rate"};

    private static ScriptServer server;
    private static RedisCommands<String, String> commands;

    private final Random random = TestSeed.random(getClass().getSimpleName(), SEED);
    /** The generators of the script's other differential test: its limits, costs, penalties and log-uniform draws. */
    private final BucketScriptDifferentialTest generators = new BucketScriptDifferentialTest();

    @BeforeAll
    static void startRedis() {
        server = ScriptServer.start();
        commands = server.commands;
    }

    @AfterAll
    static void stopRedis() {
        if (server != null) {
            server.close();
        }
    }

    /** An adaptation in microseconds, the tokens of one step, and the start. */
    private record Adapt(long floor, long decrease, long increase, long holdMicros, long memoryMicros, long step,
                         long start) {
        Adaptive adaptive() {
            // Adaptive's bounds are in nanoseconds; the script only ever sees microseconds, used here as ticks
            return Adaptive.of(floor, decrease, increase, holdMicros, memoryMicros).withStart(start);
        }
    }

    @Test
    void theScriptAdaptsAsTheMath() {
        List<String> mismatches = new ArrayList<>();
        int cuts = 0;
        int ignored = 0;
        int steps = 0;
        int forgotten = 0;
        int granted = 0;
        int expiredKeys = 0;
        int doublings = 0;
        int startingCuts = 0;
        int deeperCuts = 0;
        int measuredCuts = 0;
        int remembered = 0;
        for (int id = 0; id < CASES; id++) {
            String key = "adapt:" + id;
            Limits limits = generators.limits(1 + random.nextInt(2));
            Adapt adapt = adaptation();
            long now = RedisServers.micros(commands.time());
            long[] tats = tats(limits, now);
            RateState rate = random.nextInt(4) == 0 ? null : rateState(adapt, now);
            String stored = text(tats, rate, tats == null ? 0 : tats.length);
            if (rate != null && !rate.starting() && rate.maxPpm() == 0 && rate.granted() == 0
                    && random.nextInt(4) == 0) {
                stored = stored.substring(0, stored.length() - 2); // as written before the slow start: not starting
            }
            put(key, stored);
            String op = OPS[random.nextInt(OPS.length)];
            long tokens = switch (op) {
                case "reserve", "peek" -> generators.cost(limits.capacity());
                case "refund" -> generators.logUniform(1, 2 * limits.capacity());
                default -> 1;
            };
            long arg = switch (op) {
                case "reserve" -> random.nextInt(3) == 0 ? 0 : generators.logUniform(1, YEAR_MICROS);
                case "penalize" -> generators.penalty();
                default -> -1;
            };
            List<String> argv = new ArrayList<>(List.of(op, Long.toString(tokens), Long.toString(arg), "A",
                    Long.toString(adapt.floor()), Long.toString(adapt.decrease()), Long.toString(adapt.increase()),
                    Long.toString(adapt.holdMicros()), Long.toString(adapt.memoryMicros()),
                    Long.toString(adapt.step()), Long.toString(adapt.start()), Integer.toString(limits.size())));
            for (int i = 0; i < limits.size(); i++) {
                argv.add(Long.toString(limits.get(i).capacity()));
                argv.add(Long.toString(limits.get(i).interval()));
            }
            List<Long> reply = commands.evalsha(BucketScript.DIGEST, ScriptOutputType.MULTI, new String[] {key},
                    argv.toArray(String[]::new));
            if (op.equals("reserve")) {
                reply = ReserveReplies.fiveEach(reply, 1);
            }
            if (op.equals("reserve") && reply.size() == 6 && reply.get(5) >= reply.get(4)) {
                reply = reply.subList(0, 5); // a reserve ends with the Redis clock read after its reservations
            }
            String after = commands.get(key);
            long scriptNow = reply.get(4);

            // the Java steps at the script's now
            Adaptive a = adapt.adaptive();
            long[] states = BucketMath.align(tats, scriptNow, limits);
            RateState current = AdaptiveMath.current(rate, states, scriptNow, a);
            Limits scaled = scaled(limits, current.factorPpm());
            List<Long> expected;
            String expectedText = stored;
            switch (op) {
                case "reserve" -> {
                    Steps.One d = Steps.reserve(states, scriptNow, tokens, scaled, arg);
                    expected = List.of(d.granted() ? 1L : 0L, d.waitTicks(), d.remaining(), 1L, scriptNow);
                    if (d.granted()) {
                        granted++;
                        RateState earned = AdaptiveMath.earn(current, tokens, adapt.step(), scriptNow, a);
                        steps += earned.factorPpm() != current.factorPpm() ? 1 : 0;
                        remembered += current.maxPpm() > 0 && earned.factorPpm() != current.factorPpm() ? 1 : 0;
                        doublings += current.starting() && earned.factorPpm() != current.factorPpm() ? 1 : 0;
                        expectedText = stored(d.tatTicks(), earned, a, scriptNow);
                    }
                }
                case "peek" -> {
                    Steps.One d = Steps.peek(states, scriptNow, tokens, scaled);
                    expected = List.of(d.granted() ? 1L : 0L, d.waitTicks(), d.remaining(), 1L, scriptNow);
                }
                case "refund" -> {
                    long[] next = BucketMath.refund(states, scriptNow, tokens, scaled);
                    expected = List.of(1L, 0L, BucketMath.available(next, scriptNow, scaled), 1L, scriptNow);
                    expectedText = stored(next, current, a, scriptNow);
                }
                case "penalize" -> {
                    long[] next = BucketMath.penalize(states, scriptNow, arg, scaled);
                    Steps.One d = Steps.peek(next, scriptNow, 1, scaled);
                    expected = List.of(d.granted() ? 1L : 0L, d.waitTicks(), d.remaining(), 1L, scriptNow);
                    expectedText = stored(next, current, a, scriptNow);
                }
                case "throttle" -> {
                    RateState cut = AdaptiveMath.cut(current, scriptNow, a, AdaptiveMath.sustainedInterval(limits));
                    long[] next = states;
                    Limits atCut = scaled;
                    if (cut != current) {
                        cuts++;
                        startingCuts += current.starting() ? 1 : 0;
                        measuredCuts += measured(current, scriptNow) ? 1 : 0;
                        deeperCuts += !current.starting() && current.factorPpm()
                                < current.maxPpm() * AdaptiveMath.DEEPER_BELOW_PPM / PPM ? 1 : 0;
                        atCut = scaled(limits, cut.factorPpm());
                        next = AdaptiveMath.emptied(states, scriptNow, atCut);
                        expectedText = stored(next, cut, a, scriptNow);
                    } else {
                        ignored++;
                    }
                    Steps.One d = Steps.peek(next, scriptNow, 1, atCut);
                    expected = List.of(cut != current ? 1L : 0L, d.waitTicks(), d.remaining(), 1L, scriptNow,
                            cut.factorPpm(), cut.starting() ? 1L : 0L);
                }
                default -> {
                    Steps.One d = Steps.peek(states, scriptNow, 1, scaled);
                    expected = List.of(0L, d.waitTicks(), d.remaining(), 1L, scriptNow, current.factorPpm(),
                            current.starting() ? 1L : 0L);
                }
            }
            if (rate != null && AdaptiveMath.idleTicks(states, scriptNow) >= a.memoryTicks()) {
                forgotten++;
            }
            // a key the script (re)wrote with a PX of a few ms may be gone by the GET, also when its text is the
            // one it had (a loaded machine can take that long between the script and the GET): its text goes
            // unchecked, counted
            boolean expired = after == null && expectedText != null
                    && latest(expectedText, a.memoryTicks()) - scriptNow < 100_000;
            if (expired) {
                expiredKeys++;
            }
            if (!reply.equals(expected) || !expired && !java.util.Objects.equals(after, expectedText)) {
                if (mismatches.size() < 8) {
                    mismatches.add(String.format("case %d: %s on '%s', limits %s, %s, ARGV %s:%n  script %s -> '%s'"
                            + "%n  math   %s -> '%s'", id, op, stored, limits, adapt, argv, reply, after, expected,
                            expectedText));
                } else {
                    mismatches.add("");
                }
            }
        }
        System.out.printf("bucket.lua's adaptive rate against AdaptiveMath: %d cases, %d granted, %d increases"
                + " (%d doublings, %d with a remembered cut), %d cuts (%d while starting, %d below a remembered cut,"
                + " %d measured), %d ignored, %d forgotten, %d written keys expired before the GET%n", CASES, granted,
                steps, doublings, remembered, cuts, startingCuts, deeperCuts, measuredCuts, ignored, forgotten,
                expiredKeys);
        assertThat(mismatches).as("%d of %d cases differ; the first:%n%s", mismatches.size(), CASES,
                String.join("\n", mismatches.subList(0, Math.min(8, mismatches.size())))).isEmpty();
        // the generator reaches what it is meant to
        assertThat(cuts).isGreaterThan(CASES / 50);
        assertThat(ignored).isGreaterThan(CASES / 50);
        assertThat(steps).isGreaterThan(CASES / 100);
        assertThat(doublings).isGreaterThan(CASES / 200);
        assertThat(remembered).isGreaterThan(CASES / 200);
        assertThat(startingCuts).isGreaterThan(CASES / 200);
        assertThat(deeperCuts).isGreaterThan(CASES / 400);
        assertThat(measuredCuts).isGreaterThan(CASES / 200);
        assertThat(forgotten).isGreaterThan(CASES / 100);
        assertThat(expiredKeys).as("written keys gone before they were read").isLessThan(CASES / 20);
    }

    /** One key of an all-of case: its Redis key, limits (adaptive or not), the text SET before and its rate state. */
    private record AllOfKey(String key, Limits limits, String stored, long[] tats, RateState rate) {
    }

    /**
     * A reservation on several keys (the script's {@code reserve} with {@code C}) against {@link AdaptiveMath#reserveAll}: 1 to 3 candidates, each a group of 1 or 2
     * keys, and 0 to 2 shared keys, every key with its own limits of the generator above, adaptive or fixed, its own
     * state and rate state. Compared: the reply and every key's text after the call (written keys at their rate
     * with the credit earned, doubled while starting; a fixed key written without a rate state, as the script
     * writes it; the others as SET).
     * Keys whose limits would saturate at the script's 2^51 µs burst at their floor are fixed instead, so the math's
     * scaling and the script's agree (the saturation is the test above's).
     */
    @Test
    void theScriptsAllOfDecidesEveryKeyAtItsRateAsTheMath() {
        List<String> mismatches = new ArrayList<>();
        int granted = 0;
        int refused = 0;
        int grouped = 0;
        int adaptiveCharged = 0;
        int expiredKeys = 0;
        for (int id = 0; id < CASES / 2; id++) {
            long now = RedisServers.micros(commands.time());
            int candidates = 1 + random.nextInt(3);
            int[] sizes = new int[candidates];
            List<List<AllOfKey>> groups = new ArrayList<>();
            for (int c = 0; c < candidates; c++) {
                sizes[c] = 1 + random.nextInt(2);
                List<AllOfKey> group = new ArrayList<>();
                for (int g = 0; g < sizes[c]; g++) {
                    group.add(allOfKey("all:" + id + ":c" + c + ":" + g, now));
                }
                groups.add(group);
            }
            List<AllOfKey> shared = new ArrayList<>();
            for (int j = random.nextInt(3); j > 0; j--) {
                shared.add(allOfKey("all:" + id + ":s" + j, now));
            }
            List<AllOfKey> keys = new ArrayList<>();
            groups.forEach(keys::addAll);
            keys.addAll(shared);
            long smallest = keys.stream().mapToLong(k -> k.limits().capacity()).min().orElseThrow();
            long tokens = generators.cost(smallest);
            long maxWait = random.nextInt(3) == 0 ? 0 : generators.logUniform(1, YEAR_MICROS);
            boolean withSizes = candidates > 1 && random.nextBoolean() || java.util.Arrays.stream(sizes)
                    .anyMatch(n -> n > 1);
            grouped += withSizes ? 1 : 0;
            List<String> argv = new ArrayList<>(List.of("reserve", Long.toString(tokens), Long.toString(maxWait),
                    "C", Integer.toString(keys.size()), Integer.toString(candidates)));
            if (withSizes) {
                argv.add("G");
                for (int n : sizes) {
                    argv.add(Integer.toString(n));
                }
            }
            for (AllOfKey k : keys) {
                argv.addAll(limitsArgv(k.limits()));
                put(k.key(), k.stored());
            }
            List<Long> reply = ReserveReplies.fiveEach(commands.evalsha(BucketScript.DIGEST, ScriptOutputType.MULTI,
                    keys.stream().map(AllOfKey::key).toArray(String[]::new), argv.toArray(String[]::new)), candidates);
            List<String> after = keys.stream().map(k -> commands.get(k.key())).toList();
            long scriptNow = reply.get(4);
            // a reserve answers its reservations and then the Redis clock read after them, at or after its now
            if (reply.size() == 6 && reply.get(5) >= scriptNow) {
                reply = reply.subList(0, 5);
            }

            long[][][] groupTats = new long[candidates][][];
            RateState[][] groupRates = new RateState[candidates][];
            List<List<Limits>> groupLimits = new ArrayList<>();
            for (int c = 0; c < candidates; c++) {
                List<AllOfKey> group = groups.get(c);
                groupTats[c] = group.stream().map(k -> BucketMath.align(k.tats(), scriptNow, k.limits()))
                        .toArray(long[][]::new);
                groupRates[c] = group.stream().map(AllOfKey::rate).toArray(RateState[]::new);
                groupLimits.add(group.stream().map(AllOfKey::limits).toList());
            }
            Steps.All a = Steps.reserveAll(groupTats, groupRates, groupLimits,
                    shared.stream().map(k -> BucketMath.align(k.tats(), scriptNow, k.limits())).toArray(long[][]::new),
                    shared.stream().map(AllOfKey::rate).toArray(RateState[]::new),
                    shared.stream().map(AllOfKey::limits).toList(), scriptNow, tokens, maxWait);
            Steps.All d = a.decision();
            List<Long> expected = List.of(d.granted() ? 1L : 0L, d.waitTicks(), d.remaining(), d.chosen() + 1L,
                    scriptNow);
            List<String> expectedTexts = new ArrayList<>(keys.stream().map(AllOfKey::stored).toList());
            if (d.granted()) {
                granted++;
                int from = 0;
                for (int c = 0; c < d.chosen(); c++) {
                    from += sizes[c];
                }
                int size = sizes[d.chosen()];
                for (int i = 0; i < d.tatTicks().length; i++) {
                    int at = i < size ? from + i : keys.size() - shared.size() + i - size;
                    Adaptive adaptive = keys.get(at).limits().adaptive();
                    adaptiveCharged += adaptive != null ? 1 : 0;
                    expectedTexts.set(at, adaptive != null ? stored(d.tatTicks(i), a.rates()[i], adaptive, scriptNow)
                            : text(d.tatTicks(i), null, d.tatTicks(i).length));
                }
            } else {
                refused++;
            }
            boolean differs = !reply.equals(expected);
            for (int k = 0; k < keys.size(); k++) {
                String want = expectedTexts.get(k);
                // as in the single-key cases: a key rewritten with a PX of a few ms may be gone by the GET
                Adaptive adaptive = keys.get(k).limits().adaptive();
                boolean expired = after.get(k) == null && want != null
                        && latest(want, adaptive == null ? 0 : adaptive.memoryTicks()) - scriptNow < 100_000;
                expiredKeys += expired ? 1 : 0;
                differs |= !expired && !java.util.Objects.equals(after.get(k), want);
            }
            if (differs) {
                mismatches.add(mismatches.size() >= 8 ? "" : String.format("case %d: all over %s, sizes %s,"
                        + " ARGV %s:%n  script %s -> %s%n  math   %s -> %s", id, keys, java.util.Arrays.toString(sizes),
                        argv, reply, after, expected, expectedTexts));
            }
        }
        System.out.printf("bucket.lua's all against AdaptiveMath.reserveAll: %d cases, %d granted, %d refused, %d with"
                + " group sizes, %d adaptive keys charged, %d written keys expired before the GET%n", CASES / 2,
                granted, refused, grouped, adaptiveCharged, expiredKeys);
        assertThat(mismatches).as("%d of %d cases differ; the first:%n%s", mismatches.size(), CASES / 2,
                String.join("\n", mismatches.subList(0, Math.min(8, mismatches.size())))).isEmpty();
        assertThat(granted).isGreaterThan(CASES / 20);
        assertThat(refused).isGreaterThan(CASES / 20);
        assertThat(grouped).isGreaterThan(CASES / 10);
        assertThat(adaptiveCharged).isGreaterThan(CASES / 10);
        assertThat(expiredKeys).as("written keys gone before they were read").isLessThan(CASES / 10);
    }

    /**
     * The script's {@code batch} (the batching lane's call) on one adaptive key against {@link AdaptiveMath#reserve}
     * applied in sequence at the script's now, each reservation on the states and rate state the one before left:
     * 2 to 12 reservations of random tokens and maxWait, on a key of the generator's limits, adaptation (with and
     * without a slow start) and state. Compared: every reservation's five numbers and the key's text after the call.
     */
    @Test
    void theScriptsBatchAdaptsAsTheMathInSequence() {
        List<String> mismatches = new ArrayList<>();
        int doublings = 0;
        int granted = 0;
        int expiredKeys = 0;
        for (int id = 0; id < CASES / 4; id++) {
            String key = "batch-adapt:" + id;
            Limits limits = generators.limits(1 + random.nextInt(2));
            Adapt adapt = adaptation();
            Adaptive a = adapt.adaptive();
            long now = RedisServers.micros(commands.time());
            long[] tats = tats(limits, now);
            RateState rate = random.nextInt(3) == 0 ? null : rateState(adapt, now);
            String stored = text(tats, rate, tats == null ? 0 : tats.length);
            put(key, stored);
            int members = 2 + random.nextInt(11);
            long[] tokens = new long[members];
            long[] maxWaits = new long[members];
            List<String> argv = new ArrayList<>(List.of("reserve"));
            for (int i = 0; i < members; i++) {
                tokens[i] = random.nextBoolean() ? 1 : generators.cost(limits.capacity());
                maxWaits[i] = random.nextInt(3) == 0 ? 0 : generators.logUniform(1, YEAR_MICROS);
                argv.add(Long.toString(tokens[i]));
                argv.add(Long.toString(maxWaits[i]));
                argv.addAll(limitsArgv(limits.withAdaptive(a), adapt.step()));
            }
            String[] keys = new String[members];
            java.util.Arrays.fill(keys, key);
            int[] candidates = new int[members];
            java.util.Arrays.fill(candidates, 1);
            List<Long> reply = ReserveReplies.fiveEach(commands.evalsha(BucketScript.DIGEST, ScriptOutputType.MULTI,
                    keys, argv.toArray(String[]::new)), candidates);
            String after = commands.get(key);
            long scriptNow = reply.get(4);

            long[] states = BucketMath.align(tats, scriptNow, limits);
            RateState state = rate;
            boolean written = false;
            List<Long> expected = new ArrayList<>();
            for (int i = 0; i < members; i++) {
                RateState current = AdaptiveMath.current(state, states, scriptNow, a);
                Steps.One d = Steps.reserve(states, scriptNow, tokens[i], scaled(limits, current.factorPpm()),
                        maxWaits[i]);
                expected.addAll(List.of(d.granted() ? 1L : 0L, d.waitTicks(), d.remaining(), 1L, scriptNow));
                if (d.granted()) {
                    granted++;
                    RateState earned = AdaptiveMath.earn(current, tokens[i], adapt.step(), scriptNow, a);
                    doublings += current.starting() && earned.factorPpm() != current.factorPpm() ? 1 : 0;
                    states = d.tatTicks();
                    state = earned;
                    written = true;
                }
            }
            String expectedText = written ? stored(states, state, a, scriptNow) : stored;
            boolean expired = after == null && expectedText != null
                    && latest(expectedText, a.memoryTicks()) - scriptNow < 100_000;
            expiredKeys += expired ? 1 : 0;
            // the reply ends with the Redis clock read after the members' work
            boolean clockAfter = reply.size() == expected.size() + 1 && reply.get(expected.size()) >= scriptNow;
            if (!clockAfter || !reply.subList(0, expected.size()).equals(expected)
                    || !expired && !java.util.Objects.equals(after, expectedText)) {
                mismatches.add(mismatches.size() >= 8 ? "" : String.format("case %d: batch on '%s', limits %s, %s,"
                        + " ARGV %s:%n  script %s -> '%s'%n  math   %s -> '%s'", id, stored, limits, adapt, argv,
                        reply, after, expected, expectedText));
            }
        }
        System.out.printf("bucket.lua's adaptive batch against AdaptiveMath in sequence: %d cases, %d granted, %d"
                + " doublings, %d written keys expired before the GET%n", CASES / 4, granted, doublings, expiredKeys);
        assertThat(mismatches).as("%d of %d cases differ; the first:%n%s", mismatches.size(), CASES / 4,
                String.join("\n", mismatches.subList(0, Math.min(8, mismatches.size())))).isEmpty();
        assertThat(granted).isGreaterThan(CASES / 4);
        assertThat(doublings).isGreaterThan(CASES / 100);
        assertThat(expiredKeys).as("written keys gone before they were read").isLessThan(CASES / 40);
    }

    /**
     * Cuts after grants: keys driven through 10 to 40 operations each (reserves of one token mostly, throttled
     * signals, peeks and rates), one call each, every call compared with the math from the state the script stored
     * before it (read back and parsed): the tokens counted since a cut, during its hold too, and the cut measured on
     * them at the Redis clock's own intervals. Adaptations of the generator with short holds (0 to 3 ms), so that
     * signals both fall in the hold and pass it.
     */
    @Test
    void cutsAfterGrantsMeasureTheRateSentAsTheMath() {
        List<String> mismatches = new ArrayList<>();
        int calls = 0;
        int measuredCuts = 0;
        int counted = 0;
        for (int id = 0; id < CASES / 10; id++) {
            String key = "seq-adapt:" + id;
            commands.del(key);
            Limits limits = generators.limits(1 + random.nextInt(2));
            Adapt drawn = adaptation();
            Adapt adapt = new Adapt(drawn.floor(), drawn.decrease(), drawn.increase(),
                    random.nextInt(3) == 0 ? 0 : generators.logUniform(1, 3_000), drawn.memoryMicros() == 0
                    ? TimeUnit.DAYS.toMicros(1) : drawn.memoryMicros(), drawn.step(), drawn.start());
            Adaptive a = adapt.adaptive();
            for (int n = 10 + random.nextInt(31); n > 0; n--) {
                String before = commands.get(key);
                String op = switch (random.nextInt(10)) {
                    case 0, 1 -> "throttle";
                    case 2 -> random.nextBoolean() ? "peek" : "rate";
                    default -> "reserve";
                };
                long tokens = op.equals("reserve") && random.nextInt(4) == 0 ? generators.cost(limits.capacity()) : 1;
                long arg = op.equals("reserve") ? YEAR_MICROS : -1;
                List<String> argv = new ArrayList<>(List.of(op, Long.toString(tokens), Long.toString(arg)));
                argv.addAll(limitsArgv(limits.withAdaptive(a), adapt.step()));
                List<Long> reply = commands.evalsha(BucketScript.DIGEST, ScriptOutputType.MULTI, new String[] {key},
                        argv.toArray(String[]::new));
                if (op.equals("reserve")) {
                    reply = ReserveReplies.fiveEach(reply, 1);
                    if (reply.size() == 6 && reply.get(5) >= reply.get(4)) {
                        reply = reply.subList(0, 5);
                    }
                }
                String after = commands.get(key);
                long scriptNow = reply.get(4);
                calls++;

                long[] tats = tatsOf(before);
                RateState rate = rateOf(before);
                long[] states = BucketMath.align(tats, scriptNow, limits);
                RateState current = AdaptiveMath.current(rate, states, scriptNow, a);
                Limits scaled = scaled(limits, current.factorPpm());
                List<Long> expected;
                String expectedText = before;
                switch (op) {
                    case "reserve" -> {
                        Steps.One d = Steps.reserve(states, scriptNow, tokens, scaled, arg);
                        expected = List.of(d.granted() ? 1L : 0L, d.waitTicks(), d.remaining(), 1L, scriptNow);
                        if (d.granted()) {
                            RateState earned = AdaptiveMath.earn(current, tokens, adapt.step(), scriptNow, a);
                            counted += earned.granted() > current.granted() ? 1 : 0;
                            expectedText = stored(d.tatTicks(), earned, a, scriptNow);
                        }
                    }
                    case "throttle" -> {
                        RateState cut = AdaptiveMath.cut(current, scriptNow, a, AdaptiveMath.sustainedInterval(limits));
                        long[] next = states;
                        Limits atCut = scaled;
                        if (cut != current) {
                            measuredCuts += measured(current, scriptNow) ? 1 : 0;
                            atCut = scaled(limits, cut.factorPpm());
                            next = AdaptiveMath.emptied(states, scriptNow, atCut);
                            expectedText = stored(next, cut, a, scriptNow);
                        }
                        Steps.One d = Steps.peek(next, scriptNow, 1, atCut);
                        expected = List.of(cut != current ? 1L : 0L, d.waitTicks(), d.remaining(), 1L, scriptNow,
                                cut.factorPpm(), cut.starting() ? 1L : 0L);
                    }
                    case "peek" -> {
                        Steps.One d = Steps.peek(states, scriptNow, tokens, scaled);
                        expected = List.of(d.granted() ? 1L : 0L, d.waitTicks(), d.remaining(), 1L, scriptNow);
                    }
                    default -> {
                        Steps.One d = Steps.peek(states, scriptNow, 1, scaled);
                        expected = List.of(0L, d.waitTicks(), d.remaining(), 1L, scriptNow, current.factorPpm(),
                                current.starting() ? 1L : 0L);
                    }
                }
                // a key rewritten with a PX of a few ms may be gone by the GET (as in the cases above)
                boolean expired = after == null && expectedText != null
                        && latest(expectedText, a.memoryTicks()) - scriptNow < 100_000;
                if (!reply.equals(expected) || !expired && !java.util.Objects.equals(after, expectedText)) {
                    mismatches.add(mismatches.size() >= 8 ? "" : String.format("key %d: %s on '%s', limits %s, %s,"
                            + " ARGV %s:%n  script %s -> '%s'%n  math   %s -> '%s'", id, op, before, limits, adapt,
                            argv, reply, after, expected, expectedText));
                }
            }
        }
        System.out.printf("bucket.lua's cuts after grants against AdaptiveMath: %d calls, %d grants counted, %d"
                + " measured cuts%n", calls, counted, measuredCuts);
        assertThat(mismatches).as("%d of %d calls differ; the first:%n%s", mismatches.size(), calls,
                String.join("\n", mismatches.subList(0, Math.min(8, mismatches.size())))).isEmpty();
        assertThat(measuredCuts).isGreaterThan(CASES / 40);
        assertThat(counted).isGreaterThan(CASES / 2);
    }

    /** The tats of a stored text (null: none). */
    private static long[] tatsOf(String text) {
        if (text == null) {
            return null;
        }
        List<Long> tats = new ArrayList<>();
        for (String word : text.split(" ")) {
            if (word.equals("r") || word.equals("s")) {
                break;
            }
            tats.add(Long.parseLong(word));
        }
        return tats.stream().mapToLong(Long::longValue).toArray();
    }

    /** The rate state of a stored text as the script writes it (null: none). */
    private static RateState rateOf(String text) {
        if (text == null || !text.contains(" r ") && !text.startsWith("r ")) {
            return null;
        }
        String[] w = text.substring(text.indexOf("r ") + 2).split(" ");
        return new RateState(Long.parseLong(w[0]), Long.parseLong(w[1]), Long.parseLong(w[2]), w[3].equals("1"),
                w.length > 4 ? Long.parseLong(w[4]) : 0, w.length > 5 ? Long.parseLong(w[5]) : 0);
    }

    /**
     * A key of an all-of case: limits of the generator, adaptive two times in three (unless they would saturate at
     * the lowest factor it may be decided at), a state about now and, often, a rate state (fixed keys too: one written while they adapted).
     */
    private AllOfKey allOfKey(String key, long now) {
        Limits limits = generators.limits(1 + random.nextInt(2));
        Adapt adapt = adaptation();
        RateState rate = random.nextInt(3) == 0 ? null : rateState(adapt, now);
        long lowest = Math.min(adapt.floor(), rate == null ? PPM : rate.factorPpm());
        if (random.nextInt(3) > 0 && !saturates(limits, lowest)) {
            limits = limits.withAdaptive(adapt.adaptive());
        }
        long[] tats = tats(limits, now);
        return new AllOfKey(key, limits, text(tats, rate, tats == null ? 0 : tats.length), tats, rate);
    }

    /** True when a limit's interval at factor {@code floor} saturates at the script's 2^51 µs burst. */
    private static boolean saturates(Limits limits, long floor) {
        for (int i = 0; i < limits.size(); i++) {
            Limit l = limits.get(i);
            if (AdaptiveMath.scaledInterval(l.interval(), l.capacity(), floor, MAX_BURST_MICROS)
                    != AdaptiveMath.scaledInterval(l.interval(), l.capacity(), floor, Limit.MAX_BURST_TICKS)) {
                return true;
            }
        }
        return false;
    }

    /** A key's limits as the store sends them: 'A' and the adaptation (the step of the limits), m, the pairs. */
    private static List<String> limitsArgv(Limits limits) {
        return limitsArgv(limits, Adaptive.stepTokens(limits));
    }

    /** {@link #limitsArgv(Limits)} with the tokens of one step given. */
    private static List<String> limitsArgv(Limits limits, long step) {
        List<String> argv = new ArrayList<>();
        Adaptive a = limits.adaptive();
        if (a != null) {
            argv.addAll(List.of("A", Long.toString(a.floorPpm()), Long.toString(a.decreasePpm()),
                    Long.toString(a.increasePpm()), Long.toString(a.holdTicks()), Long.toString(a.memoryTicks()),
                    Long.toString(step), Long.toString(a.startPpm())));
        }
        argv.add(Integer.toString(limits.size()));
        for (int i = 0; i < limits.size(); i++) {
            argv.add(Long.toString(limits.get(i).capacity()));
            argv.add(Long.toString(limits.get(i).interval()));
        }
        return argv;
    }

    /** The latest instant a stored text keeps its key for, as store() computes its PX: with a rate, plus the memory. */
    private static long latest(String text, long memoryMicros) {
        long latest = Long.MIN_VALUE;
        for (String word : text.split(" ")) {
            if (word.equals("r")) {
                return latest + memoryMicros;
            }
            latest = Math.max(latest, Long.parseLong(word));
        }
        return latest;
    }

    private Adapt adaptation() {
        long floor = generators.logUniform(1, PPM - 1);
        long decrease = random.nextBoolean() ? 500_000 : generators.logUniform(1, PPM - 1);
        long increase = random.nextBoolean() ? 100_000 : generators.logUniform(1, PPM);
        long hold = switch (random.nextInt(4)) {
            case 0 -> 0;
            case 1 -> TimeUnit.HOURS.toMicros(1);
            default -> generators.logUniform(1, 5_000_000);
        };
        long memory = switch (random.nextInt(4)) {
            case 0 -> 0;
            case 1 -> TimeUnit.DAYS.toMicros(1);
            default -> generators.logUniform(1, 5_000_000);
        };
        long step = random.nextBoolean() ? 1 + random.nextInt(20) : generators.logUniform(1, Adaptive.MAX_STEP_TOKENS);
        long start = switch (random.nextInt(3)) {
            case 0 -> PPM;
            case 1 -> floor;
            default -> generators.logUniform(floor, PPM);
        };
        return new Adapt(floor, decrease, increase, hold, memory, step, start);
    }

    /** Tats about now for {@code limits} (null: no state): past, in debt within the burst, beyond it. */
    private long[] tats(Limits limits, long now) {
        if (random.nextInt(5) == 0) {
            return null;
        }
        long[] tats = new long[limits.size()];
        for (int i = 0; i < tats.length; i++) {
            long burst = limits.get(i).burst();
            tats[i] = switch (random.nextInt(5)) {
                case 0 -> now - generators.logUniform(1, YEAR_MICROS);
                case 1 -> now + random.nextInt(2_000);
                case 2 -> now + burst + generators.logUniform(1, YEAR_MICROS);
                default -> now + generators.logUniform(1, Math.max(1, burst));
            };
        }
        return tats;
    }

    /**
     * A rate state: below the ceiling or at it, its last cut around the hold and the memory ago, most of them
     * remembering the factor of that cut (below, at or above the factor, where a cut goes deeper, or anywhere); a
     * third of them starting (at, below or above the start, the cut at 0 as the script writes it, or anywhere).
     */
    private RateState rateState(Adapt adapt, long now) {
        if (random.nextInt(3) == 0) {
            long f = switch (random.nextInt(4)) {
                case 0 -> adapt.start();
                case 1 -> PPM;
                default -> generators.logUniform(1, PPM);
            };
            long credit = f == PPM || random.nextBoolean() ? 0 : generators.logUniform(1, Adaptive.MAX_STEP_TOKENS - 1);
            return new RateState(f, credit, random.nextInt(4) == 0 ? now - random.nextInt(10_000_000) : 0, true);
        }
        long f = switch (random.nextInt(6)) {
            case 0, 1 -> adapt.floor();
            case 2 -> PPM;
            default -> generators.logUniform(1, PPM - 1);
        };
        long credit = random.nextInt(3) == 0 ? 0 : generators.logUniform(1, Adaptive.MAX_STEP_TOKENS - 1);
        long ago = switch (random.nextInt(5)) {
            case 0 -> adapt.holdMicros() + random.nextInt(3) - 1;
            case 1 -> adapt.memoryMicros() + random.nextInt(3) - 1;
            case 2 -> random.nextInt(1000);
            default -> generators.logUniform(1, 10_000_000);
        };
        long max = switch (random.nextInt(7)) {
            case 0, 1 -> 0;
            case 2 -> f;
            case 3 -> Math.min(PPM, f + generators.logUniform(1, PPM));
            case 4 -> Math.max(1, f - generators.logUniform(1, f));
            // where a cut goes one decrease deeper (AdaptiveMath.DEEPER_BELOW_PPM), give or take 1 ppm
            case 5 -> Math.min(PPM, f * PPM / AdaptiveMath.DEEPER_BELOW_PPM + random.nextInt(3) - 1);
            default -> generators.logUniform(1, PPM);
        };
        long granted = switch (random.nextInt(6)) {
            case 0, 1 -> 0;
            case 2 -> 1 + random.nextInt(10); // about AdaptiveMath.MEASURE_TOKENS
            case 3 -> AdaptiveMath.MAX_GRANTED - random.nextInt(2);
            default -> generators.logUniform(1, AdaptiveMath.MAX_GRANTED);
        };
        return new RateState(f, credit, now - ago, false, max, f == PPM ? 0 : granted);
    }

    /** True when {@link AdaptiveMath#cut} measures: past the start, below the ceiling, more than 4 tokens, time. */
    private static boolean measured(RateState rate, long now) {
        return !rate.starting() && !rate.isCeiling() && rate.granted() > AdaptiveMath.MEASURE_TOKENS
                && now - rate.cutAtTicks() > 0;
    }

    /** The limits at factor {@code f}, as the script scales them: saturating at its 2^51 µs burst. */
    private static Limits scaled(Limits limits, long f) {
        Limit[] scaled = new Limit[limits.size()];
        for (int i = 0; i < scaled.length; i++) {
            Limit l = limits.get(i);
            long interval = AdaptiveMath.scaledInterval(l.interval(), l.capacity(), f, MAX_BURST_MICROS);
            scaled[i] = Limit.of(l.capacity(), 1, interval); // refill 1 per interval: exactly that interval
        }
        return Limits.of(scaled);
    }

    /**
     * What the script's store() leaves: the text, or null (no key) when full without a rate state to keep, or when
     * the rate state is kept but the bucket has already been full for the memory.
     */
    private static String stored(long[] tats, RateState rate, Adaptive a, long now) {
        long latestTat = Long.MIN_VALUE;
        for (long t : tats) {
            latestTat = Math.max(latestTat, t);
        }
        boolean keepsRate = !a.isFresh(rate);
        long latest = keepsRate ? latestTat + a.memoryTicks() : Math.max(now, latestTat);
        return latest <= now ? null : text(tats, keepsRate ? rate : null, tats.length);
    }

    /** SETs {@code text} at {@code key}, or deletes the key for null (no state). */
    private static void put(String key, String text) {
        if (text == null) {
            commands.del(key);
        } else {
            commands.set(key, text);
        }
    }

    /** A state as the script writes it: the tats, then 'r' and the rate state; null for nothing at all. */
    private static String text(long[] tats, RateState rate, int m) {
        if (tats == null && rate == null) {
            return null;
        }
        StringJoiner text = new StringJoiner(" ");
        for (int i = 0; i < m; i++) {
            text.add(Long.toString(tats[i]));
        }
        if (rate != null) {
            text.add("r").add(Long.toString(rate.factorPpm())).add(Long.toString(rate.credit()))
                    .add(Long.toString(rate.cutAtTicks())).add(rate.starting() ? "1" : "0");
            if (rate.maxPpm() > 0 || rate.granted() > 0) {
                text.add(Long.toString(rate.maxPpm()));
            }
            if (rate.granted() > 0) {
                text.add(Long.toString(rate.granted()));
            }
        }
        return text.toString();
    }
}
