package io.tokenbucket.benchmarks;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;

/**
 * Measurement 3 in CPU time: the routes of {@link RouteOverhead} ({@code bare}, {@code noopStep}, {@code noopHeaders},
 * {@code tokenbucket}),
 * each exchange sent by the thread that runs it, and the CPU time those threads used per exchange
 * ({@link ThreadMXBean#getCurrentThreadCpuTime()}), not the exchanges per second of the wall clock. On a machine
 * shared with other work the wall clock counts the time the sender was not running, so exchanges per second vary
 * by tens of percent between runs; the CPU time a thread spends on an exchange varies far less. It leaves out the
 * garbage collector's threads (allocation is what {@code -prof gc} on {@link RouteOverhead} counts).
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar route-cpu [keys] [rounds] [exchanges per round and thread] [threads]
 * </pre>
 * Defaults: 1000 keys, 15 rounds, 300,000 exchanges, 1 thread. Rounds go through the four routes in turn; the
 * first third of them warm up, the median of the others is printed per route, with {@code bare / route} and {@code noopStep / route}
 * (ratios of exchange rates the CPU time allows) and {@code route - noopStep} (the step's own cost beyond a
 * {@code to()} of a producer that does nothing). The limit is {@link RouteOverhead#NEVER_BINDS} per millisecond
 * with a burst of 1,000, as there.
 */
public final class RouteCpu {

    private RouteCpu() {
    }

    public static void main(String[] args) throws Exception {
        int keys = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 15;
        int perRound = args.length > 2 ? Integer.parseInt(args[2]) : 300_000;
        int threads = args.length > 3 ? Integer.parseInt(args[3]) : 1;
        String[] names = new String[keys];
        for (int i = 0; i < keys; i++) {
            names[i] = "key-" + i;
        }
        CamelContext camel = RouteOverhead.stepRoutes(1000);
        camel.start();
        ProducerTemplate template = camel.createProducerTemplate();
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Map<String, List<Double>> nanos = new LinkedHashMap<>();
        for (int r = 0; r < rounds; r++) {
            for (String route : List.of("bare", "noopStep", "noopHeaders", "tokenbucket")) {
                long[] cpu = new long[threads];
                Thread[] senders = new Thread[threads];
                for (int t = 0; t < threads; t++) {
                    int me = t;
                    senders[t] = new Thread(() -> {
                        int k = me * keys / threads;
                        long before = mx.getCurrentThreadCpuTime();
                        for (int i = 0; i < perRound; i++) {
                            k = k + 1 == keys ? 0 : k + 1;
                            template.sendBodyAndHeader("direct:" + route, "x", "k", names[k]);
                        }
                        cpu[me] = mx.getCurrentThreadCpuTime() - before;
                    });
                    senders[t].start();
                }
                long sum = 0;
                for (int t = 0; t < threads; t++) {
                    senders[t].join();
                    sum += cpu[t];
                }
                if (r >= rounds / 3) {
                    nanos.computeIfAbsent(route, x -> new ArrayList<>()).add(sum / ((double) perRound * threads));
                }
            }
        }
        camel.stop();
        System.out.printf("## route overhead in CPU time: %d thread(s), %d key(s), median of %d rounds of %,d%n",
                threads, keys, rounds - rounds / 3, perRound);
        System.out.println("| route | ns of CPU per exchange | min | max | bare / route | noopStep / route | route - noopStep (ns) |");
        System.out.println("|---|---:|---:|---:|---:|---:|---:|");
        double bare = median(nanos.get("bare"));
        double noop = median(nanos.get("noopStep"));
        for (var e : nanos.entrySet()) {
            List<Double> v = e.getValue();
            double m = median(v);
            System.out.printf("| %s | %.0f | %.0f | %.0f | %.2f | %.2f | %.0f |%n", e.getKey(), m, Collections.min(v),
                    Collections.max(v), bare / m, noop / m, m - noop);
        }
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }
}
