package io.tokenbucket.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;

/**
 * The figures for in-flight limits, beside Camel's own {@code throttle(n).concurrentRequestsMode()} in the same
 * run:
 * <ol>
 * <li><b>cost per exchange</b>: {@code threads} callers send synchronously through a route whose only step is the
 *     limiter (limit 4 in flight, one key) and a no-op, for {@code seconds}, alternating the cases; exchanges per
 *     second and microseconds per exchange, with the bare route (no limiter) as the floor;</li>
 * <li><b>release to admission</b>: limit 1, {@code threads} callers, each exchange busy for 200 µs after the
 *     limiter: the time from one exchange's last step to the next one's first step after the limiter, p50 and p99
 *     (the release, the wake-up and the hand-off together). For Redis also across two Camel instances (two
 *     CamelContexts, each with its own component and Redis client, on one redis-server): the gaps where the next
 *     exchange ran in the other instance.</li>
 * </ol>
 * <pre>java -jar benchmarks/target/benchmarks.jar inflight [seconds] [threads] [--no-redis]</pre>
 */
public final class InFlight {

    private static final long WORK_NANOS = TimeUnit.MICROSECONDS.toNanos(200);

    private InFlight() {
    }

    public static void main(String[] args) throws Exception {
        List<String> a = new ArrayList<>(Arrays.asList(args));
        boolean redis = !a.remove("--no-redis");
        double seconds = a.size() > 0 ? Double.parseDouble(a.get(0)) : 3;
        int threads = a.size() > 1 ? Integer.parseInt(a.get(1)) : 8;
        System.out.printf("in-flight limits, %s s per case, %d caller threads, %d cores%n", seconds, threads,
                Runtime.getRuntime().availableProcessors());
        costPerExchange(seconds, threads);
        releaseToAdmission(seconds, threads, redis);
    }

    private static void costPerExchange(double seconds, int threads) throws Exception {
        CamelContext camel = new DefaultCamelContext();
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:bare").process(e -> { });
                from("direct:tokenbucket").to("tokenbucket:cost?maxInFlight=4").process(e -> { });
                from("direct:throttle").throttle(4).concurrentRequestsMode().process(e -> { });
            }
        });
        camel.start();
        try {
            String[] cases = {"bare", "tokenbucket", "throttle"};
            double[] rates = new double[cases.length];
            for (int round = 0; round < 3; round++) { // round 0 warms up
                for (int c = 0; c < cases.length; c++) {
                    double rate = send(camel, "direct:" + cases[c], seconds, threads);
                    if (round > 0) {
                        rates[c] += rate / 2;
                    }
                }
            }
            System.out.println("1. cost per exchange (limit 4 in flight, one key, synchronous callers):");
            for (int c = 0; c < cases.length; c++) {
                System.out.printf("   %-12s %,10.0f exchanges/s  %7.2f µs/exchange%n", cases[c], rates[c],
                        1e6 * threads / rates[c]);
            }
            System.out.printf("   tokenbucket / throttle: %.2f x the exchanges per second%n", rates[1] / rates[2]);
        } finally {
            camel.stop();
        }
    }

    /** Exchanges per second through {@code uri} with {@code threads} synchronous callers. */
    private static double send(CamelContext camel, String uri, double seconds, int threads) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicLong sent = new AtomicLong();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        long start = System.nanoTime();
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                ProducerTemplate template = camel.createProducerTemplate();
                runs.add(pool.submit(() -> {
                    long n = 0;
                    while (System.nanoTime() < end) {
                        template.sendBody(uri, n++);
                    }
                    sent.addAndGet(n);
                    return null;
                }));
            }
            for (Future<?> run : runs) {
                run.get();
            }
        } finally {
            pool.shutdownNow();
        }
        return sent.get() / ((System.nanoTime() - start) / 1e9);
    }

    private static void releaseToAdmission(double seconds, int threads, boolean redis) throws Exception {
        System.out.println("2. release to admission (limit 1 in flight, 200 µs of work after the limiter):");
        gaps("throttle", seconds, threads, null, route -> route.throttle(1).concurrentRequestsMode());
        gaps("tokenbucket local", seconds, threads, null, route -> route.to("tokenbucket:gap?maxInFlight=1"));
        if (redis) {
            try (RedisHandle server = RedisServers.standalone()) {
                String uri = "tokenbucket:gap?maxInFlight=1&store=redis&redisUri=" + server.uri();
                gaps("tokenbucket redis", seconds, threads, null, route -> route.to(uri));
                gaps("tokenbucket redis, 2 instances", seconds, threads, uri, route -> route.to(uri));
            }
        }
    }

    /** How a case puts its limiter in a route. */
    private interface Limiter {
        org.apache.camel.model.ProcessorDefinition<?> apply(org.apache.camel.model.RouteDefinition route);
    }

    /**
     * Runs {@code threads} callers through the limiter (split over two instances when {@code secondUri} is set) and
     * prints the gaps between one exchange's end of work and the next one's start.
     */
    private static void gaps(String name, double seconds, int threads, String secondUri, Limiter limiter)
            throws Exception {
        int instances = secondUri == null ? 1 : 2;
        long[] lastEnd = {0};
        int[] lastInstance = {-1};
        List<Long> same = new ArrayList<>();
        List<Long> across = new ArrayList<>();
        Object lock = new Object();
        List<CamelContext> contexts = new ArrayList<>();
        for (int i = 0; i < instances; i++) {
            int instance = i;
            CamelContext camel = new DefaultCamelContext();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    limiter.apply(from("direct:gap")).process(e -> {
                        long started = System.nanoTime();
                        synchronized (lock) {
                            if (lastEnd[0] != 0) {
                                (lastInstance[0] == instance ? same : across).add(started - lastEnd[0]);
                            }
                        }
                        long until = started + WORK_NANOS;
                        while (System.nanoTime() < until) {
                            Thread.onSpinWait();
                        }
                        synchronized (lock) {
                            lastEnd[0] = System.nanoTime();
                            lastInstance[0] = instance;
                        }
                    });
                }
            });
            camel.start();
            contexts.add(camel);
        }
        try {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            long end = System.nanoTime() + (long) (seconds * 1e9);
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                ProducerTemplate template = contexts.get(t % instances).createProducerTemplate();
                runs.add(pool.submit(() -> {
                    while (System.nanoTime() < end) {
                        template.sendBody("direct:gap", 1);
                    }
                    return null;
                }));
            }
            for (Future<?> run : runs) {
                run.get();
            }
            pool.shutdownNow();
        } finally {
            contexts.forEach(CamelContext::stop);
        }
        synchronized (lock) {
            print(name + (instances > 1 ? ", same instance" : ""), same);
            if (instances > 1) {
                print(name + ", across instances", across);
            }
        }
    }

    private static void print(String name, List<Long> gaps) {
        if (gaps.isEmpty()) {
            System.out.printf("   %-44s no gaps measured%n", name);
            return;
        }
        long[] sorted = gaps.stream().mapToLong(Long::longValue).sorted().toArray();
        System.out.printf("   %-44s %7d admissions  p50 %8.1f µs  p99 %8.1f µs%n", name, sorted.length,
                sorted[sorted.length / 2] / 1e3, sorted[(int) (sorted.length * 0.99)] / 1e3);
    }
}
