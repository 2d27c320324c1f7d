package io.tokenbucket.benchmarks;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.AsyncProducer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;

/**
 * Measurement 4: live threads and heap while many exchanges wait at once on a binding limit (1 per hour, or per
 * 30 minutes, after the first), for
 * <ul>
 * <li>{@code tokenbucket}: {@code to("tokenbucket:wait?capacity=1&refillAmount=1&refillPeriod=1800000")}: one per
 * 30 minutes, since no exchange may wait longer than 365 days (the component's ceiling), which 10,000 exchanges at
 * one per hour would (the 8,761st on is refused)</li>
 * <li>{@code throttleAsync}: {@code throttle(constant(1)).totalRequestsMode().timePeriodMillis(3600000).asyncDelayed()}</li>
 * <li>{@code throttleAsyncOwnPool}: the same with {@code executorService(new ScheduledThreadPoolExecutor(1))}, whose
 * queue is unbounded (Camel's default profile queues at most 1,000 tasks, then runs the caller)</li>
 * <li>{@code throttleBlocking}: the same without {@code asyncDelayed()}: it blocks the sending thread, so each
 * waiting exchange needs a sender thread of its own; it is run with {@code blockingSenders} threads sending one
 * exchange each (fewer than {@code waiting}, since needing one thread per waiting exchange is the point).</li>
 * </ul>
 * The non-blocking variants are fed by one thread through the {@code direct:} endpoint's {@link AsyncProducer}
 * (the sender never blocks: {@code process(exchange, callback)} returns as soon as the route parks the
 * exchange). Each variant runs in a fresh {@code CamelContext}: threads and heap (after {@code System.gc()}) are
 * read before the context exists, once the route has started and the first exchange passed, and once all
 * exchanges are in flight; then the context is stopped.
 *
 * <pre>java -jar benchmarks.jar waiting [waiting=10000] [blockingSenders=1000] [variants, comma-separated]</pre>
 */
public final class WaitingWithoutThreads {

    private WaitingWithoutThreads() {
    }

    public static void main(String[] args) throws Exception {
        int waiting = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        int blockingSenders = args.length > 1 ? Integer.parseInt(args[1]) : 1_000;
        System.out.printf("measurement 4: waiting without threads; JVM %s %s; %s; max heap %,d MB%n",
                System.getProperty("java.vm.name"), System.getProperty("java.vm.version"),
                ManagementFactory.getGarbageCollectorMXBeans().get(0).getName(),
                Runtime.getRuntime().maxMemory() >> 20);
        List<String> variants = List.of(args.length > 2 ? args[2].split(",")
                : new String[] {"tokenbucket", "throttleAsync", "throttleAsyncOwnPool", "throttleBlocking"});
        List<String> rows = new ArrayList<>();
        for (String v : variants) {
            rows.add(v.equals("throttleBlocking") ? run(v, blockingSenders, blockingSenders) : run(v, waiting, 0));
        }
        System.out.println();
        System.out.println("| variant | exchanges waiting | sender threads | threads before Camel | threads started+idle"
                + " | threads while waiting | extra vs idle route | extra vs before Camel | heap idle (MB) |"
                + " heap while waiting (MB) | heap per waiting exchange (B) |");
        System.out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        rows.forEach(System.out::println);
    }

    static String run(String variant, int n, int senderThreads) throws Exception {
        Snapshot before = Snapshot.take();
        var ownPool = new java.util.concurrent.ScheduledThreadPoolExecutor(1);
        CamelContext camel = new DefaultCamelContext();
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                var route = from("direct:in");
                switch (variant) {
                    case "tokenbucket" -> route.to("tokenbucket:wait?capacity=1&refillAmount=1&refillPeriod=1800000");
                    case "throttleAsync" -> route.throttle(constant(1)).totalRequestsMode().timePeriodMillis(3_600_000)
                            .asyncDelayed();
                    // a plain one-thread ScheduledThreadPoolExecutor: unbounded queue, unlike Camel's default profile
                    case "throttleAsyncOwnPool" -> route.throttle(constant(1)).totalRequestsMode()
                            .timePeriodMillis(3_600_000).asyncDelayed()
                            .executorService(ownPool);
                    default -> route.throttle(constant(1)).totalRequestsMode().timePeriodMillis(3_600_000);
                }
                route.process(e -> { });
            }
        });
        camel.getShutdownStrategy().setTimeout(1);
        camel.getShutdownStrategy().setTimeUnit(TimeUnit.SECONDS);
        camel.start();
        AsyncProducer producer = camel.getEndpoint("direct:in").createAsyncProducer();
        producer.start();
        AtomicInteger completed = new AtomicInteger();
        // the first exchange passes at once (capacity 1)
        CountDownLatch first = new CountDownLatch(1);
        producer.process(exchange(camel), done -> first.countDown());
        if (!first.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException(variant + ": the first exchange did not pass");
        }
        Snapshot idle = Snapshot.take();

        List<Thread> senders = new ArrayList<>();
        long t0 = System.nanoTime();
        AtomicInteger sent = new AtomicInteger();
        if (senderThreads == 0) {
            // one sender thread; if the route ever blocks it, it stays blocked and the count shows where
            Thread t = new Thread(() -> {
                for (int i = 0; i < n; i++) {
                    producer.process(exchange(camel), done -> completed.incrementAndGet());
                    sent.incrementAndGet();
                }
            }, "async-sender");
            t.setDaemon(true);
            t.start();
            senders.add(t);
        } else {
            for (int i = 0; i < senderThreads; i++) {
                Thread t = new Thread(() -> {
                    try {
                        producer.process(exchange(camel));
                    } catch (Exception e) {
                        // interrupted when the context stops
                    }
                    completed.incrementAndGet();
                }, "sender-" + i);
                t.setDaemon(true);
                t.start();
                senders.add(t);
            }
        }
        // wait until every exchange is in flight (parked in the route)
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (camel.getInflightRepository().size() < n && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        long sendMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        int inflight = camel.getInflightRepository().size();
        Thread.sleep(1000);
        String senderState = senderThreads == 0 ? senders.get(0).getState() + " after " + sent.get() + " sent" : "n/a";
        Snapshot waitingNow = Snapshot.take();
        int passedWhileWaiting = completed.get();
        System.out.printf("%s: sending %,d from %s; in flight %,d after %,d ms; completed meanwhile %d;"
                + " async sender %s%n", variant, n,
                senderThreads == 0 ? "1 thread (async producer)" : senderThreads + " threads", inflight, sendMillis,
                passedWhileWaiting, senderState);
        System.out.printf("  before Camel   %s%n  started+idle   %s%n  while waiting  %s%n", before, idle, waitingNow);
        printThreadGroups();
        System.out.println("  stopping");
        producer.stop();
        camel.stop();
        ownPool.shutdownNow();
        System.out.println("  stopped");
        senders.forEach(Thread::interrupt);
        for (Thread t : senders) {
            t.join(5000);
        }
        double perExchange = (double) (waitingNow.heapUsed - idle.heapUsed) / inflight;
        return String.format("| %s | %,d | %s | %d | %d | %d | **%+d** | %+d | %.1f | %.1f | %,.0f |", variant, inflight,
                senderThreads == 0 ? "1 (async" + (senderState.startsWith("TERMINATED") ? ")" : ", " + senderState + ")")
                        : String.format("%,d", senderThreads), before.threads, idle.threads,
                waitingNow.threads, waitingNow.threads - idle.threads, waitingNow.threads - before.threads,
                idle.heapUsed / 1e6, waitingNow.heapUsed / 1e6, perExchange);
    }

    static Exchange exchange(CamelContext camel) {
        Exchange e = new DefaultExchange(camel);
        e.getMessage().setBody("x");
        e.getMessage().setHeader("CamelTokenBucketKey", "one");
        return e;
    }

    /** Threads by name prefix (digits stripped), the non-JVM ones, to show where the extra threads are. */
    static void printThreadGroups() {
        var counts = new java.util.TreeMap<String, Integer>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            String name = t.getName().replaceAll("[0-9]+", "#").replaceAll("#(\\s*#)*", "#");
            if (name.startsWith("sender-")) {
                name = "sender-# (ours, the blocked senders)";
            }
            counts.merge(name, 1, Integer::sum);
        }
        System.out.println("  threads by name: " + counts);
    }

    record Snapshot(int threads, long heapUsed) {
        static Snapshot take() throws InterruptedException {
            for (int i = 0; i < 3; i++) {
                System.gc();
                Thread.sleep(100);
            }
            return new Snapshot(ManagementFactory.getThreadMXBean().getThreadCount(),
                    ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed());
        }

        @Override
        public String toString() {
            return String.format("%d live threads, heap used after GC %,d B", threads, heapUsed);
        }
    }
}
