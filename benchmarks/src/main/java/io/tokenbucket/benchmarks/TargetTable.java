package io.tokenbucket.benchmarks;

import static io.tokenbucket.benchmarks.Figures.ms;
import static io.tokenbucket.benchmarks.RedisPeers.BUCKET4J;
import static io.tokenbucket.benchmarks.RedisPeers.GCRA_P16;
import static io.tokenbucket.benchmarks.RedisPeers.OURS;
import static io.tokenbucket.benchmarks.RedisPeers.OURS_SYNC;
import static io.tokenbucket.benchmarks.RunCosts.loadAverage;
import static io.tokenbucket.benchmarks.TargetsReport.kops;
import static io.tokenbucket.benchmarks.TargetsReport.median;
import static io.tokenbucket.benchmarks.TargetsReport.merged;
import static io.tokenbucket.benchmarks.TargetsReport.ratio;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import io.tokenbucket.benchmarks.Figures.Ratio;
import io.tokenbucket.benchmarks.RunCosts.Measured;
import org.HdrHistogram.Histogram;
import org.openjdk.jmh.results.RunResult;

/**
 * The targets table, printed last by {@link Targets}: each target, ours, the peer, the ratio (median of the
 * rounds with its range), what is wanted, met or missed; made from the Redis runs, the release lateness and the
 * route step.
 */
final class TargetTable {

    private TargetTable() {
    }

    /**
     * One line of the table: what is measured, ours and the peer's figures as printed, the ratio, what is wanted and
     * whether it was met.
     */
    record Target(String what, String ours, String peer, String ratio, String target, boolean met) {
    }

    /** Prints the table, a line per target, after everything else. */
    static void print(List<Target> targets) {
        System.out.println();
        System.out.println("## the targets (load average at the end " + loadAverage() + ")");
        System.out.println("| target | ours | peer | ours ÷ peer (rounds) | wanted | result |");
        System.out.println("|---|---:|---:|---:|---|---|");
        for (Target t : targets) {
            System.out.printf("| %s | %s | %s | %s | %s | %s |%n", t.what(), t.ours(), t.peer(), t.ratio(), t.target(),
                    t.met() ? "met" : "**missed**");
        }
    }

    /** The Redis targets: from the runs by {@code "<peer> <case>"} and redis-benchmark's ops/s by round (or null). */
    static void redis(Map<String, List<Measured>> results, List<Double> redisBenchmark,
                                     List<Target> targets) {
        TargetCase random16 = new TargetCase("random keys, 16 in flight", 16, false, false, List.of());
        TargetCase random = new TargetCase("random keys, 64 in flight", 64, false, false, List.of());
        TargetCase hot = new TargetCase("hot key, 64 in flight", 64, true, false, List.of());
        Function<String, List<Measured>> of = results::get;
        if (results.containsKey(OURS + " " + random16.name())) {
            Ratio vs = ratio(results, random16, BUCKET4J);
            targets.add(new Target("Redis, " + random16.name() + ", through a route",
                    kops(of.apply(OURS + " " + random16.name())), kops(of.apply(BUCKET4J + " " + random16.name()))
                    + " Bucket4j", vs.text(), "≥ 1.5×", vs.median() >= 1.5));
        }
        if (results.containsKey(OURS + " " + random.name())) {
            Ratio vsBucket4j = ratio(results, random, BUCKET4J);
            Ratio vsGcra = ratio(results, random, GCRA_P16);
            List<Measured> ours = of.apply(OURS + " " + random.name());
            List<Measured> bucket4j = of.apply(BUCKET4J + " " + random.name());
            targets.add(new Target("Redis, " + random.name() + ", through a route", kops(ours), kops(bucket4j)
                    + " Bucket4j", vsBucket4j.text(), "≥ 2×", vsBucket4j.median() >= 2));
            targets.add(new Target("the same against one GCRA script call per decision, pipelined 16",
                    kops(ours), kops(of.apply(GCRA_P16 + " " + random.name())) + " gcra-P16", vsGcra.text(),
                    "≥ 1×", vsGcra.median() >= 1));
            if (redisBenchmark != null) {
                Ratio vsC = Ratio.of(Figures.byRound(TargetsReport.opsPerSecond(ours),
                        redisBenchmark.stream().mapToDouble(Double::doubleValue).toArray()));
                targets.add(new Target("the same against redis-benchmark -c 4 -P 16 running that GCRA script",
                        kops(ours), String.format("%,.1f k/s redis-benchmark", Figures.median(
                        redisBenchmark.stream().mapToDouble(Double::doubleValue).toArray()) / 1e3), vsC.text(),
                        "≥ 1×", vsC.median() >= 1));
            }
            // 7.9 µs per acquire in the run before the hand-off was batched: at most 0.6 times that
            double client = median(ours, Measured::clientCpuMicros);
            targets.add(new Target("client CPU µs per acquire, " + random.name(), String.format("%.1f µs", client),
                    String.format("%.1f µs Bucket4j", median(bucket4j, Measured::clientCpuMicros)), "",
                    "≤ 4.7 µs", client <= 4.7));
            // Redis's own time per decision against Bucket4j's in the same round (absolute µs move with the load)
            List<Measured> oursRandom = ours;
            List<Measured> bucket4jRandom = bucket4j;
            Ratio usecVsBucket4j = Ratio.of(Figures.byRound(
                    oursRandom.stream().mapToDouble(Measured::commandstatsMicros).toArray(),
                    bucket4jRandom.stream().mapToDouble(Measured::commandstatsMicros).toArray()));
            targets.add(new Target("Redis commandstats µs per reservation, random keys",
                    String.format("%.2f µs (process %.1f)", median(oursRandom, Measured::commandstatsMicros),
                            median(oursRandom, Measured::redisCpuMicros)),
                    String.format("%.2f µs Bucket4j (process %.1f), %.2f µs gcra-P16",
                            median(bucket4jRandom, Measured::commandstatsMicros),
                            median(bucket4jRandom, Measured::redisCpuMicros),
                            median(of.apply(GCRA_P16 + " " + random.name()), Measured::commandstatsMicros)),
                    usecVsBucket4j.text(), "≤ 1× Bucket4j", usecVsBucket4j.median() <= 1));
        }
        if (results.containsKey(OURS + " " + hot.name())) {
            Ratio hotVs = ratio(results, hot, BUCKET4J);
            targets.add(new Target("Redis, " + hot.name(), kops(of.apply(OURS + " " + hot.name())),
                    kops(of.apply(BUCKET4J + " " + hot.name())) + " Bucket4j", hotVs.text(), "≥ 100×",
                    hotVs.median() >= 100));
        }
        if (results.containsKey(OURS + " hot key, 400 in flight")) {
            Histogram hot400 = merged(of.apply(OURS + " hot key, 400 in flight"));
            targets.add(new Target("Redis, hot key, 400 in flight: p99", String.format("%.2f ms",
                    ms(hot400.getValueAtPercentile(99))), "", "", "≤ 5 ms",
                    ms(hot400.getValueAtPercentile(99)) <= 5));
        }
        for (String one : new String[] {"1 in flight, quiet", "1 in flight, other core busy"}) {
            if (!results.containsKey(OURS_SYNC + " " + one)) {
                continue;
            }
            Histogram o = merged(of.apply(OURS_SYNC + " " + one));
            Histogram b = merged(of.apply(BUCKET4J + " " + one));
            for (int pct : new int[] {50, 99}) {
                double ov = ms(o.getValueAtPercentile(pct));
                double bv = ms(b.getValueAtPercentile(pct));
                targets.add(new Target("Redis, " + one + ", synchronous=true: p" + pct + " latency",
                        String.format("%.3f ms", ov), String.format("%.3f ms Bucket4j", bv),
                        String.format("%.2f", ov / bv), "≤ Bucket4j's", ov <= bv));
            }
        }
    }

    /** A release-lateness target: p99 after the first second within {@code boundMillis} ms and none early. */
    static void lateness(List<Target> targets, String store, Accuracy.Summary a, double boundMillis) {
        double p99 = ms(a.p99AfterFirstSecondNanos());
        targets.add(new Target("release lateness p99 after the first second, " + store,
                String.format("%.2f ms (all: %.2f ms); early %d", p99, ms(a.p99Nanos()), a.early()), "", "",
                String.format("≤ %.0f ms, none early", boundMillis),
                a.p99AfterFirstSecondNanos() >= 0 && p99 <= boundMillis && a.early() == 0 && a.allReleased()
                        && a.failed() == 0));
    }

    /**
     * The route step's targets: ours ≥ 0.9 × the same route with a no-op {@code to()} step in its place, with 1 and
     * 1,000 keys, from the JMH results.
     */
    static void routeStep(Collection<RunResult> results, List<Target> targets) {
    for (String keys : new String[] {"1", "1000"}) {
        RunResult bare = null;
        RunResult ours = null;
        for (RunResult r : results) {
            if (r.getParams().getParam("keys").equals(keys)) {
                if (r.getParams().getBenchmark().endsWith(".noopStep")) {
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
                String.format("%,.0f ± %,.0f /s no-op to()", bare.getPrimaryResult().getScore(),
                        bare.getPrimaryResult().getScoreError()),
                String.format("%.2f", ratio), "≥ 0.9×", ratio >= 0.9));
    }
    }
}
