package io.tokenbucket.store.redis;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.StringJoiner;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.tokenbucket.math.BucketMath;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Steps;
import io.tokenbucket.testsupport.random.TestSeed;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code bucket.lua} against {@link BucketMath}, case by case, on a real Redis: the guard that the script is the
 * math "step for step", on both of its paths.
 *
 * <p>Each case SETs a random state (no key; one number or several; before now, in debt within the burst, at its
 * edge, beyond it, near the script's clamp, far ahead; words no script writes such as {@code inf}, {@code nan},
 * {@code 1e300}, {@code abc}, {@code 0x10}), runs the script on random limits (1 to 3 per key, capacities and
 * intervals in microseconds from 1 to a burst of 2^51, the edges often) and a random operation with the arguments
 * {@link RedisBucketStore} may send (reserve with a maxWait up to 365 days, peek, refund of 1 to
 * {@code Long.MAX_VALUE} tokens, penalize up to 365 days, reserve over several candidate keys, {@code all} over
 * candidates and shared keys), then reads the key
 * back (GET, PTTL). The expected outcome is computed with {@code BucketMath} in microsecond ticks, with the
 * {@code now} the script returned (the fifth number of its reply) as the clock, and compared field by field: the
 * reply (granted, wait, remaining, chosen position), the stored state (every number exactly; no key when the
 * math says full; the SET text untouched, without a TTL, when nothing is to be written) and the TTL (PX
 * {@code ceil((latest tat - now) / 1000)} ms, less the milliseconds between the script and the PTTL, which a TIME
 * after the PTTL bounds). That {@code now} itself must lie between a TIME sent before the call and the one after it.
 *
 * <p>Every reserve on one key with one limit runs twice, on two keys holding the same state: once with the number
 * of limits sent as {@code "1"}, which the script's fast path takes ({@code ARGV[4] == '1'}, a string test), and
 * once as {@code "01"}, which the fast path's test does not take and the general path reads as 1
 * ({@code tonumber}). The two calls have their own {@code now}; each must equal the math at its own clock.
 *
 * <p><b>The reference reads a state as the script does.</b> A word is read as Lua's {@code tonumber} (C's
 * {@code strtod}) reads it, a word that is no number is a full limit, and the script's clamp for Redis is applied
 * before the math: a state further ahead than 2^52 µs, NaN or infinity counts as {@code now + 2^52}. (Left alone,
 * {@code BucketMath} would read such a state as {@link BucketMath#MAX_DEBT_TICKS} ahead, about 2^62: both admit
 * nothing, but their waits differ; the script's clamp keeps every sum below 2^53, where doubles are exact.) A
 * full limit that the script writes back unchanged (a refund on a bucket whose other limit is in debt) is expected
 * back as the script formats it ({@code %.0f}), so {@code -inf} stays {@code -inf}. States with fractions are not
 * generated: no script writes one, and {@code BucketMath} has only whole ticks.
 *
 * <p>Random with a fixed seed ({@link TestSeed}: printed, another from {@code -Dtokenbucket.seed}); the cases go to
 * Redis in pipelined batches on one Lettuce connection (commands on one connection run in order, so a case's SET,
 * script, GET, PTTL and TIME run back to back). A mismatch prints the case: its state, limits, operation, ARGV, the
 * reply and what was read back, next to what was expected.
 */
class BucketScriptDifferentialTest {

    private static final int CASES = 20_000;
    private static final long SEED = 20261215L;
    private static final int BATCH = 1_000;
    private static final int SHOWN = 8;

    /** bucket.lua's MAX_DEBT: the furthest ahead a state is read, 2^52 µs. */
    private static final long MAX_DEBT_MICROS = 1L << 52;
    private static final long MAX_BURST_MICROS = ScriptArgs.MAX_BURST_MICROS;
    private static final long YEAR_MICROS = TimeUnit.DAYS.toMicros(365);

    /** Words no script writes, and the number Lua's {@code tonumber} makes of each (null: no number). */
    private static final Map<String, Double> GARBAGE = new LinkedHashMap<>();

    static {
        GARBAGE.put("inf", Double.POSITIVE_INFINITY);
        GARBAGE.put("-inf", Double.NEGATIVE_INFINITY);
        GARBAGE.put("nan", Double.NaN);
        GARBAGE.put("1e300", 1e300);
        GARBAGE.put("-1e300", -1e300);
        GARBAGE.put("1e15", 1e15);
        GARBAGE.put("99999999999999999999999", 1e23);
        GARBAGE.put("0x10", 16.0);
        GARBAGE.put("abc", null);
        GARBAGE.put("def", null);
        GARBAGE.put("-", null);
    }

    /**
     * Redis 6.2 counts a PX from the clock at the SET, never before the script's TIME; Redis 7 from the time the
     * script started ({@code commandTimeSnapshot}), which may be in the millisecond before.
     */
    private static long expiryBaseSlackMs;

    private static RedisHandle redis;
    private static RedisConnections connections;
    private static RedisAsyncCommands<String, String> commands;

    private final Random random = TestSeed.random(getClass().getSimpleName(), SEED);
    private long redisEpochMicros;
    private long localEpochNanos;

    @BeforeAll
    static void startRedis() throws Exception {
        redis = RedisServers.shared();
        redis.flushAll();
        expiryBaseSlackMs = Integer.parseInt(RedisServers.version().split("\\.")[0]) >= 7 ? 1 : 0;
        connections = new RedisConnections();
        commands = (RedisAsyncCommands<String, String>) connections.acquire(redis.uri(), Duration.ofSeconds(30))
                .commands();
        // loaded first, so that every call is one EVALSHA in its place in the pipeline (BucketScript.run's EVAL
        // fallback would come after the GET of its own case)
        assertThat(commands.scriptLoad(BucketScript.SOURCE).get(30, TimeUnit.SECONDS)).isEqualTo(BucketScript.DIGEST);
        // from here on, commands are written out a batch at a time (send, then flush): this connection is ours alone
        commands.getStatefulConnection().setAutoFlushCommands(false);
    }

    @AfterAll
    static void stopRedis() {
        if (connections != null) {
            connections.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void theScriptDecidesAndStoresAsTheMathOnBothPaths() throws Exception {
        CompletableFuture<List<String>> time = commands.time().toCompletableFuture();
        commands.getStatefulConnection().flushCommands();
        redisEpochMicros = RedisServers.micros(time.get(30, TimeUnit.SECONDS));
        localEpochNanos = System.nanoTime();
        Tally tally = new Tally();
        List<String> mismatches = new ArrayList<>();
        long began = System.nanoTime();
        for (int first = 0; first < CASES; first += BATCH) {
            List<Run> runs = new ArrayList<>();
            for (int id = first; id < Math.min(CASES, first + BATCH); id++) {
                runs.addAll(nextCase(id, estimatedNow()));
            }
            List<Pending> pending = new ArrayList<>(runs.size());
            // the batch's starting TIME, then each call's TIME after it: the clock before the next call's script
            CompletableFuture<List<String>> before = commands.time().toCompletableFuture();
            for (Run run : runs) {
                Pending p = send(run, before);
                pending.add(p);
                before = p.time();
            }
            commands.getStatefulConnection().flushCommands();
            for (Pending p : pending) {
                tally.runs++;
                Outcome outcome = p.outcome();
                String mismatch = compare(p.run, outcome, tally);
                if (mismatch != null) {
                    tally.mismatched(p.run);
                    if (mismatches.size() < SHOWN) {
                        mismatches.add(mismatch);
                    }
                }
            }
        }
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began);
        System.out.printf("bucket.lua against BucketMath: %d cases, %d script calls in %d ms; %s%n", CASES,
                tally.runs, elapsedMs, tally);

        assertThat(mismatches).as("%d of %d script calls differ from BucketMath (%s); the first %d:%n%s",
                tally.mismatches, tally.runs, tally.mismatchesByPath(), mismatches.size(),
                String.join("\n", mismatches)).isEmpty();
        // the generator reaches what it is meant to: both paths, every operation, both outcomes, writes and deletes
        assertThat(tally.fastPath).as("reserves sent with ARGV[4]='1'").isGreaterThan(CASES / 10);
        assertThat(tally.spelledOut).as("the same reserves sent with ARGV[4]='01'").isEqualTo(tally.fastPath);
        assertThat(tally.granted).as("granted").isGreaterThan(CASES / 10);
        assertThat(tally.refused).as("refused").isGreaterThan(CASES / 10);
        assertThat(tally.multiKey).as("reserves over candidates").isGreaterThan(CASES / 50);
        assertThat(tally.notFirst).as("reserves over candidates choosing another than the first")
                .isGreaterThan(CASES / 500);
        assertThat(tally.allGranted).as("all-of reserves granted").isGreaterThan(CASES / 200);
        assertThat(tally.allRefused).as("all-of reserves refused").isGreaterThan(CASES / 200);
        assertThat(tally.deleted).as("refunds and penalties that leave a full bucket").isGreaterThan(CASES / 100);
        assertThat(tally.clamped).as("states read through the clamp").isGreaterThan(CASES / 50);
        assertThat(tally.expired).as("written keys whose PX of a ms or two was over before they were read (their"
                + " value and TTL go unchecked)").isLessThan(CASES / 200);
    }

    private long estimatedNow() {
        return redisEpochMicros + (System.nanoTime() - localEpochNanos) / 1000;
    }

    // ---------------------------------------------------------------- the cases

    /** One key of a call: its Redis key, the state SET before the script (null: no key) and its limits. */
    private record Bucket(String key, String stored, Limits limits) {
    }

    /**
     * One script call.
     *
     * @param spelledOut the first key's number of limits is sent as {@code "01"} (the general path) instead of
     *                   {@code "1"}
     * @param candidates for {@code all}: how many of the keys are candidates (the rest are shared); else 0
     */
    private record Run(int id, String op, List<Bucket> buckets, long tokens, long arg, boolean spelledOut,
                       int candidates) {

        String[] keys() {
            return buckets.stream().map(Bucket::key).toArray(String[]::new);
        }

        String[] argv() {
            // a reservation on several keys is the script's 'reserve' with 'C', its number of keys and of candidates
            List<String> argv = new ArrayList<>(List.of(op.equals("all") ? "reserve" : op, Long.toString(tokens),
                    Long.toString(arg)));
            if (op.equals("all")) {
                argv.addAll(List.of("C", Integer.toString(buckets.size()), Integer.toString(candidates)));
            }
            for (int k = 0; k < buckets.size(); k++) {
                Limits limits = buckets.get(k).limits();
                argv.add((k == 0 && spelledOut ? "0" : "") + limits.size());
                for (int i = 0; i < limits.size(); i++) {
                    argv.add(Long.toString(limits.get(i).capacity()));
                    argv.add(Long.toString(limits.get(i).interval()));
                }
            }
            return argv.toArray(String[]::new);
        }

        boolean fastPathCandidate() {
            return op.equals("reserve") && buckets.size() == 1 && buckets.get(0).limits().size() == 1;
        }

        String path() {
            return !fastPathCandidate() ? "general path" : spelledOut ? "ARGV[4]='01', general path"
                    : "ARGV[4]='1', fast path unless the state is not one number";
        }
    }

    /** The runs of case {@code id}: one, or two for a reserve on one key with one limit (both paths). */
    private List<Run> nextCase(int id, long nowEstimate) {
        int kind = random.nextInt(100);
        String op = kind < 45 ? "reserve" : kind < 53 ? "candidates" : kind < 61 ? "all" : kind < 72 ? "peek"
                : kind < 86 ? "refund" : "penalize";
        List<Bucket> buckets = new ArrayList<>();
        int allOfCandidates = 0;
        if (op.equals("all")) {
            // candidates, then shared keys: the keys of an all-of acquire, some with a candidate's state and limits
            allOfCandidates = 1 + random.nextInt(3);
            int keys = allOfCandidates + 1 + random.nextInt(2);
            for (int k = 0; k < keys; k++) {
                String key = "diff:" + id + ":" + k;
                if (k > 0 && random.nextInt(4) == 0) {
                    Bucket earlier = buckets.get(random.nextInt(k));
                    buckets.add(new Bucket(key, earlier.stored(), earlier.limits()));
                } else {
                    Limits limits = limits(1 + random.nextInt(2));
                    buckets.add(new Bucket(key, state(limits, nowEstimate), limits));
                }
            }
        } else if (op.equals("candidates")) {
            // the freest of candidates: a reservation on several keys with a candidate per key and no shared key
            op = "all";
            int candidates = 2 + random.nextInt(3);
            allOfCandidates = candidates;
            for (int k = 0; k < candidates; k++) {
                String key = "diff:" + id + ":" + k;
                if (k > 0 && random.nextInt(3) == 0) { // a tie on the state, to see the tie broken
                    Bucket earlier = buckets.get(random.nextInt(k));
                    Limits limits = random.nextBoolean() ? earlier.limits() : limits(1 + random.nextInt(3));
                    buckets.add(new Bucket(key, earlier.stored(), limits));
                } else {
                    Limits limits = limits(1 + random.nextInt(3));
                    buckets.add(new Bucket(key, state(limits, nowEstimate), limits));
                }
            }
        } else {
            int kindOfLimits = random.nextInt(10);
            Limits limits = limits(kindOfLimits < 6 ? 1 : kindOfLimits < 9 ? 2 : 3);
            buckets.add(new Bucket("diff:" + id, state(limits, nowEstimate), limits));
        }
        long smallest = buckets.stream().mapToLong(b -> b.limits().capacity()).min().orElseThrow();
        long tokens = op.equals("refund") ? refundTokens(buckets.get(0), nowEstimate) : cost(smallest);
        long arg = switch (op) {
            case "reserve", "all" -> maxWait(buckets, tokens, nowEstimate);
            case "penalize" -> penalty();
            default -> -1; // what RedisBucketStore sends for peek and refund
        };
        Run run = new Run(id, op, buckets, tokens, arg, false, allOfCandidates);
        if (!run.fastPathCandidate()) {
            return List.of(run);
        }
        Bucket only = buckets.get(0);
        Bucket twin = new Bucket(only.key() + ":01", only.stored(), only.limits());
        return List.of(run, new Run(id, op, List.of(twin), tokens, arg, true, 0));
    }

    /** {@code count} limits, each with a burst (capacity × interval) of at most 2^51 µs (also the adaptive test's). */
    Limits limits(int count) {
        Limit[] limits = new Limit[count];
        for (int i = 0; i < count; i++) {
            long interval = switch (random.nextInt(7)) {
                case 0 -> 1;
                case 1 -> 1 + random.nextInt(1000);
                case 2 -> 1_000 + random.nextInt(1_000_000);
                case 3 -> 1_000_000 + random.nextLong(3_600_000_000L);
                case 4 -> MAX_BURST_MICROS;
                default -> logUniform(1, MAX_BURST_MICROS);
            };
            long largest = MAX_BURST_MICROS / interval;
            long capacity = switch (random.nextInt(6)) {
                case 0 -> 1;
                case 1 -> Math.min(largest, 1 + random.nextInt(10));
                case 2 -> largest;
                default -> logUniform(1, largest);
            };
            limits[i] = Limit.of(capacity, 1, interval); // in microsecond ticks: the interval is exactly `interval`
        }
        return Limits.of(limits);
    }

    /** A state for {@code limits}: no key, words of garbage, or about one number per limit. */
    private String state(Limits limits, long now) {
        int kind = random.nextInt(20);
        if (kind < 3) {
            return null;
        }
        if (kind == 3) {
            return random.nextBoolean() ? "" : "abc def";
        }
        int m = limits.size();
        int words = kind == 4 ? m - 1 : kind == 5 ? m + 1 : m;
        StringJoiner state = new StringJoiner(" ");
        for (int i = 0; i < words; i++) {
            state.add(word(i < m ? limits.get(i) : limits(1).get(0), now));
        }
        return state.toString();
    }

    /** One number of a state, for {@code limit}, around {@code now} (the estimate: the script's is a little later). */
    private String word(Limit limit, long now) {
        long burst = limit.burst();
        long jitter = random.nextLong(-2_000, 2_001);
        return switch (random.nextInt(14)) {
            case 0 -> Long.toString(now - logUniform(1, 10 * YEAR_MICROS)); // long past
            case 1 -> Long.toString(now + jitter); // about now
            case 2, 3 -> Long.toString(now + random.nextLong(burst + 1)); // in debt within the burst
            case 4 -> Long.toString(now + burst + jitter); // about the burst
            case 5 -> Long.toString(now + burst - random.nextLong(limit.capacity() + 1) * limit.interval()
                    + random.nextInt(3) - 1); // about a whole number of tokens short
            case 6 -> Long.toString(now + burst + logUniform(1, 2 * YEAR_MICROS)); // beyond the burst
            case 7 -> Long.toString(now + burst + logUniform(1, MAX_DEBT_MICROS)); // far beyond, maybe clamped
            case 8 -> Long.toString(now + MAX_DEBT_MICROS + jitter); // about the clamp
            case 9 -> Long.toString(now + MAX_DEBT_MICROS + logUniform(1, 1L << 61)); // far ahead
            case 10 -> new String[] {Long.toString(Long.MAX_VALUE), Long.toString((1L << 53) + 1),
                Long.toString(Long.MIN_VALUE), "0", "-1", "1"}[random.nextInt(6)];
            case 11, 12 -> new ArrayList<>(GARBAGE.keySet()).get(random.nextInt(GARBAGE.size()));
            default -> Long.toString(now + random.nextLong(burst + 1)); // in debt within the burst
        };
    }

    /** Tokens for reserve, peek and penalize: 1 to the smallest capacity. */
    long cost(long smallest) {
        return switch (random.nextInt(6)) {
            case 0, 1 -> 1;
            case 2 -> smallest;
            default -> logUniform(1, smallest);
        };
    }

    /** Tokens for refund: any number from 1, often about the debt. */
    private long refundTokens(Bucket bucket, long now) {
        long[] tats = read(bucket.stored(), now, bucket.limits()).tats;
        Limit limit = bucket.limits().get(0);
        long owed = Math.max(0, tats[0] - now) / limit.interval();
        return switch (random.nextInt(6)) {
            case 0 -> 1;
            case 1 -> Long.MAX_VALUE;
            case 2 -> Math.max(1, owed + random.nextInt(5) - 2);
            case 3 -> logUniform(1, Long.MAX_VALUE);
            default -> logUniform(1, Math.max(1, limit.capacity()));
        };
    }

    /** A maxWait up to 365 days (RedisBucketStore's ceiling), often about the wait the state should give. */
    private long maxWait(List<Bucket> buckets, long tokens, long now) {
        return switch (random.nextInt(5)) {
            case 0, 1 -> 0;
            case 2 -> {
                long wait = Long.MAX_VALUE;
                for (Bucket b : buckets) {
                    wait = Math.min(wait, peek(read(b.stored(), now, b.limits()).tats, now, tokens, b.limits())
                            .waitTicks());
                }
                yield Math.max(0, Math.min(YEAR_MICROS, wait + random.nextLong(-3_000, 3_001)));
            }
            case 3 -> YEAR_MICROS;
            default -> logUniform(1, YEAR_MICROS);
        };
    }

    /** A penalty up to 365 days (RedisBucketStore's ceiling). */
    long penalty() {
        return switch (random.nextInt(5)) {
            case 0 -> 0;
            case 1 -> random.nextInt(2_000);
            case 2 -> YEAR_MICROS;
            default -> logUniform(1, YEAR_MICROS);
        };
    }

    /** Between {@code from} and {@code to}, uniform in the number of bits: small and large values alike. */
    long logUniform(long from, long to) {
        int lowBits = 64 - Long.numberOfLeadingZeros(from);
        int bits = lowBits + random.nextInt(65 - Long.numberOfLeadingZeros(to) - lowBits);
        long low = Math.max(from, bits == 1 ? 1 : 1L << (bits - 1));
        long high = bits == 63 ? to : Math.min(to, (1L << bits) - 1);
        return low == high ? low : low + (random.nextLong() >>> 1) % (high - low + 1);
    }

    // ---------------------------------------------------------------- running them

    /**
     * What Redis answered for one call: the reply (or the failure), each key's GET and PTTL after it, and the Redis
     * clock (TIME) before the call and after the reads.
     */
    private record Outcome(List<Long> reply, Throwable failure, List<String> values, List<Long> pttls,
                           long beforeMicros, long afterMicros) {
    }

    /** A call in the pipeline; {@code before} is a TIME sent before its SETs, {@code time} one after its reads. */
    private record Pending(Run run, CompletableFuture<List<String>> before, List<CompletableFuture<String>> sets,
                           CompletableFuture<List<Long>> reply, List<CompletableFuture<String>> gets,
                           List<CompletableFuture<Long>> pttls, CompletableFuture<List<String>> time) {

        Outcome outcome() throws Exception {
            for (CompletableFuture<String> set : sets) {
                assertThat(set.get(30, TimeUnit.SECONDS)).isEqualTo("OK");
            }
            List<Long> answer = null;
            Throwable failure = null;
            try {
                answer = reply.get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                failure = e.getCause();
            }
            List<String> values = new ArrayList<>();
            List<Long> pttl = new ArrayList<>();
            for (int k = 0; k < gets.size(); k++) {
                values.add(gets.get(k).get(30, TimeUnit.SECONDS));
                pttl.add(pttls.get(k).get(30, TimeUnit.SECONDS));
            }
            return new Outcome(answer, failure, values, pttl, RedisServers.micros(before.get(30, TimeUnit.SECONDS)),
                    RedisServers.micros(time.get(30, TimeUnit.SECONDS)));
        }
    }

    /** Sends the call's SETs, the script, a GET and a PTTL per key and a TIME, without waiting. */
    private static Pending send(Run run, CompletableFuture<List<String>> before) {
        List<CompletableFuture<String>> sets = new ArrayList<>();
        for (Bucket b : run.buckets()) {
            if (b.stored() != null) {
                sets.add(commands.set(b.key(), b.stored()).toCompletableFuture());
            }
        }
        CompletableFuture<List<Long>> reply = commands.<List<Long>> evalsha(BucketScript.DIGEST,
                ScriptOutputType.MULTI, run.keys(), run.argv()).toCompletableFuture();
        if (run.op().equals("reserve") || run.op().equals("all")) {
            // a reserve answers a list of reservations and then the Redis clock read after them: one reservation's
            // five numbers are compared below, the clock only checked to come at or after its now
            int candidates = run.op().equals("all") ? run.candidates() : 1;
            reply = reply.thenApply(r -> ReserveReplies.fiveEach(r, candidates)).thenApply(r -> r.size() == 6
                    && r.get(5) != null && r.get(4) != null && r.get(5) >= r.get(4) ? r.subList(0, 5) : r);
        }
        List<CompletableFuture<String>> gets = new ArrayList<>();
        List<CompletableFuture<Long>> pttls = new ArrayList<>();
        for (Bucket b : run.buckets()) {
            gets.add(commands.get(b.key()).toCompletableFuture());
            pttls.add(commands.pttl(b.key()).toCompletableFuture());
        }
        return new Pending(run, before, sets, reply, gets, pttls, commands.time().toCompletableFuture());
    }

    // ---------------------------------------------------------------- the reference

    /**
     * A state as the script reads it, at {@code now}: {@code tats} one tick per limit for {@code BucketMath}
     * ({@link BucketMath#align}); {@code held} the number the script holds for each, to format one it writes back
     * unchanged; {@code clamped} whether a number went through the clamp.
     */
    private record Read(long[] tats, double[] held, boolean clamped) {
    }

    private static Read read(String stored, long now, Limits limits) {
        String[] words = stored == null || stored.isBlank() ? new String[0] : stored.trim().split(" +");
        long[] tats = new long[words.length];
        double[] held = new double[limits.size()];
        boolean clamped = false;
        for (int i = 0; i < words.length; i++) {
            double h = luaNumber(words[i], now);
            double bound = now + MAX_DEBT_MICROS; // exact: below 2^53
            if (Double.isNaN(h) || h > bound) { // bucket.lua's bounded()
                h = bound;
                clamped = true;
            }
            tats[i] = tick(h, now);
            if (i < held.length) {
                held[i] = h;
            }
        }
        for (int i = words.length; i < held.length; i++) {
            held[i] = now;
        }
        return new Read(BucketMath.align(tats, now, limits), held, clamped);
    }

    /** Lua's {@code tonumber} of a word of a state; a word that is no number reads as {@code now} (a full limit). */
    private static double luaNumber(String word, long now) {
        if (GARBAGE.containsKey(word)) {
            Double n = GARBAGE.get(word);
            return n == null ? now : n;
        }
        return (double) Long.parseLong(word); // a double, as in Lua: rounded beyond 2^53
    }

    /**
     * The tick {@code BucketMath} gets for a number the script holds (at most {@code now + 2^52}): the number
     * itself when a long holds it without the wrapping difference {@code tat - now} going wrong, else (infinitely
     * or hugely far in the past) {@code now - 1}, which is as full; {@link #word} formats it back.
     */
    private static long tick(double held, long now) {
        if (held >= now - (1L << 62) && held == Math.rint(held)) {
            return (long) held;
        }
        if (!(held < now)) {
            throw new IllegalStateException("a state the reference cannot read: " + held);
        }
        return now - 1;
    }

    /** The word the script writes for limit {@code i}: the math's tick, or the number read when it is unchanged. */
    private static String word(long[] result, long[] before, double[] held, int i) {
        return result[i] == before[i] ? luaFormat(held[i]) : Long.toString(result[i]);
    }

    /** Lua's {@code string.format('%.0f', n)}. */
    private static String luaFormat(double n) {
        if (Double.isNaN(n)) {
            return "nan";
        }
        if (Double.isInfinite(n)) {
            return n > 0 ? "inf" : "-inf";
        }
        return new BigDecimal(n).setScale(0, RoundingMode.HALF_EVEN).toPlainString();
    }

    /** A key after the call: its value (null: no key) and its PTTL, or for a write the PX the script set. */
    private record KeyState(String value, long px, boolean written) {

        static KeyState unchanged(String stored) {
            return new KeyState(stored, stored == null ? -2 : -1, false);
        }

        static KeyState absent() {
            return new KeyState(null, -2, true);
        }
    }

    /** What the script must answer and leave. */
    private record Expected(List<Long> reply, List<KeyState> keys) {
    }

    private static Expected expect(Run run, long now) {
        List<Bucket> buckets = run.buckets();
        List<Read> reads = new ArrayList<>();
        List<KeyState> keys = new ArrayList<>();
        for (Bucket b : buckets) {
            reads.add(read(b.stored(), now, b.limits()));
            keys.add(KeyState.unchanged(b.stored()));
        }
        Limits limits = buckets.get(0).limits();
        long[] tats = reads.get(0).tats;
        long tokens = run.tokens();
        switch (run.op()) {
            case "reserve" -> {
                // the freest candidate: tokens soonest, then most tokens, then the first
                int best = 0;
                Steps.One bestPeek = null;
                for (int k = 0; k < buckets.size(); k++) {
                    Steps.One p = peek(reads.get(k).tats, now, tokens, buckets.get(k).limits());
                    if (bestPeek == null || p.waitTicks() < bestPeek.waitTicks()
                            || p.waitTicks() == bestPeek.waitTicks() && p.remaining() > bestPeek.remaining()) {
                        best = k;
                        bestPeek = p;
                    }
                }
                Bucket chosen = buckets.get(best);
                Read read = reads.get(best);
                Steps.One d = reserve(read.tats, now, tokens, chosen.limits(), run.arg());
                if (d.granted()) {
                    keys.set(best, written(d.tatTicks(), read, now));
                }
                return new Expected(reply(d.granted(), d.waitTicks(), d.remaining(), best + 1, now), keys);
            }
            case "all" -> {
                int c = run.candidates();
                long[][] all = reads.stream().map(Read::tats).toArray(long[][]::new);
                List<Limits> allLimits = buckets.stream().map(Bucket::limits).toList();
                Steps.All d = Steps.reserveAll(Arrays.copyOfRange(all, 0, c), allLimits.subList(0, c),
                        Arrays.copyOfRange(all, c, all.length), allLimits.subList(c, all.length), now, tokens,
                        run.arg());
                if (d.granted()) {
                    keys.set(d.chosen(), written(d.tatTicks(0), reads.get(d.chosen()), now));
                    for (int k = c; k < buckets.size(); k++) {
                        keys.set(k, written(d.tatTicks(1 + k - c), reads.get(k), now));
                    }
                }
                return new Expected(reply(d.granted(), d.waitTicks(), d.remaining(), d.chosen() + 1, now), keys);
            }
            case "peek" -> {
                Steps.One p = peek(tats, now, tokens, limits);
                return new Expected(reply(p.granted(), p.waitTicks(), p.remaining(), 1, now), keys);
            }
            case "refund" -> {
                long[] next = limits.size() == 1 ? new long[] {limits.get(0).refund(tats[0], now, tokens)}
                        : BucketMath.refund(tats, now, tokens, limits);
                keys.set(0, written(next, reads.get(0), now));
                return new Expected(reply(true, 0, available(next, now, limits), 1, now), keys);
            }
            case "penalize" -> {
                long[] next = limits.size() == 1
                        ? new long[] {limits.get(0).penalize(tats[0], now, run.arg())}
                        : BucketMath.penalize(tats, now, run.arg(), limits);
                keys.set(0, written(next, reads.get(0), now));
                Steps.One p = peek(next, now, tokens, limits); // the script answers as peek after it
                return new Expected(reply(p.granted(), p.waitTicks(), p.remaining(), 1, now), keys);
            }
            default -> throw new IllegalStateException(run.op());
        }
    }

    /** The key after a write of {@code next}: none when every limit is full, else the words and their PX. */
    private static KeyState written(long[] next, Read before, long now) {
        boolean full = next.length == 1 ? BucketMath.isFull(next[0], now) : BucketMath.isFull(next, now);
        if (full) {
            return KeyState.absent();
        }
        StringJoiner value = new StringJoiner(" ");
        long latest = now;
        for (int i = 0; i < next.length; i++) {
            value.add(word(next, before.tats, before.held, i));
            latest = Math.max(latest, next[i]);
        }
        return new KeyState(value.toString(), (latest - now + 999) / 1000, true);
    }

    private static List<Long> reply(boolean granted, long wait, long remaining, int position, long now) {
        return List.of(granted ? 1L : 0L, wait, remaining, (long) position, now);
    }

    // BucketMath's one-limit functions for one limit (what the fast path mirrors), its several-limit ones otherwise

    private static Steps.One reserve(long[] tats, long now, long tokens, Limits limits, long maxWait) {
        if (limits.size() == 1) {
            return Steps.reserve(tats[0], now, tokens, limits.get(0), maxWait);
        }
        return Steps.reserve(tats, now, tokens, limits, maxWait);
    }

    private static Steps.One peek(long[] tats, long now, long tokens, Limits limits) {
        if (limits.size() == 1) {
            return Steps.peek(tats[0], now, tokens, limits.get(0));
        }
        return Steps.peek(tats, now, tokens, limits);
    }

    private static long available(long[] tats, long now, Limits limits) {
        return limits.size() == 1 ? limits.get(0).available(tats[0], now)
                : BucketMath.available(tats, now, limits);
    }

    // ---------------------------------------------------------------- comparing

    /** Null when the call did what the math says, else the case and the differences, readable. */
    private static String compare(Run run, Outcome outcome, Tally tally) {
        if (outcome.failure() != null || outcome.reply() == null || outcome.reply().size() != 5) {
            return describe(run, outcome, null, List.of("the script failed or answered out of shape"));
        }
        long now = outcome.reply().get(4);
        Expected expected = expect(run, now);
        List<String> differences = new ArrayList<>();
        // the script's clock is Redis's: not before the TIME sent before the call, not after the one after it (one
        // connection: Redis runs them in order)
        if (now < outcome.beforeMicros() || now > outcome.afterMicros()) {
            differences.add("now " + now + ", expected from the TIME before the call " + outcome.beforeMicros()
                    + " to the TIME after it " + outcome.afterMicros());
        }
        // the rest is the math at that clock
        String[] fields = {"granted", "wait", "remaining", "position"};
        for (int i = 0; i < fields.length; i++) {
            if (!outcome.reply().get(i).equals(expected.reply().get(i))) {
                differences.add(fields[i] + " " + outcome.reply().get(i) + ", expected " + expected.reply().get(i));
            }
        }
        // the milliseconds that may pass between the script's SET ... PX and the PTTL (TIME after it bounds them)
        long slackMs = outcome.afterMicros() / 1000 - now / 1000 + expiryBaseSlackMs;
        for (int k = 0; k < run.buckets().size(); k++) {
            KeyState want = expected.keys().get(k);
            String value = outcome.values().get(k);
            long pttl = outcome.pttls().get(k);
            String key = run.buckets().get(k).key();
            if (want.value() != null && want.px() <= slackMs && pttl == -2
                    && (value == null || value.equals(want.value()))) {
                tally.expired++; // a PX of a millisecond or two may be over before the GET or the PTTL
                continue;
            }
            if (want.value() == null ? value != null : !want.value().equals(value)) {
                differences.add(key + " holds " + quoted(value) + ", expected " + quoted(want.value()));
            }
            boolean ttlAgrees = want.px() < 0 ? pttl == want.px() : pttl <= want.px() && pttl >= want.px() - slackMs;
            if (!ttlAgrees) {
                differences.add(key + " PTTL " + pttl + ", expected " + (want.px() < 0 ? Long.toString(want.px())
                        : "PX " + want.px() + " less at most " + slackMs + " ms"));
            }
        }
        tally.count(run, expected, reads(run, now));
        return differences.isEmpty() ? null : describe(run, outcome, expected, differences);
    }

    private static boolean reads(Run run, long now) {
        return run.buckets().stream().anyMatch(b -> read(b.stored(), now, b.limits()).clamped());
    }

    private static String describe(Run run, Outcome outcome, Expected expected, List<String> differences) {
        long now = outcome.reply() != null && outcome.reply().size() == 5 ? outcome.reply().get(4) : 0;
        StringBuilder s = new StringBuilder();
        s.append("case ").append(run.id()).append(", ").append(run.path()).append(": ").append(run.op())
                .append(" tokens ").append(run.tokens()).append(", ARGV[3] ").append(run.arg()).append('\n');
        for (Bucket b : run.buckets()) {
            s.append("  ").append(b.key()).append(" SET ").append(quoted(b.stored())).append(relative(b.stored(), now))
                    .append(", limits");
            for (int i = 0; i < b.limits().size(); i++) {
                Limit l = b.limits().get(i);
                s.append(" [C ").append(l.capacity()).append(", T ").append(l.interval()).append(" us, burst ")
                        .append(l.burst()).append(']');
            }
            s.append('\n');
        }
        s.append("  KEYS ").append(List.of(run.keys())).append(" ARGV ").append(List.of(run.argv())).append('\n');
        s.append("  reply ").append(outcome.failure() != null ? outcome.failure().toString() : outcome.reply())
                .append(" (TIME before the call ").append(outcome.beforeMicros()).append(", after the reads ")
                .append(outcome.afterMicros()).append(')');
        if (expected != null) {
            s.append(", expected ").append(expected.reply());
        }
        s.append('\n');
        for (int k = 0; k < outcome.values().size(); k++) {
            s.append("  after: ").append(run.buckets().get(k).key()).append(" = ").append(quoted(outcome.values()
                    .get(k))).append(", PTTL ").append(outcome.pttls().get(k));
            if (expected != null) {
                KeyState want = expected.keys().get(k);
                s.append("; expected ").append(quoted(want.value())).append(want.written() && want.value() != null
                        ? ", PX " + want.px() : want.written() ? ", deleted" : ", untouched");
            }
            s.append('\n');
        }
        s.append("  differences: ").append(String.join("; ", differences)).append('\n');
        return s.toString();
    }

    private static String quoted(String value) {
        return value == null ? "(no key)" : '"' + value + '"';
    }

    /** The state's numbers as {@code now±d}, for a reader. */
    private static String relative(String stored, long now) {
        if (stored == null || stored.isBlank() || now == 0) {
            return "";
        }
        StringJoiner r = new StringJoiner(" ", " (", ")");
        for (String word : stored.trim().split(" +")) {
            if (GARBAGE.containsKey(word)) {
                r.add(word);
            } else {
                long d = Long.parseLong(word) - now;
                r.add(Math.abs(d) > 1L << 62 ? word : d >= 0 ? "now+" + d : "now" + d);
            }
        }
        return r.toString();
    }

    /** What the cases reached, so that a generator gone narrow is seen. */
    private static final class Tally {
        int runs;
        int fastPath;
        int spelledOut;
        int multiKey;
        int notFirst;
        int granted;
        int refused;
        int deleted;
        int clamped;
        int mismatches;
        int expired;
        int allGranted;
        int allRefused;
        final Map<String, Integer> byPath = new LinkedHashMap<>();
        final Map<String, Integer> byOp = new LinkedHashMap<>();

        void count(Run run, Expected expected, boolean readThroughClamp) {
            if (run.fastPathCandidate()) {
                if (run.spelledOut()) {
                    spelledOut++;
                } else {
                    fastPath++;
                }
            }
            if (run.buckets().size() > 1) {
                multiKey++;
                if (expected.reply().get(3) > 1) {
                    notFirst++;
                }
            }
            if (run.op().equals("all")) {
                if (expected.reply().get(0) == 1) {
                    allGranted++;
                } else {
                    allRefused++;
                }
            }
            if (run.op().equals("reserve") || run.op().equals("all")) {
                if (expected.reply().get(0) == 1) {
                    granted++;
                } else {
                    refused++;
                }
            }
            if (expected.keys().stream().anyMatch(k -> k.written() && k.value() == null)) {
                deleted++;
            }
            if (readThroughClamp) {
                clamped++;
            }
            byOp.merge(run.op().equals("all") ? "all" : run.buckets().size() > 1 ? "candidates" : run.op(), 1,
                    Integer::sum);
        }

        void mismatched(Run run) {
            mismatches++;
            byPath.merge(run.path(), 1, Integer::sum);
        }

        String mismatchesByPath() {
            return byPath.toString();
        }

        @Override
        public String toString() {
            return "calls by operation " + byOp + ", reserves sent with '1' " + fastPath + " and with '01' "
                    + spelledOut + ", reserves granted " + granted + " refused " + refused + ", candidates not the"
                    + " first " + notFirst + ", keys deleted " + deleted + ", states clamped " + clamped + ", written keys"
                    + " expired before they were read " + expired;
        }
    }
}
