package io.tokenbucket.benchmarks;

import static io.tokenbucket.benchmarks.Figures.byRound;
import static io.tokenbucket.benchmarks.Figures.median;
import static io.tokenbucket.benchmarks.Figures.merged;
import static io.tokenbucket.benchmarks.Figures.ms;
import static io.tokenbucket.benchmarks.Figures.opsPerSecond;
import static io.tokenbucket.benchmarks.Figures.range;

import java.util.List;
import java.util.Map;

import io.tokenbucket.benchmarks.ClosedLoop.Case;
import io.tokenbucket.benchmarks.ClosedLoop.Run;
import io.tokenbucket.benchmarks.RedisBenchmark.Ceiling;
import org.HdrHistogram.Histogram;

/**
 * What {@link RedisAcquire} prints: a line per run (acquires per second, latency in ms, outcomes counted), then
 * the tables over the rounds (medians of the rounds; every ratio taken within a round, then its median and range;
 * latency over all rounds).
 */
final class RedisAcquireReport {

    private RedisAcquireReport() {
    }

    /** One run's line: throughput, latency (ms), outcomes, the oldest acquire unanswered at the end. */
    static void print(int round, String peer, Case c, Run r) {
        System.out.printf("round %d  %-9s %-7s %,12.0f ops/s  p50 %7.3f ms  p99 %7.3f ms  max %8.3f ms  oldest"
                + " unanswered at the end %8.3f ms  granted %,d  rejected %,d  timeouts %,d  errors %,d%s%s%n", round,
                peer, c.name(), r.opsPerSecond(), ms(r.latency().getValueAtPercentile(50)),
                ms(r.latency().getValueAtPercentile(99)), ms(r.latency().getMaxValue()),
                ms(r.oldestOutstandingNanos()), r.granted(), r.rejected(), r.timeouts(), r.otherErrors(),
                r.firstError() == null ? "" : "  first error: " + r.firstError(),
                r.stuck() == 0 ? "" : "  still in flight after 10 s: " + r.stuck());
    }

    /**
     * The tables after the rounds: ours against Bucket4j and redis-benchmark, batched against unbatched, ours against
     * bare-evalsha; then each redis-benchmark run's figures.
     */
    static void summary(List<Case> cases, Map<String, List<Run>> results,
                                Map<String, List<Ceiling>> ceilings) {
        List<Ceiling> ceilingFree = ceilings.get("redis-benchmark -c 4 -P 16");
        List<Ceiling> ceilingHot = ceilings.get("redis-benchmark -c 25 -P 16 hot");
        System.out.println();
        System.out.println("## measurement 2: acquires/s (median of the rounds; every ratio is taken within a round,"
                + " then the median); latency over all rounds");
        System.out.println("| case | ours ops/s | ours p50 / p99 ms | bucket4j ops/s | bucket4j p50 / p99 ms"
                + " | ours ÷ bucket4j | redis-benchmark -P 16 ops/s | ours ÷ redis-benchmark | ours admitted / rejected"
                + " | bucket4j admitted / rejected | ours / bucket4j timeouts+errors"
                + " | ours / bucket4j oldest unanswered at the end (ms, worst round) |");
        System.out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (Case c : cases) {
            List<Run> o = results.get("ours " + c.name());
            List<Run> b = results.get("bucket4j " + c.name());
            List<Ceiling> ceiling = c.hot() ? ceilingHot : ceilingFree;
            double[] vsB = byRound(opsPerSecond(o), opsPerSecond(b));
            double[] vsC = ceiling == null ? null
                    : byRound(opsPerSecond(o), ceiling.stream().mapToDouble(Ceiling::opsPerSecond).toArray());
            Histogram ho = merged(o);
            Histogram hb = merged(b);
            System.out.printf("| %s | %,.0f | %.3f / %.3f | %,.0f | %.3f / %.3f | **%.2f** (%s) | %s | %s | %s | %s"
                    + " | %d / %d | %.1f / %.1f |%n",
                    c.hot() ? "hot key, " + c.inFlight() + " in flight" : c.inFlight() + " in flight",
                    median(opsPerSecond(o)),
                    ms(ho.getValueAtPercentile(50)), ms(ho.getValueAtPercentile(99)),
                    median(opsPerSecond(b)),
                    ms(hb.getValueAtPercentile(50)), ms(hb.getValueAtPercentile(99)),
                    median(vsB), range(vsB),
                    ceiling == null ? "skipped" : String.format("%,.0f",
                            median(ceiling.stream().mapToDouble(Ceiling::opsPerSecond).toArray())),
                    ceiling == null ? "n/a" : String.format("%.2f (%s)", median(vsC), range(vsC)),
                    admitted(o), admitted(b),
                    o.stream().mapToLong(r -> r.timeouts() + r.otherErrors()).sum(),
                    b.stream().mapToLong(r -> r.timeouts() + r.otherErrors()).sum(),
                    ms(o.stream().mapToLong(Run::oldestOutstandingNanos).max().orElse(0)),
                    ms(b.stream().mapToLong(Run::oldestOutstandingNanos).max().orElse(0)));
        }
        System.out.println();
        System.out.println("batching: ours (redisBatching=true) vs ours-unbatched (false); Redis time per acquire"
                + " is in each run's 'server side' line");
        System.out.println("| case | ours ops/s | ours p99 ms | unbatched ops/s | unbatched p99 ms | ours ÷ unbatched |");
        System.out.println("|---|---:|---:|---:|---:|---:|");
        for (Case c : cases) {
            List<Run> o = results.get("ours " + c.name());
            List<Run> u = results.get("ours-unbatched " + c.name());
            double[] ratio = byRound(opsPerSecond(o), opsPerSecond(u));
            System.out.printf("| %s | %,.0f | %.3f | %,.0f | %.3f | **%.2f** (%s) |%n", c.name(),
                    median(opsPerSecond(o)), ms(merged(o).getValueAtPercentile(99)), median(opsPerSecond(u)),
                    ms(merged(u).getValueAtPercentile(99)), median(ratio), range(ratio));
        }
        System.out.println();
        System.out.println("diagnosis: ours vs the same EVALSHA sent bare through Lettuce (bare-evalsha)");
        System.out.println("| case | ours ops/s | bare-evalsha ops/s | ours ÷ bare | bare p50 / p99 ms |");
        System.out.println("|---|---:|---:|---:|---:|");
        for (Case c : cases) {
            List<Run> o = results.get("ours " + c.name());
            List<Run> b = results.get("bare-evalsha " + c.name());
            double[] ratio = byRound(opsPerSecond(o), opsPerSecond(b));
            Histogram hb = merged(b);
            System.out.printf("| %s | %,.0f | %,.0f | %.2f (%s) | %.3f / %.3f |%n", c.name(),
                    median(opsPerSecond(o)), median(opsPerSecond(b)), median(ratio), range(ratio),
                    ms(hb.getValueAtPercentile(50)), ms(hb.getValueAtPercentile(99)));
        }
        System.out.println();
        for (var e : ceilings.entrySet()) {
            System.out.printf("%s: median %,.0f ops/s, rounds %s; p50 ms %s; p99 ms %s%n", e.getKey(),
                    median(e.getValue().stream().mapToDouble(Ceiling::opsPerSecond).toArray()),
                    e.getValue().stream().map(r -> String.format("%,.0f", r.opsPerSecond())).toList(),
                    e.getValue().stream().map(Ceiling::p50Ms).toList(),
                    e.getValue().stream().map(Ceiling::p99Ms).toList());
        }
    }

    private static String admitted(List<Run> runs) {
        long g = runs.stream().mapToLong(Run::granted).sum();
        long r = runs.stream().mapToLong(Run::rejected).sum();
        return String.format("%.1f %% / %.1f %%", 100.0 * g / Math.max(1, g + r), 100.0 * r / Math.max(1, g + r));
    }
}
