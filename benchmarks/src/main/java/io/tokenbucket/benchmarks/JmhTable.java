package io.tokenbucket.benchmarks;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.openjdk.jmh.results.RunResult;

/** The tables of a JMH run's results, with our benchmarks' ratios to each peer of the same run. */
final class JmhTable {

    private JmhTable() {
    }

    /**
     * Prints one table per parameter set: each benchmark's score and error, and each of ours divided by it, all
     * from the same run.
     *
     * @param ours the benchmarks whose ratios to every other one are printed, one column each
     */
    static List<String> report(String title, List<String> ours, Collection<RunResult> results) {
        Map<String, Map<String, RunResult>> byParams = new LinkedHashMap<>();
        for (RunResult r : results) {
            var p = r.getParams();
            String params = p.getParamsKeys().stream().map(k -> k + "=" + p.getParam(k)).reduce((x, y) -> x + " " + y)
                    .orElse("");
            String name = p.getBenchmark().substring(p.getBenchmark().lastIndexOf('.') + 1);
            byParams.computeIfAbsent(params, k -> new LinkedHashMap<>()).put(name, r);
        }
        List<String> lines = new ArrayList<>();
        lines.add("");
        lines.add("## " + title);
        for (var e : byParams.entrySet()) {
            RunResult any = e.getValue().values().iterator().next();
            lines.add("");
            lines.add("### " + e.getKey() + ", threads=" + any.getParams().getThreads());
            lines.add("| benchmark | score | ± error (99.9%) | " + String.join(" | ", ours.stream()
                    .map(o -> o + " / this").toList()) + " |");
            lines.add("|---|---:|---:|" + "---:|".repeat(ours.size()));
            for (var r : e.getValue().entrySet()) {
                var s = r.getValue().getPrimaryResult();
                StringBuilder ratios = new StringBuilder();
                for (String o : ours) {
                    RunResult mine = e.getValue().get(o);
                    ratios.append(mine == null ? " n/a |"
                            : String.format(" %.2f |", mine.getPrimaryResult().getScore() / s.getScore()));
                }
                lines.add(String.format("| %s | %,.0f | %,.0f |%s", r.getKey(), s.getScore(), s.getScoreError(),
                        ratios));
            }
        }
        lines.forEach(System.out::println);
        return lines;
    }
}
