package io.tokenbucket.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Collection;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Not a benchmark: checks in seconds that each harness runs (one short iteration, in this JVM) and that the
 * limits the benchmarks use never bind, so that they measure bookkeeping, not refusals.
 */
class BenchSmokeTest {

    @Test
    void localLimitsNeverBind() {
        for (String impl : new String[] {"ours", "oursLocked", "bucket4j", "guava", "resilience4j", "atomicCas"}) {
            LocalAcquire bench = new LocalAcquire();
            bench.keys = 1;
            bench.setup(impl);
            LocalAcquire.Cursor cursor = new LocalAcquire.Cursor();
            cursor.start(bench);
            for (int i = 0; i < 300_000; i++) {
                boolean granted = switch (impl) {
                    case "ours" -> bench.ours(cursor).granted();
                    case "oursLocked" -> bench.oursLocked(cursor).granted();
                    case "bucket4j" -> bench.bucket4j(cursor);
                    case "guava" -> bench.guava(cursor);
                    case "resilience4j" -> bench.resilience4j(cursor);
                    default -> bench.atomicCas(cursor);
                };
                assertThat(granted).as("%s, call %d", impl, i).isTrue();
            }
        }
    }

    @Test
    void localHarnessRuns() throws Exception {
        assertThat(oneIteration(LocalAcquire.class, "1")).hasSize(6); // ours, oursLocked and four peers
    }

    @Test
    void routeHarnessRuns() throws Exception {
        assertThat(oneIteration(RouteOverhead.class, "1")).hasSize(5);
    }

    @Test
    void memoryDriverRuns() throws Exception {
        MemoryPerKey.main(new String[] {"20000"});
    }

    @Test
    void inFlightDriverRuns() throws Exception {
        InFlight.main(new String[] {"0.2", "2"});
    }

    @Test
    void waitingDriverRuns() throws Exception {
        WaitingWithoutThreads.main(new String[] {"200", "20", "tokenbucket,throttleBlocking"}); // one of each kind
    }

    @Test
    void accuracyDriverRuns() throws Exception {
        Accuracy.Summary s = Accuracy.run(false, 1, 2, 1, 5, 10, null);
        assertThat(s.allReleased()).isTrue();
        assertThat(s.failed()).isZero();
        assertThat(s.minErrorNanos()).as("never released before its slot").isNotNegative();
        // a release late by a stall of this shared machine may share a window with the next ones
        assertThat(s.maxSliding()).isLessThanOrEqualTo((int) s.lateBound());
    }

    /** Starts its own redis-server (the one embedded-redis ships, unless one is on the PATH): 3 instances. */
    @Test
    void accuracyDriverRunsOnRedis() throws Exception {
        Accuracy.Summary s = Accuracy.run(true, 3, 2, 1, 5, 10, null);
        assertThat(s.allReleased()).isTrue();
        assertThat(s.failed()).isZero();
        assertThat(s.minErrorNanos()).as("never released before its slot").isNotNegative();
        assertThat(s.maxSliding()).isLessThanOrEqualTo((int) s.lateBound());
    }

    /**
     * Starts its own redis-server; runs redis-benchmark too when it is on the PATH (it is optional). Checks that
     * our store and Bucket4j-Lettuce complete acquires without errors, and that the never-binding limit grants all.
     */
    @Test
    void redisDriverRuns() throws Exception {
        var results = RedisAcquire.run(new String[] {"0.3", "0.1", "1", "100", "1,hot8"});
        for (String peer : new String[] {"ours", "ours-unbatched", "bucket4j", "bare-evalsha"}) {
            ClosedLoop.Run free = results.get(peer + " 1").get(0);
            assertThat(free.granted()).as(peer).isPositive();
            assertThat(free.rejected() + free.timeouts() + free.otherErrors()).as(peer).isZero();
            ClosedLoop.Run hot = results.get(peer + " hot8").get(0);
            assertThat(hot.granted()).as(peer).isPositive();
            assertThat(hot.timeouts() + hot.otherErrors()).as(peer).isZero();
        }
    }

    /**
     * The Redis targets, 0.3 s per run (the release lateness and the route step are the
     * harnesses checked above): every peer completes acquires without errors, and the never-binding limit grants all.
     */
    @Test
    void targetsDriverRuns() throws Exception {
        var results = Targets.run(new TargetSettings(0.2, 0.1, 1, 100, 0, false, false, 1, "", ""));
        assertThat(results).containsKeys("ours random keys, 64 in flight", "bucket4j random keys, 64 in flight",
                "gcra-P16 random keys, 64 in flight", "ours hot key, 400 in flight", "bucket4j 1 in flight, quiet");
        results.forEach((name, runs) -> {
            ClosedLoop.Run r = runs.get(0).run();
            assertThat(r.granted()).as(name).isPositive();
            assertThat(r.timeouts() + r.otherErrors()).as(name).isZero();
            if (!name.contains("hot")) {
                assertThat(r.rejected()).as(name).isZero();
            }
        });
    }

    private static Collection<RunResult> oneIteration(Class<?> type, String keys) throws Exception {
        var options = new OptionsBuilder()
                .include(type.getName() + "\\.")
                .param("keys", keys);
        if (type == RouteOverhead.class) {
            options.param("perMs", "1000");
        }
        Collection<RunResult> results = new Runner(options
                .forks(0)
                .warmupIterations(0)
                .measurementIterations(1)
                .measurementTime(TimeValue.milliseconds(200))
                .build()).run();
        for (RunResult r : results) {
            assertThat(r.getPrimaryResult().getScore()).as(r.getParams().getBenchmark()).isPositive();
        }
        JmhTable.report("smoke: " + type.getSimpleName(), List.of(type == LocalAcquire.class ? "ours" : "tokenbucket"),
                results);
        return results;
    }
}
