package io.tokenbucket.benchmarks;

import static io.tokenbucket.benchmarks.Figures.ms;
import static io.tokenbucket.benchmarks.RedisPeers.BUCKET4J;
import static io.tokenbucket.benchmarks.RedisPeers.FREE_GCRA;
import static io.tokenbucket.benchmarks.RedisPeers.GCRA;
import static io.tokenbucket.benchmarks.RedisPeers.GCRA_P16;
import static io.tokenbucket.benchmarks.RedisPeers.HOT_GCRA;
import static io.tokenbucket.benchmarks.RedisPeers.OURS;
import static io.tokenbucket.benchmarks.RedisPeers.PIPELINE;
import static io.tokenbucket.benchmarks.RunCosts.COUNTERS;
import static io.tokenbucket.benchmarks.RunCosts.allocatedBytes;
import static io.tokenbucket.benchmarks.RunCosts.loadAverage;
import static io.tokenbucket.benchmarks.RunCosts.measure;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

import io.tokenbucket.benchmarks.Figures.Ratio;
import io.tokenbucket.benchmarks.ClosedLoop.Peer;
import io.tokenbucket.benchmarks.ClosedLoop.Run;
import io.tokenbucket.benchmarks.RunCosts.Busy;
import io.tokenbucket.benchmarks.RunCosts.Measured;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.HdrHistogram.Histogram;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Issue 22's targets, each against its peer in the same run, in one command:
 * <pre>
 * java -jar benchmarks.jar targets [--seconds 5] [--warmup 2] [--rounds 3] [--keys 1000] [--forks 3]
 *                                  [--no-route] [--no-accuracy] [--options '&amp;name=value'] [--only text]
 * </pre>
 * {@code --options} appends endpoint options to ours in the Redis runs (say {@code &redisBatching=true});
 * {@code --inline-worker} is a diagnosis, not a setting to run with: the component's {@code workerPool} runs each
 * continuation on the thread that completes it, so the route after the step runs on Lettuce's event loop, which a
 * route that blocks there would stall; ours with it against ours without is what the hop to the worker pool costs.
 * {@code --only} keeps the Redis cases whose name contains the text (say {@code random}: with
 * {@code -XX:StartFlightRecording}, a profile of that case alone).
 * <ol>
 * <li><b>Redis</b>, a closed loop ({@link ClosedLoop#drive}) against one {@code redis-server} started here, peers
 * alternating case by case for {@code rounds} rounds, {@code FLUSHALL} before each run:
 * <ul>
 * <li><b>ours</b>: {@code direct:} -> {@code tokenbucket:} (store=redis, every other option at its default, so
 * batching is what the component does by default), one exchange per acquire through the route's asynchronous
 * producer; random keys in the default delay mode with a limit that never binds, the hot key in check mode
 * (capacity 100, 10,000/s, which binds: a decision per exchange, as Bucket4j's {@code tryConsume});</li>
 * <li><b>bucket4j</b>: Bucket4j-Lettuce 8.19 ({@link RedisPeers#bucket4j}), the same limits;</li>
 * <li><b>gcra-P16</b>: a minimal one-key GCRA script ({@link RedisPeers#GCRA}: {@code TIME}, {@code GET}, {@code SET PX}),
 * one {@code EVALSHA} per decision, sent as {@code redis-benchmark -P 16} sends: on each of
 * {@code inFlight / 16} Lettuce connections, 16 commands written in one flush, the next 16 once all 16 are
 * answered. With {@code redis-benchmark} on the {@code PATH} the same script is also run by it, once per round,
 * as a cross-check of this Java driver.</li>
 * </ul>
 * Cases: 1,000 random keys with 64 in flight; one hot key with 64 and 400 in flight; one in flight on the random
 * keys, quiet and with a busy-loop thread started here taking a core. Per run: acquires per second, latency, the
 * client's CPU per acquire (this JVM's CPU time less the busy thread's), Redis's CPU per acquire (its process's
 * user + system time from {@code /proc}), Redis's {@code INFO commandstats} microseconds per acquire (top-level
 * commands only: a script's time includes the commands it calls) and the bytes this JVM allocated per acquire.
 * </li>
 * <li><b>Where the time goes at one in flight</b>: one acquire at a time, each stamped where it passes (sent, the
 * route step entered, each Redis request's bytes written to the socket and each reply's read from it, the step left,
 * the callback), for ours and Bucket4j, quiet and busy: the median and p99 of each stretch and the
 * thread it ran on.</li>
 * <li><b>Release lateness</b> ({@link Accuracy}, default settings): p99 lateness after the first second and
 * early releases, local store and Redis (3 instances).</li>
 * <li><b>The route step</b> (JMH, {@link RouteOverhead}, {@code forks} forks): {@code tokenbucket} against
 * {@code bare}, local store, 1 and 1,000 keys.</li>
 * </ol>
 * Then one table: each target, ours, the peer, the ratio, met or missed. Every ratio is taken within a round and
 * the median of the rounds is shown with its range.
 */
public final class Targets {

    private Targets() {
    }

    /** One Redis case: acquires in flight, on random keys or the hot key, quiet or with a core busy. */
    record Case(String name, int inFlight, boolean hot, boolean busy, List<String> peers) {
        ClosedLoop.Case driverCase() {
            return new ClosedLoop.Case(name, inFlight, hot);
        }
    }

    /** One line of the final table. */
    record Target(String what, String ours, String peer, String ratio, String target, boolean met) {
    }

    public static void main(String[] args) throws Exception {
        run(TargetSettings.parse(args));
    }

    /** Runs every measurement and answers the Redis runs by {@code "<peer> <case>"} (the smoke test reads them). */
    static Map<String, List<Measured>> run(TargetSettings s) throws Exception {
        System.out.printf("issue 22 targets, %s; JVM %s %s; %d cores; load average %s; %d keys; %s s measured after"
                + " %s s warm-up, %d rounds%n", Instant.now(), System.getProperty("java.vm.name"),
                System.getProperty("java.vm.version"), Runtime.getRuntime().availableProcessors(), loadAverage(),
                s.keys(), s.seconds(), s.warmup(), s.rounds());
        List<Target> targets = new ArrayList<>();
        Map<String, List<Measured>> redis = redis(s, targets);
        if (s.accuracy()) {
            accuracy(s, targets);
        }
        if (s.route()) {
            try {
                route(s, targets);
            } catch (org.openjdk.jmh.runner.RunnerException e) {
                // JMH allows one run per machine (/tmp/jmh.lock): another one running must not lose the figures above
                System.out.println("the route step: not measured: " + e.getMessage());
            }
        }
        System.out.println();
        System.out.println("## issue 22: the targets (load average at the end " + loadAverage() + ")");
        System.out.println("| target | ours | peer | ours ÷ peer (rounds) | wanted | result |");
        System.out.println("|---|---:|---:|---:|---|---|");
        for (Target t : targets) {
            System.out.printf("| %s | %s | %s | %s | %s | %s |%n", t.what(), t.ours(), t.peer(), t.ratio(), t.target(),
                    t.met() ? "met" : "**missed**");
        }
        return redis;
    }

    // ---------------------------------------------------------------- Redis

    static Map<String, List<Measured>> redis(TargetSettings s, List<Target> targets) throws Exception {
        String[] keyNames = new String[s.keys()];
        for (int i = 0; i < keyNames.length; i++) {
            keyNames[i] = RedisBenchmark.randKey(i);
        }
        List<Case> cases = List.of(
                new Case("random keys, 64 in flight", 64, false, false, List.of(OURS, BUCKET4J, GCRA_P16)),
                new Case("hot key, 64 in flight", 64, true, false, List.of(OURS, BUCKET4J, GCRA_P16)),
                new Case("hot key, 400 in flight", 400, true, false, List.of(OURS, GCRA_P16)),
                new Case("1 in flight, quiet", 1, false, false, List.of(OURS, BUCKET4J)),
                new Case("1 in flight, other core busy", 1, false, true, List.of(OURS, BUCKET4J)))
                .stream().filter(c -> c.name().contains(s.only())).toList();
        Map<String, List<Measured>> results = new LinkedHashMap<>();
        Map<String, List<Double>> redisBenchmark = new LinkedHashMap<>();
        try (RedisHandle redis = RedisServers.standalone();
             RedisClient admin = RedisClient.create(redis.uri());
             StatefulRedisConnection<String, String> adminConnection = admin.connect()) {
            RedisCommands<String, String> adminCommands = adminConnection.sync();
            String sha = adminCommands.scriptLoad(GCRA);
            System.out.printf("%s on %s, pid %d%n", RedisServers.describe(), redis.uri(), redis.pid());
            Path rb = RedisServers.findOnPath("redis-benchmark");
            System.out.println(rb == null ? "redis-benchmark: not on PATH, its cross-check is skipped"
                    + " (Debian: apt-get install -y redis-tools)" : "redis-benchmark: " + rb);
            System.out.println("ours: tokenbucket: with store=redis" + (s.options().isEmpty() ? ", every other option"
                    + " at its default" : " and " + s.options()) + (s.inlineWorker() ? "; DIAGNOSIS: workerPool runs"
                    + " every continuation on the thread that completes it (Lettuce's event loop)" : ""));
            try (Peer ours = RedisPeers.route(redis.uri(), s.options(), s.inlineWorker());
                 Peer bucket4j = RedisPeers.bucket4j(redis, keyNames)) {
                for (Peer p : List.of(ours, bucket4j)) {
                    warm(p, keyNames);
                }
                for (int round = 1; round <= s.rounds(); round++) {
                    for (Case c : cases) {
                        List<String> order = new ArrayList<>(c.peers());
                        if (round % 2 == 0) {
                            java.util.Collections.reverse(order);
                        }
                        for (String p : order) {
                            adminCommands.flushall();
                            adminCommands.scriptLoad(GCRA);
                            Measured m;
                            try (Busy busy = c.busy() ? new Busy() : null) {
                                m = measure(redis, adminCommands, busy, () -> p.equals(GCRA_P16)
                                        ? RedisPeers.gcraPipelined(redis, sha, c.driverCase(), keyNames, s.warmup(), s.seconds(),
                                                COUNTERS::start, COUNTERS::end)
                                        : ClosedLoop.drive(p.equals(OURS) ? ours : bucket4j, c.driverCase(),
                                        keyNames, s.warmup(), s.seconds(), COUNTERS::start, COUNTERS::end));
                            }
                            results.computeIfAbsent(p + " " + c.name(), k -> new ArrayList<>()).add(m);
                            print(round, p, c, m);
                        }
                    }
                    if (rb != null && s.only().isEmpty()) {
                        for (boolean hot : new boolean[] {false, true}) {
                            adminCommands.flushall();
                            adminCommands.scriptLoad(GCRA);
                            String[] a = hot ? HOT_GCRA : FREE_GCRA;
                            RedisBenchmark.Ceiling r = RedisBenchmark.run(rb, redis, 4, PIPELINE,
                                    List.of("EVALSHA", sha, "1", hot ? "gcra:hot" : "gcra:key-__rand_int__", a[0],
                                            a[1]),
                                    s.keys(), s.seconds());
                            String name = "redis-benchmark -c 4 -P 16, " + (hot ? "hot key" : "random keys");
                            redisBenchmark.computeIfAbsent(name, k -> new ArrayList<>()).add(r.opsPerSecond());
                            System.out.printf("round %d  %-45s %,10.0f ops/s  p50 %.3f ms  p99 %.3f ms%n", round,
                                    name, r.opsPerSecond(), r.p50Ms(), r.p99Ms());
                        }
                    }
                }
            }
            summary(cases, results, redisBenchmark);
            for (boolean busy : new boolean[] {false, true}) {
                if ((busy ? "1 in flight, other core busy" : "1 in flight, quiet").contains(s.only())) {
                    WhereTheTimeGoes.run(redis, adminCommands, keyNames, s, busy);
                }
            }
        }
        redisTargets(results, redisBenchmark.get("redis-benchmark -c 4 -P 16, random keys"), targets);
        return results;
    }

    /**
     * Loads and compiles a peer's code before its first measured run (which would otherwise pay for it in its
     * warm-up seconds, or, in a short run, in its measured ones): 20 waves of 64 acquires, random keys and the hot
     * key; any failure is thrown.
     */
    static void warm(Peer p, String[] keys) throws Exception {
        for (int wave = 0; wave < 20; wave++) {
            CompletableFuture<?>[] f = new CompletableFuture<?>[64];
            for (int i = 0; i < f.length; i++) {
                f[i] = p.acquire(keys[ThreadLocalRandom.current().nextInt(keys.length)], i % 2 == 0);
            }
            CompletableFuture.allOf(f).get(30, TimeUnit.SECONDS);
        }
    }

    private static void print(int round, String peer, Case c, Measured m) {
        Run r = m.run();
        System.out.printf("round %d  %-8s %-28s %,10.0f ops/s  p50 %7.3f ms  p99 %7.3f ms  max %8.3f ms  granted %,d"
                + "  rejected %,d  timeouts %,d  errors %,d%s%s  (ended %s)%n", round, peer, c.name(), r.opsPerSecond(),
                ms(r.latency().getValueAtPercentile(50)), ms(r.latency().getValueAtPercentile(99)),
                ms(r.latency().getMaxValue()), r.granted(), r.rejected(), r.timeouts(), r.otherErrors(),
                r.firstError() == null ? "" : "  first error: " + r.firstError(),
                r.stuck() == 0 ? "" : "  still in flight after 10 s: " + r.stuck(), Instant.now());
        System.out.printf("         per acquire: client CPU %.1f µs, Redis CPU %.1f µs, Redis commandstats %.2f µs"
                + " (%s), allocated %,.0f B; acquires per script call %.1f%n", m.clientCpuMicros(),
                m.redisCpuMicros(), m.commandstatsMicros(), m.commandstats().strip(), m.allocatedBytes(),
                m.perScriptCall());
    }

    private static void summary(List<Case> cases, Map<String, List<Measured>> results,
                                Map<String, List<Double>> redisBenchmark) {
        System.out.println();
        System.out.println("## Redis: median of the rounds (ratios: ours ÷ peer within each round, median and range);"
                + " latency over all rounds; costs per acquire, median of the rounds");
        System.out.println("| case | peer | ops/s | p50 / p99 ms | ours ÷ peer | client CPU µs | Redis CPU µs"
                + " | Redis commandstats µs | allocated B | acquires per script call |");
        System.out.println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (Case c : cases) {
            for (String p : c.peers()) {
                List<Measured> m = results.get(p + " " + c.name());
                Histogram h = merged(m);
                System.out.printf("| %s | %s | %,.0f | %.3f / %.3f | %s | %.1f | %.1f | %.2f | %,.0f | %.1f |%n",
                        c.name(), p,
                        median(m, x -> x.run().opsPerSecond()), ms(h.getValueAtPercentile(50)),
                        ms(h.getValueAtPercentile(99)), p.equals(OURS) ? "" : ratio(results, c, p).text(),
                        median(m, Measured::clientCpuMicros), median(m, Measured::redisCpuMicros),
                        median(m, Measured::commandstatsMicros), median(m, Measured::allocatedBytes),
                        median(m, Measured::perScriptCall));
            }
        }
        for (var e : redisBenchmark.entrySet()) {
            System.out.printf("%s (the C client, the same GCRA script): median %,.0f ops/s, rounds %s%n", e.getKey(),
                    Figures.median(e.getValue().stream().mapToDouble(Double::doubleValue).toArray()),
                    e.getValue().stream().map(v -> String.format("%,.0f", v)).toList());
        }
    }

    static Ratio ratio(Map<String, List<Measured>> results, Case c, String peer) {
        List<Measured> o = results.get(OURS + " " + c.name());
        List<Measured> p = results.get(peer + " " + c.name());
        double[] r = new double[o.size()];
        for (int i = 0; i < r.length; i++) {
            r[i] = o.get(i).run().opsPerSecond() / p.get(i).run().opsPerSecond();
        }
        return Ratio.of(r);
    }

    private static void redisTargets(Map<String, List<Measured>> results, List<Double> redisBenchmark,
                                     List<Target> targets) {
        Case random = new Case("random keys, 64 in flight", 64, false, false, List.of());
        Case hot = new Case("hot key, 64 in flight", 64, true, false, List.of());
        Function<String, List<Measured>> of = results::get;
        if (results.containsKey(OURS + " " + random.name())) {
            Ratio vsBucket4j = ratio(results, random, BUCKET4J);
            Ratio vsGcra = ratio(results, random, GCRA_P16);
            targets.add(new Target("Redis, " + random.name() + ", through a route",
                    kops(of.apply(OURS + " " + random.name())), kops(of.apply(BUCKET4J + " " + random.name()))
                    + " Bucket4j", vsBucket4j.text(), "≥ 3×", vsBucket4j.median() >= 3));
            targets.add(new Target("the same against one GCRA script call per decision, pipelined 16",
                    kops(of.apply(OURS + " " + random.name())), kops(of.apply(GCRA_P16 + " " + random.name()))
                    + " gcra-P16", vsGcra.text(), "≥ 1×", vsGcra.median() >= 1));
            if (redisBenchmark != null) {
                List<Measured> o = of.apply(OURS + " " + random.name());
                double[] r = new double[o.size()];
                for (int i = 0; i < r.length; i++) {
                    r[i] = o.get(i).run().opsPerSecond() / redisBenchmark.get(i);
                }
                Ratio vsC = Ratio.of(r);
                targets.add(new Target("the same against redis-benchmark -c 4 -P 16 running that GCRA script",
                        kops(o), String.format("%,.1f k/s redis-benchmark", Figures.median(
                        redisBenchmark.stream().mapToDouble(Double::doubleValue).toArray()) / 1e3), vsC.text(),
                        "≥ 1×", vsC.median() >= 1));
            }
            double usec = median(of.apply(OURS + " " + random.name()), Measured::commandstatsMicros);
            targets.add(new Target("Redis commandstats µs per reservation, random keys",
                    String.format("%.2f µs", usec),
                    String.format("%.2f µs Bucket4j, %.2f µs gcra-P16",
                            median(of.apply(BUCKET4J + " " + random.name()), Measured::commandstatsMicros),
                            median(of.apply(GCRA_P16 + " " + random.name()), Measured::commandstatsMicros)),
                    "", "≤ 2.5 µs", usec <= 2.5));
        }
        if (results.containsKey(OURS + " " + hot.name())) {
            Ratio hotVs = ratio(results, hot, BUCKET4J);
            targets.add(new Target("Redis, " + hot.name(), kops(of.apply(OURS + " " + hot.name())),
                    kops(of.apply(BUCKET4J + " " + hot.name())) + " Bucket4j", hotVs.text(), "≥ 50×",
                    hotVs.median() >= 50));
        }
        if (results.containsKey(OURS + " hot key, 400 in flight")) {
            Histogram hot400 = merged(of.apply(OURS + " hot key, 400 in flight"));
            targets.add(new Target("Redis, hot key, 400 in flight: p99", String.format("%.2f ms",
                    ms(hot400.getValueAtPercentile(99))), "", "", "≤ 5 ms",
                    ms(hot400.getValueAtPercentile(99)) <= 5));
        }
        for (String one : new String[] {"1 in flight, quiet", "1 in flight, other core busy"}) {
            if (!results.containsKey(OURS + " " + one)) {
                continue;
            }
            Histogram o = merged(of.apply(OURS + " " + one));
            Histogram b = merged(of.apply(BUCKET4J + " " + one));
            for (int pct : new int[] {50, 99}) {
                double ov = ms(o.getValueAtPercentile(pct));
                double bv = ms(b.getValueAtPercentile(pct));
                targets.add(new Target("Redis, " + one + ": p" + pct + " latency", String.format("%.3f ms", ov),
                        String.format("%.3f ms Bucket4j", bv), String.format("%.2f", ov / bv), "≤ Bucket4j's",
                        ov <= bv));
            }
        }
    }

    private static String kops(List<Measured> m) {
        return String.format("%,.1f k/s", median(m, x -> x.run().opsPerSecond()) / 1e3);
    }

    // ---------------------------------------------------------------- release lateness

    static void accuracy(TargetSettings s, List<Target> targets) throws Exception {
        System.out.println();
        System.out.println("## release lateness, default settings (load average " + loadAverage() + ")");
        Accuracy.Summary local = Accuracy.run(false, 1, 10, s.accuracySeconds(), 5, 10, null);
        System.out.println();
        Accuracy.Summary redis = Accuracy.run(true, 3, 10, s.accuracySeconds(), 5, 10, null);
        lateness(targets, "local store", local, 2);
        lateness(targets, "Redis, 3 instances", redis, 3);
    }

    private static void lateness(List<Target> targets, String store, Accuracy.Summary a, double boundMillis) {
        double p99 = ms(a.p99AfterFirstSecondNanos());
        targets.add(new Target("release lateness p99 after the first second, " + store,
                String.format("%.2f ms (all: %.2f ms); early %d", p99, ms(a.p99Nanos()), a.early()), "", "",
                String.format("≤ %.0f ms, none early", boundMillis),
                a.p99AfterFirstSecondNanos() >= 0 && p99 <= boundMillis && a.early() == 0 && a.allReleased()
                        && a.failed() == 0));
    }

    // ---------------------------------------------------------------- the route step

    static void route(TargetSettings s, List<Target> targets) throws Exception {
        System.out.println();
        System.out.println("## the route step, JMH, " + s.forks() + " forks (load average " + loadAverage() + ")");
        Collection<RunResult> results = new Runner(new OptionsBuilder()
                .include(RouteOverhead.class.getName() + "\\.(bare|tokenbucket)$")
                .param("keys", "1", "1000")
                .param("perMs", "1000")
                .threads(1)
                .forks(s.forks())
                .warmupIterations(2).warmupTime(TimeValue.seconds(2))
                .measurementIterations(3).measurementTime(TimeValue.seconds(2))
                .build()).run();
        Bench.report("the route step, local store, 1 thread, exchanges/s", List.of("tokenbucket"), results);
        for (String keys : new String[] {"1", "1000"}) {
            RunResult bare = null;
            RunResult ours = null;
            for (RunResult r : results) {
                if (r.getParams().getParam("keys").equals(keys)) {
                    if (r.getParams().getBenchmark().endsWith(".bare")) {
                        bare = r;
                    } else {
                        ours = r;
                    }
                }
            }
            if (bare == null || ours == null) {
                continue;
            }
            double ratio = ours.getPrimaryResult().getScore() / bare.getPrimaryResult().getScore();
            targets.add(new Target("route step, direct -> tokenbucket -> noop, " + keys + " key(s), local",
                    String.format("%,.0f ± %,.0f /s", ours.getPrimaryResult().getScore(),
                            ours.getPrimaryResult().getScoreError()),
                    String.format("%,.0f ± %,.0f /s bare", bare.getPrimaryResult().getScore(),
                            bare.getPrimaryResult().getScoreError()),
                    String.format("%.2f", ratio), "≥ 0.8×", ratio >= 0.8));
        }
    }

    // ---------------------------------------------------------------- helpers

    private static double median(List<Measured> m, java.util.function.ToDoubleFunction<Measured> f) {
        return Figures.median(m.stream().mapToDouble(f).toArray());
    }

    private static Histogram merged(List<Measured> runs) {
        return Figures.merged(runs.stream().map(Measured::run).toList());
    }

}
