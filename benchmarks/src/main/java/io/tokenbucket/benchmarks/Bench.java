package io.tokenbucket.benchmarks;

import java.util.Arrays;
import java.util.Collection;
import java.util.List;

import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * The entry point of {@code benchmarks.jar}:
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar local  [JMH options]   measurement 1, 1 and 2 threads, with ratios
 * java -jar benchmarks/target/benchmarks.jar route  [JMH options]   measurement 3, 1 and 2 threads, with ratios
 * java -jar benchmarks/target/benchmarks.jar route-cpu [keys rounds exchanges threads]   measurement 3 in CPU time
 * java -XX:+UseSerialGC -Xmx3g -jar benchmarks/target/benchmarks.jar memory [keys]   measurement 5
 * java -XX:+UseSerialGC -jar benchmarks/target/benchmarks.jar waiting [exchanges] [blocking senders]   measurement 4
 * java -jar benchmarks/target/benchmarks.jar accuracy [--store local|redis] [--instances n] [keys seconds capacity periodMillis png]   measurement 6
 * java -jar benchmarks/target/benchmarks.jar redis [seconds warmup rounds keys cases]   measurement 2
 * java -jar benchmarks/target/benchmarks.jar targets [--seconds s] [--rounds n] [...]   the targets, every peer
 * java -jar benchmarks/target/benchmarks.jar inflight [seconds] [threads] [--no-redis]   in-flight limits
 * java -jar benchmarks/target/benchmarks.jar jmh    [JMH options]   plain JMH (org.openjdk.jmh.Main)
 * </pre>
 * The JMH options given override the short defaults ({@code -f 1 -wi 2 -w 2s -i 3 -r 2s}); {@code -t} is ignored
 * by {@code local} and {@code route}, which run 1 and 2 threads.
 */
public final class Bench {

    private Bench() {
    }

    public static void main(String[] args) throws Exception {
        String what = args.length > 0 ? args[0] : "help";
        String[] rest = args.length > 0 ? Arrays.copyOfRange(args, 1, args.length) : new String[0];
        switch (what) {
            case "local" -> {
                for (int threads : new int[] {1, 2}) {
                    JmhTable.report("measurement 1: local acquire, " + threads + " thread(s), ops/s", List.of("ours"),
                            run(LocalAcquire.class, threads, rest));
                }
            }
            case "route" -> {
                for (int threads : new int[] {1, 2}) {
                    JmhTable.report("measurement 3: route overhead, " + threads + " thread(s), exchanges/s",
                            List.of("tokenbucket"), run(RouteOverhead.class, threads, rest));
                }
            }
            case "route-cpu" -> RouteCpu.main(rest);
            case "memory" -> MemoryPerKey.main(rest);
            case "waiting" -> WaitingWithoutThreads.main(rest);
            case "accuracy" -> Accuracy.main(rest);
            case "redis" -> RedisAcquire.main(rest);
            case "targets" -> Targets.main(rest);
            case "inflight" -> InFlight.main(rest);
            case "jmh" -> org.openjdk.jmh.Main.main(rest);
            default -> System.out.println("usage: java -jar benchmarks.jar local|route|route-cpu [...]|memory [keys]|waiting [n] [senders]|accuracy [...]|redis [...]|targets [...]|inflight [...]|jmh [JMH options]");
        }
    }

    /** Runs every benchmark of {@code type} with {@code threads} threads and the short defaults. */
    static Collection<RunResult> run(Class<?> type, int threads, String[] jmhArgs) throws Exception {
        CommandLineOptions cli = new CommandLineOptions(jmhArgs);
        ChainedOptionsBuilder b = new OptionsBuilder().parent(cli)
                .include(type.getName() + "\\.")
                .threads(threads);
        if (!cli.getForkCount().hasValue()) {
            b.forks(1);
        }
        if (!cli.getWarmupIterations().hasValue()) {
            b.warmupIterations(2);
        }
        if (!cli.getWarmupTime().hasValue()) {
            b.warmupTime(TimeValue.seconds(2));
        }
        if (!cli.getMeasurementIterations().hasValue()) {
            b.measurementIterations(3);
        }
        if (!cli.getMeasurementTime().hasValue()) {
            b.measurementTime(TimeValue.seconds(2));
        }
        return new Runner(b.build()).run();
    }
}
