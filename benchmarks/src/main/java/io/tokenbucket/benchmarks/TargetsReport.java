package io.tokenbucket.benchmarks;

import static io.tokenbucket.benchmarks.Figures.ms;
import static io.tokenbucket.benchmarks.RedisPeers.OURS;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;

import io.tokenbucket.benchmarks.ClosedLoop.Run;
import io.tokenbucket.benchmarks.Figures.Ratio;
import io.tokenbucket.benchmarks.RunCosts.Measured;
import org.HdrHistogram.Histogram;

/**
 * What {@link Targets} prints of its Redis runs: two lines per run (acquires per second, latency in ms, outcomes;
 * costs per acquire in µs and bytes), then the table of every case and peer (medians of the rounds, ratios taken
 * within a round, latency over all rounds); and the figures over the rounds the targets table is made of.
 */
final class TargetsReport {

    private TargetsReport() {
    }

    /** One run's two lines: throughput, latency (ms), outcomes; then its costs per acquire (µs, bytes). */
    static void print(int round, String peer, TargetCase c, Measured m) {
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

    /** The Redis table: each case and peer, median of the rounds, and redis-benchmark's runs. */
    static void summary(List<TargetCase> cases, Map<String, List<Measured>> results,
                                Map<String, List<Double>> redisBenchmark) {
        System.out.println();
        System.out.println("## Redis: median of the rounds (ratios: ours ÷ peer within each round, median and range);"
                + " latency over all rounds; costs per acquire, median of the rounds");
        System.out.println("| case | peer | ops/s | p50 / p99 ms | ours ÷ peer | client CPU µs | Redis CPU µs"
                + " | Redis commandstats µs | allocated B | acquires per script call |");
        System.out.println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (TargetCase c : cases) {
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

    /** Ours ÷ {@code peer}'s throughput on case {@code c}, round by round. */
    static Ratio ratio(Map<String, List<Measured>> results, TargetCase c, String peer) {
        List<Measured> o = results.get(OURS + " " + c.name());
        List<Measured> p = results.get(peer + " " + c.name());
        return Ratio.of(Figures.byRound(opsPerSecond(o), opsPerSecond(p)));
    }

    /** The median throughput of the rounds in thousands of acquires per second. */
    static String kops(List<Measured> m) {
        return String.format("%,.1f k/s", median(m, x -> x.run().opsPerSecond()) / 1e3);
    }

    /** The median over the rounds of one figure of each run. */
    static double median(List<Measured> m, ToDoubleFunction<Measured> f) {
        return Figures.median(m.stream().mapToDouble(f).toArray());
    }

    /** Each round's acquires per second. */
    static double[] opsPerSecond(List<Measured> m) {
        return Figures.opsPerSecond(m.stream().map(Measured::run).toList());
    }

    /** The latency (ns) of every round, in one histogram. */
    static Histogram merged(List<Measured> runs) {
        return Figures.merged(runs.stream().map(Measured::run).toList());
    }
}
