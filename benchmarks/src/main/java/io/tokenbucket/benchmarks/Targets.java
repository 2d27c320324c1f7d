package io.tokenbucket.benchmarks;

import static io.tokenbucket.benchmarks.RunCosts.loadAverage;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import io.tokenbucket.benchmarks.RunCosts.Measured;
import io.tokenbucket.benchmarks.TargetTable.Target;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * The project's performance targets, each against its peer in the same run, in one command:
 * <pre>
 * java -jar benchmarks.jar targets [--seconds 5] [--warmup 2] [--rounds 3] [--keys 1000] [--forks 3]
 *                                  [--no-route] [--no-accuracy] [--options '&amp;name=value'] [--only text]
 * </pre>
 * {@code --options} appends endpoint options to ours in the Redis runs (say {@code &redisBatching=true});
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
 *
 * <p>Its parts: the options, {@link TargetSettings}; the Redis runs, {@link TargetsRedis}, with the peers in
 * {@link RedisPeers}, the costs of a run in {@link RunCosts} and its lines and table in {@link TargetsReport}; the
 * stamps, {@link WhereTheTimeGoes}; the final table, {@link TargetTable}.
 */
public final class Targets {

    private Targets() {
    }

    public static void main(String[] args) throws Exception {
        run(TargetSettings.parse(args));
    }

    /** Runs every measurement and answers the Redis runs by {@code "<peer> <case>"} (the smoke test reads them). */
    static Map<String, List<Measured>> run(TargetSettings s) throws Exception {
        System.out.printf("targets, %s; JVM %s %s; %d cores; load average %s; %d keys; %s s measured after"
                + " %s s warm-up, %d rounds%n", Instant.now(), System.getProperty("java.vm.name"),
                System.getProperty("java.vm.version"), Runtime.getRuntime().availableProcessors(), loadAverage(),
                s.keys(), s.seconds(), s.warmup(), s.rounds());
        List<Target> targets = new ArrayList<>();
        Map<String, List<Measured>> redis = TargetsRedis.run(s, targets);
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
        TargetTable.print(targets);
        return redis;
    }

    // ---------------------------------------------------------------- release lateness

    /** Release lateness ({@link Accuracy}) at default settings, {@code accuracySeconds} s: local, then Redis. */
    static void accuracy(TargetSettings s, List<Target> targets) throws Exception {
        System.out.println();
        System.out.println("## release lateness, default settings (load average " + loadAverage() + ")");
        Accuracy.Summary local = Accuracy.run(false, 1, 10, s.accuracySeconds(), 5, 10, null);
        System.out.println();
        Accuracy.Summary redis = Accuracy.run(true, 3, 10, s.accuracySeconds(), 5, 10, null);
        TargetTable.lateness(targets, "local store", local, 2);
        TargetTable.lateness(targets, "Redis, 3 instances", redis, 3);
    }

    // ---------------------------------------------------------------- the route step

    /** The route step in JMH ({@link RouteOverhead}, bare and tokenbucket, 1 and 1,000 keys), {@code forks} forks. */
    static void route(TargetSettings s, List<Target> targets) throws Exception {
        System.out.println();
        System.out.println("## the route step, JMH, " + s.forks() + " forks (load average " + loadAverage() + ")");
        Collection<RunResult> results = new Runner(new OptionsBuilder()
                .include(RouteOverhead.class.getName() + "\\.(noopStep|tokenbucket)$")
                .param("keys", "1", "1000")
                .param("perMs", "1000")
                .threads(1)
                .forks(s.forks())
                .warmupIterations(2).warmupTime(TimeValue.seconds(2))
                .measurementIterations(3).measurementTime(TimeValue.seconds(2))
                .build()).run();
        JmhTable.report("the route step, local store, 1 thread, exchanges/s", List.of("tokenbucket"), results);
        TargetTable.routeStep(results, targets);
    }
}
