package io.tokenbucket.benchmarks;

import static io.tokenbucket.benchmarks.Figures.ms;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.AsyncProducer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Measurement 6: {@code keys} keys saturated for {@code seconds} s through
 * {@code tokenbucket:acc?capacity=C&refillAmount=1&refillPeriod=T} in delay mode. All
 * {@code C + seconds/T} exchanges per key are queued at the start (one thread, the {@code direct:} endpoint's
 * async producer, keys interleaved), so every key is saturated for the whole run.
 *
 * <p>Per exchange, a processor just before the endpoint records {@code tRes} (the reservation is made
 * synchronously inside the endpoint's {@code process} call, on the local store) and one just after records the
 * release time (on the worker thread that continues the exchange). The scheduled time is the store's own
 * schedule (GCRA, see {@code BucketMath}): the {@code i}-th reservation of a key (0-based) may pass at
 * {@code max(tRes_i, t0 + (i + 1 - C) * T)}, with {@code t0} the {@code tRes} of the key's first exchange.
 * Releases are counted per 100 ms window (fixed windows from {@code t0}, and the worst sliding window starting at
 * any release) against the bound {@code C + 100 ms / T}.
 *
 * <p>With {@code --store redis} the buckets are in a {@code redis-server} started here ({@link RedisServers})
 * and {@code --instances} (default 3) CamelContexts share it, each with its own component and Lettuce client;
 * exchange {@code i} of a key goes to instance {@code i % instances}. The reservation is then made in Redis, on
 * the Redis clock, in an order this driver does not see, so the schedule is checked by rank: the {@code j}-th
 * release of a key against the {@code j}-th slot {@code t0 + max(0, j + 1 - C) * T}, with {@code t0} the key's first
 * reservation, read back from Redis (its final {@code tat} minus {@code perKey * T}) and mapped to
 * {@code System.nanoTime()} by {@link RedisClock}.
 *
 * <pre>java -jar benchmarks.jar accuracy [--store local|redis] [--instances n] [keys=10] [seconds=10] [capacity=5] [periodMillis=10] [png]</pre>
 * {@code -Daccuracy.options=&redisBatching=false} appends endpoint options to the URI.
 */
public final class Accuracy {

    private Accuracy() {
    }

    public static void main(String[] args) throws Exception {
        List<String> positional = new ArrayList<>();
        String store = "local";
        int instances = 0;
        for (int a = 0; a < args.length; a++) {
            switch (args[a]) {
                case "--store" -> store = args[++a];
                case "--instances" -> instances = Integer.parseInt(args[++a]);
                default -> positional.add(args[a]);
            }
        }
        if (!store.equals("local") && !store.equals("redis")) {
            throw new IllegalArgumentException("--store is local or redis, was " + store);
        }
        boolean redis = store.equals("redis");
        if (instances == 0) {
            instances = redis ? 3 : 1;
        }
        int keys = positional.size() > 0 ? Integer.parseInt(positional.get(0)) : 10;
        int seconds = positional.size() > 1 ? Integer.parseInt(positional.get(1)) : 10;
        int capacity = positional.size() > 2 ? Integer.parseInt(positional.get(2)) : 5;
        long periodMillis = positional.size() > 3 ? Long.parseLong(positional.get(3)) : 10;
        String png = positional.size() > 4 ? positional.get(4) : null;
        run(redis, instances, keys, seconds, capacity, periodMillis, png);
    }

    /** Runs on the local store, or on a redis-server started (and stopped) here. */
    static Summary run(boolean redis, int instances, int keys, int seconds, int capacity, long periodMillis,
                       String png) throws Exception {
        if (!redis) {
            return run(null, instances, keys, seconds, capacity, periodMillis, png);
        }
        try (RedisHandle server = RedisServers.standalone()) {
            return run(server, instances, keys, seconds, capacity, periodMillis, png);
        }
    }

    /**
     * One run: {@code instances} CamelContexts, each with its own {@code tokenbucket:} component (and, on Redis, its
     * own Lettuce client), exchange {@code i} of every key sent to instance {@code i % instances}.
     *
     * @param redis the server to keep the buckets in, or null for the local store
     */
    static Summary run(RedisHandle redis, int instances, int keys, int seconds, int capacity, long periodMillis,
                    String png) throws Exception {
        long T = TimeUnit.MILLISECONDS.toNanos(periodMillis);
        int perKey = capacity + (int) (seconds * 1000L / periodMillis);
        long window = TimeUnit.MILLISECONDS.toNanos(100);
        long bound = capacity + window / T;
        if (redis == null && instances != 1) {
            throw new IllegalArgumentException("the local store keeps one limit per instance: --instances 1 only");
        }
        String storeName = redis == null ? "local store" : "Redis store, " + instances + " instances";

        long[][] reserved = new long[keys][perKey];
        long[][] released = new long[keys][perKey];
        CountDownLatch done = new CountDownLatch(keys * perKey);
        LongAdder failed = new LongAdder();
        AtomicReference<String> firstFailure = new AtomicReference<>();

        String uri = "tokenbucket:acc?keyHeader=k&capacity=" + capacity + "&refillAmount=1&refillPeriod="
                + periodMillis + (redis == null ? "" : "&store=redis&redisUri=" + redis.uri())
                + System.getProperty("accuracy.options", "");
        List<CamelContext> camels = new ArrayList<>();
        List<AsyncProducer> producers = new ArrayList<>();
        for (int n = 0; n < instances; n++) {
            CamelContext camel = new DefaultCamelContext();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:acc")
                            .process(e -> stamp(reserved, e))
                            .to(uri)
                            .process(e -> stamp(released, e));
                }
            });
            camel.start();
            AsyncProducer producer = camel.getEndpoint("direct:acc").createAsyncProducer();
            producer.start();
            camels.add(camel);
            producers.add(producer);
        }
        RedisClock clock = null;
        if (redis != null) {
            // warm every instance's route, connection and script cache first (the local store needs none): 200
            // exchanges each, on keys of their own, each the first token of its bucket, so none waits
            CountDownLatch warm = new CountDownLatch(200 * instances);
            for (int n = 0; n < instances; n++) {
                for (int j = 0; j < 200; j++) {
                    Exchange e = new DefaultExchange(camels.get(n));
                    e.getMessage().setHeader("k", "warm-" + n + "-" + j); // no ki/seq: not recorded
                    producers.get(n).process(e, sync -> warm.countDown());
                }
            }
            warm.await(30, TimeUnit.SECONDS);
            clock = new RedisClock(redis.uri());
        }
        long sendStart = System.nanoTime();
        for (int i = 0; i < perKey; i++) {
            for (int k = 0; k < keys; k++) {
                CamelContext camel = camels.get(i % instances);
                Exchange e = new DefaultExchange(camel);
                e.getMessage().setBody("x");
                e.getMessage().setHeader("k", "key-" + k);
                e.getMessage().setHeader("ki", k);
                e.getMessage().setHeader("seq", i);
                producers.get(i % instances).process(e, sync -> {
                    if (e.getException() != null) {
                        failed.increment();
                        firstFailure.compareAndSet(null, e.getException().toString());
                    }
                    done.countDown();
                });
            }
        }
        long sendEnd = System.nanoTime();
        long sendMillis = TimeUnit.NANOSECONDS.toMillis(sendEnd - sendStart);

        // On Redis the schedule is on the Redis clock: each key's first reservation was at tat - perKey * T (every
        // reservation found the bucket busy and pushed tat by T). tat is read once every reservation has been
        // answered: when no key's tat moved over 100 ms (each is answered, or failed, within the store timeout).
        long[] t0 = new long[keys];
        long[] t0Micros = new long[keys];
        if (redis != null) {
            long[] tat = new long[keys];
            for (boolean moved = true; moved; ) {
                Thread.sleep(100);
                moved = false;
                for (int k = 0; k < keys; k++) {
                    long now = clock.tatMicros("tokenbucket:acc:key-" + k);
                    moved |= now != tat[k];
                    tat[k] = now;
                }
            }
            for (int k = 0; k < keys; k++) {
                t0Micros[k] = tat[k] - perKey * (T / 1000);
            }
        }
        boolean all = done.await(seconds + 30L, TimeUnit.SECONDS);
        if (clock != null) {
            clock.sample(); // a second offset, to correct any drift between the two clocks over the run
            for (int k = 0; k < keys; k++) {
                t0[k] = clock.toNanoTime(t0Micros[k]);
            }
            clock.close();
        }
        for (int n = 0; n < instances; n++) {
            producers.get(n).stop();
            camels.get(n).stop();
        }

        System.out.printf("measurement 6, %s: %d keys x %,d exchanges (capacity %d, 1 token per %d ms, %d s);"
                + " queued in %,d ms; all released: %s; failed: %d%s%n", storeName, keys, perKey, capacity,
                periodMillis, seconds, sendMillis, all, failed.sum(),
                firstFailure.get() == null ? "" : " (first: " + firstFailure.get() + ")");
        if (redis != null) {
            System.out.printf("%s; %d CamelContexts, each with its own tokenbucket component and Lettuce client;"
                    + " exchange i of a key goes to instance i %% %d%n", RedisServers.describe(), instances, instances);
            System.out.printf("Redis clock -> System.nanoTime(): %s%n", clock.describe());
            long minLead = Long.MAX_VALUE;
            long maxLead = Long.MIN_VALUE;
            for (int k = 0; k < keys; k++) {
                long firstSend = Arrays.stream(reserved[k]).min().orElseThrow();
                minLead = Math.min(minLead, t0[k] - firstSend);
                maxLead = Math.max(maxLead, t0[k] - firstSend);
            }
            System.out.printf("schedule origin t0 (read back from Redis) minus the key's first send: %.3f to %.3f ms%n",
                    ms(minLead), ms(maxLead));
        }
        System.out.printf("bound per 100 ms window: capacity + 100 ms / T = %d + %d = %d%n", capacity, window / T,
                bound);

        List<Long> errors = new ArrayList<>();
        List<Long> waitedErrors = new ArrayList<>();
        List<Long> afterQueueing = new ArrayList<>();
        int maxFixed = 0;
        int maxSliding = 0;
        int fixedOver = 0;
        int slidingOverKeys = 0;
        int windows = (int) ((seconds * 1_000_000_000L + window - 1) / window) + 1;
        int[][] perWindow = new int[keys][windows + 50];
        for (int k = 0; k < keys; k++) {
            if (redis == null) {
                t0[k] = reserved[k][0];
            }
            long[] rel = released[k].clone();
            long[] byRank = released[k].clone();
            Arrays.sort(byRank);
            for (int i = 0; i < perKey; i++) {
                // local: exchange i was the key's i-th reservation (made synchronously, in send order), so it is
                // checked against its own slot. Redis: the order in which the instances' reservations reached Redis
                // is not seen here, so the i-th release (in time) is checked against the i-th slot. Those slots are
                // exact from i = C on, even if the key was not yet saturated at its very first reservations (a gap
                // there refills the bucket, and the formula shifts with it); the first C passed at once at their own
                // reservation time, which is not seen here, so on Redis they have no error.
                long scheduled = redis == null
                        ? Math.max(reserved[k][i], t0[k] + Math.max(0, i + 1 - capacity) * T)
                        : t0[k] + Math.max(0, i + 1 - capacity) * T;
                long err = (redis == null ? released[k][i] : byRank[i]) - scheduled;
                if (redis == null || i >= capacity) {
                    errors.add(err);
                }
                if (i + 1 - capacity > 0) {
                    waitedErrors.add(err);
                }
                if (scheduled > sendEnd + 1_000_000_000L) {
                    afterQueueing.add(err);
                }
                int w = (int) ((released[k][i] - t0[k]) / window);
                if (w >= 0 && w < perWindow[k].length) {
                    perWindow[k][w]++;
                }
            }
            for (int w = 0; w < perWindow[k].length; w++) {
                maxFixed = Math.max(maxFixed, perWindow[k][w]);
                if (perWindow[k][w] > bound) {
                    fixedOver++;
                }
            }
            Arrays.sort(rel);
            int keyMax = 0;
            for (int a = 0, b = 0; a < rel.length; a++) {
                while (b < rel.length && rel[b] < rel[a] + window) {
                    b++;
                }
                keyMax = Math.max(keyMax, b - a);
            }
            maxSliding = Math.max(maxSliding, keyMax);
            if (keyMax > bound) {
                slidingOverKeys++;
            }
        }
        errors.sort(null);
        waitedErrors.sort(null);
        afterQueueing.sort(null);
        System.out.printf("released per fixed 100 ms window (from each key's t0): max %d (bound %d); windows over the"
                + " bound: %d of %d%n", maxFixed, bound, fixedOver, keys * perWindow[0].length);
        System.out.printf("released in the worst sliding 100 ms window (starting at any release): max %d (bound %d);"
                + " keys over the bound: %d of %d%n", maxSliding, bound, slidingOverKeys, keys);
        System.out.printf("release-time error (release - scheduled), %s %,d exchanges: p50 %.3f ms, p99 %.3f ms,"
                + " max %.3f ms, min %.3f ms; released before their slot: %d%n",
                redis == null ? "all" : "the", errors.size(), ms(pct(errors, 50)),
                ms(pct(errors, 99)), ms(errors.get(errors.size() - 1)), ms(errors.get(0)),
                errors.stream().filter(x -> x < 0).count());
        System.out.printf("release-time error, the %,d that waited: p50 %.3f ms, p99 %.3f ms, max %.3f ms%n",
                waitedErrors.size(), ms(pct(waitedErrors, 50)), ms(pct(waitedErrors, 99)),
                ms(waitedErrors.get(waitedErrors.size() - 1)));
        if (!afterQueueing.isEmpty()) {
            System.out.printf("release-time error, the %,d scheduled over 1 s after the queueing ended: p50 %.3f ms,"
                    + " p99 %.3f ms, max %.3f ms%n", afterQueueing.size(), ms(pct(afterQueueing, 50)),
                    ms(pct(afterQueueing, 99)), ms(afterQueueing.get(afterQueueing.size() - 1)));
        }
        StringBuilder first = new StringBuilder("key-0 per window, first 12:");
        for (int w = 0; w < 12; w++) {
            first.append(' ').append(perWindow[0][w]);
        }
        System.out.println(first);

        if (png != null) {
            plot(png, storeName, keys, perKey, capacity, T, seconds, t0, released, perWindow, bound);
            System.out.println("plot: " + png);
        }
        return new Summary(all, failed.sum(), maxSliding, bound, errors.get(0), errors.get(errors.size() - 1), T,
                errors.stream().filter(x -> x < 0).count(), pct(errors, 99),
                afterQueueing.isEmpty() ? -1 : pct(afterQueueing, 99), afterQueueing.size());
    }

    /**
     * What a run measured: whether every exchange was released, how many failed, the most released in any sliding
     * 100 ms window against its bound, the earliest and latest release relative to its slot (negative: early), how
     * many were early, the p99 lateness of all and of the slots over 1 s after the queueing ended ({@code -1}: none).
     * A release may be late (a stall of the machine), never early; a late release can fall into the window of the
     * next ones, so a window's count is bounded by {@link #lateBound()}, the bound of a window longer by the worst
     * lateness.
     */
    record Summary(boolean allReleased, long failed, int maxSliding, long bound, long minErrorNanos,
                   long maxErrorNanos, long intervalNanos, long early, long p99Nanos, long p99AfterFirstSecondNanos,
                   int afterFirstSecond) {

        /** The window bound when the releases may be as late as they were: one more token per interval of it. */
        long lateBound() {
            return bound + (Math.max(0, maxErrorNanos) + intervalNanos - 1) / intervalNanos;
        }
    }

    /** Records now as the time of the exchange's key {@code ki} and sequence {@code seq}, when it has them. */
    private static void stamp(long[][] times, Exchange e) {
        Integer k = e.getMessage().getHeader("ki", Integer.class);
        if (k != null) {
            times[k][e.getMessage().getHeader("seq", Integer.class)] = System.nanoTime();
        }
    }

    static long pct(List<Long> sorted, double p) {
        int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
    }

    static void plot(String png, String storeName, int keys, int perKey, int capacity, long T, int seconds,
            long[] t0s, long[][] released, int[][] perWindow, long bound) throws Exception {
        XYChart cumulative = new XYChartBuilder().width(900).height(600)
                .title(keys + " saturated keys, " + storeName + ", capacity " + capacity + ", 1 token / "
                        + T / 1_000_000 + " ms")
                .xAxisTitle("seconds since the key's first reservation").yAxisTitle("tokens released (cumulative)")
                .build();
        cumulative.getStyler().setMarkerSize(0);
        cumulative.getStyler().setLegendVisible(true);
        cumulative.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNW);
        for (int k = 0; k < keys; k++) {
            long t0 = t0s[k];
            long[] rel = released[k].clone();
            Arrays.sort(rel);
            double[] x = new double[perKey];
            double[] y = new double[perKey];
            for (int i = 0; i < perKey; i++) {
                x[i] = (rel[i] - t0) / 1e9;
                y[i] = i + 1;
            }
            XYSeries s = cumulative.addSeries("key-" + k, x, y);
            s.setMarker(SeriesMarkers.NONE);
            s.setShowInLegend(k == 0);
            if (k == 0) {
                s.setLabel("released, each of the " + keys + " keys");
            }
        }
        double end = seconds + 0.5;
        XYSeries b = cumulative.addSeries("bound: capacity + t / T", new double[] {0, end},
                new double[] {capacity, capacity + end * 1e9 / T});
        b.setMarker(SeriesMarkers.NONE);
        b.setLineColor(java.awt.Color.RED);
        b.setLineStyle(new java.awt.BasicStroke(2f, java.awt.BasicStroke.CAP_BUTT, java.awt.BasicStroke.JOIN_MITER,
                10f, new float[] {8f, 6f}, 0f));

        XYChart windows = new XYChartBuilder().width(900).height(600)
                .title("Released per 100 ms window (fixed windows from each key's t0)")
                .xAxisTitle("window start, seconds").yAxisTitle("tokens released in the window").build();
        windows.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
        windows.getStyler().setMarkerSize(5);
        windows.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideS);
        windows.getStyler().setYAxisMin(0.0);
        windows.getStyler().setYAxisMax((double) bound + 3);
        int n = seconds * 10 + 5;
        for (int k = 0; k < keys; k++) {
            double[] x = new double[n];
            double[] y = new double[n];
            for (int w = 0; w < n; w++) {
                x[w] = w / 10.0;
                y[w] = perWindow[k][w];
            }
            XYSeries s = windows.addSeries("key-" + k, x, y);
            s.setShowInLegend(k == 0);
            if (k == 0) {
                s.setLabel("released in a window, each of the " + keys + " keys");
            }
        }
        XYSeries bw = windows.addSeries("bound: capacity + 100 ms / T = " + bound, new double[] {0, n / 10.0},
                new double[] {bound, bound});
        bw.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        bw.setMarker(SeriesMarkers.NONE);
        bw.setLineColor(java.awt.Color.RED);
        Path out = Path.of(png);
        if (out.getParent() != null) {
            Files.createDirectories(out.getParent());
        }
        BitmapEncoder.saveBitmap(List.of(cumulative, windows), 1, 2, png.replaceAll("\\.png$", ""),
                BitmapEncoder.BitmapFormat.PNG);
    }
}
