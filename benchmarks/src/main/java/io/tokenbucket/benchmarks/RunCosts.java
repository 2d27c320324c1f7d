package io.tokenbucket.benchmarks;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import io.lettuce.core.api.sync.RedisCommands;
import io.tokenbucket.benchmarks.ClosedLoop.Run;
import io.tokenbucket.testsupport.redis.RedisHandle;

/**
 * What one run of the targets' Redis cases costs on each side, read around its measured seconds: this JVM's CPU
 * time, Redis's CPU time ({@code /proc}), Redis's {@code INFO commandstats}, the bytes this JVM allocated; and the
 * conditions of a run: the load average, a busy-loop thread taking a core ({@link Busy}).
 */
final class RunCosts {

    private RunCosts() {
    }

    /**
     * One measured run of one peer on one case, with what it cost on each side, per acquire: this JVM's CPU (µs, less
     * the busy thread's), Redis's CPU (µs), Redis's {@code INFO commandstats} time of the commands sent (µs), the bytes
     * this JVM allocated; Redis's commandstats per acquire as text; acquires per script call.
     */
    record Measured(Run run, double clientCpuMicros, double redisCpuMicros, double commandstatsMicros,
                    double allocatedBytes, String commandstats, double perScriptCall) {
    }

    /** The counters read at the start and the end of the measured seconds of the run under way. */
    static final Counters COUNTERS = new Counters();

    /** CPU, allocation and Redis counters around the measured seconds of one run. */
    static final class Counters {
        volatile RedisHandle redis;
        volatile RedisCommands<String, String> admin;
        volatile Busy busy;
        long cpu0;
        long cpu1;
        long redis0;
        long redis1;
        long alloc0;
        long alloc1;
        String commandstats;

        synchronized void start() {
            admin.configResetstat();
            cpu0 = clientCpuNanos();
            redis0 = redisCpuNanos(redis);
            alloc0 = allocatedBytes();
        }

        synchronized void end() {
            cpu1 = clientCpuNanos();
            redis1 = redisCpuNanos(redis);
            alloc1 = allocatedBytes();
            commandstats = admin.info("commandstats");
        }

        private long clientCpuNanos() {
            long process = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                    .getProcessCpuTime();
            return process - (busy == null ? 0 : busy.cpuNanos());
        }
    }

    /** One run to measure. */
    interface Driver {
        Run drive() throws Exception;
    }

    /** Runs {@code driver} with the counters read around its measured seconds, then divides them by its acquires. */
    static Measured measure(RedisHandle redis, RedisCommands<String, String> admin, Busy busy, Driver driver)
            throws Exception {
        COUNTERS.redis = redis;
        COUNTERS.admin = admin;
        COUNTERS.busy = busy;
        Run r = driver.drive();
        long acquires = Math.max(1, r.granted() + r.rejected() + r.timeouts() + r.otherErrors());
        return new Measured(r, (COUNTERS.cpu1 - COUNTERS.cpu0) / 1e3 / acquires,
                (COUNTERS.redis1 - COUNTERS.redis0) / 1e3 / acquires, Commandstats.topLevelMicros(COUNTERS.commandstats) / acquires,
                (double) (COUNTERS.alloc1 - COUNTERS.alloc0) / acquires,
                Commandstats.perAcquire(COUNTERS.commandstats, r),
                (double) acquires / Math.max(1, Commandstats.stat(COUNTERS.commandstats, "eval")[0]
                        + Commandstats.stat(COUNTERS.commandstats, "evalsha")[0]));
    }

    /** Redis's user + system CPU time, from {@code /proc/<pid>/stat} (Linux; 0 elsewhere). */
    static long redisCpuNanos(RedisHandle redis) {
        try {
            String stat = Files.readString(Path.of("/proc/" + redis.pid() + "/stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            // fields 14 and 15 of stat (utime, stime), in clock ticks of 10 ms (USER_HZ 100 on Linux)
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    /** Bytes allocated so far by the live threads of this JVM. */
    static long allocatedBytes() {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        return Arrays.stream(threads.getThreadAllocatedBytes(threads.getAllThreadIds())).filter(b -> b > 0).sum();
    }

    /** {@code /proc/loadavg} as it reads ({@code "n/a"} elsewhere). */
    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).strip();
        } catch (IOException e) {
            return "n/a";
        }
    }

    /** A thread that spins for as long as it is open: a core taken from everyone else. */
    static final class Busy implements AutoCloseable {
        private volatile boolean stop;
        private final Thread thread;
        static volatile long sink;

        Busy() {
            thread = new Thread(() -> {
                long x = 0;
                while (!stop) {
                    x += System.nanoTime() & 1;
                }
                sink = x;
            }, "busy-core");
            thread.setDaemon(true);
            thread.start();
        }

        long cpuNanos() {
            return ManagementFactory.getThreadMXBean().getThreadCpuTime(thread.getId());
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            thread.join();
        }
    }
}
