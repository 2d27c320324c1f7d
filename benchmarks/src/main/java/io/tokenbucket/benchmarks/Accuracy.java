package io.tokenbucket.benchmarks;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

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
 * Measurement 6 (local store): {@code keys} keys saturated for {@code seconds} s through
 * {@code tokenbucket:acc?capacity=C&refillTokens=1&refillPeriod=T} in delay mode. All
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
 * <pre>java -jar benchmarks.jar accuracy [keys=10] [seconds=10] [capacity=5] [periodMillis=10] [png=docs/accuracy-local.png]</pre>
 */
public final class Accuracy {

    private Accuracy() {
    }

    public static void main(String[] args) throws Exception {
        int keys = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int capacity = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        long periodMillis = args.length > 3 ? Long.parseLong(args[3]) : 10;
        String png = args.length > 4 ? args[4] : null;
        long T = TimeUnit.MILLISECONDS.toNanos(periodMillis);
        int perKey = capacity + (int) (seconds * 1000L / periodMillis);
        long window = TimeUnit.MILLISECONDS.toNanos(100);
        long bound = capacity + window / T;

        long[][] reserved = new long[keys][perKey];
        long[][] released = new long[keys][perKey];
        CountDownLatch done = new CountDownLatch(keys * perKey);

        CamelContext camel = new DefaultCamelContext();
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:acc")
                        .process(e -> reserved[e.getMessage().getHeader("ki", Integer.class)]
                                [e.getMessage().getHeader("seq", Integer.class)] = System.nanoTime())
                        .to("tokenbucket:acc?keyHeader=k&capacity=" + capacity + "&refillTokens=1&refillPeriod="
                                + periodMillis)
                        .process(e -> released[e.getMessage().getHeader("ki", Integer.class)]
                                [e.getMessage().getHeader("seq", Integer.class)] = System.nanoTime());
            }
        });
        camel.start();
        AsyncProducer producer = camel.getEndpoint("direct:acc").createAsyncProducer();
        producer.start();
        long sendStart = System.nanoTime();
        for (int i = 0; i < perKey; i++) {
            for (int k = 0; k < keys; k++) {
                Exchange e = new DefaultExchange(camel);
                e.getMessage().setBody("x");
                e.getMessage().setHeader("k", "key-" + k);
                e.getMessage().setHeader("ki", k);
                e.getMessage().setHeader("seq", i);
                producer.process(e, sync -> done.countDown());
            }
        }
        long sendEnd = System.nanoTime();
        long sendMillis = TimeUnit.NANOSECONDS.toMillis(sendEnd - sendStart);
        boolean all = done.await(seconds + 30L, TimeUnit.SECONDS);
        producer.stop();
        camel.stop();

        System.out.printf("measurement 6, local store: %d keys x %,d exchanges (capacity %d, 1 token per %d ms, %d s);"
                + " queued in %,d ms; all released: %s%n", keys, perKey, capacity, periodMillis, seconds, sendMillis, all);
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
            long t0 = reserved[k][0];
            long[] rel = released[k].clone();
            for (int i = 0; i < perKey; i++) {
                long scheduled = Math.max(reserved[k][i], t0 + Math.max(0, i + 1 - capacity) * T);
                long err = released[k][i] - scheduled;
                errors.add(err);
                if (i + 1 - capacity > 0) {
                    waitedErrors.add(err);
                }
                if (scheduled > sendEnd + 1_000_000_000L) {
                    afterQueueing.add(err);
                }
                int w = (int) ((released[k][i] - t0) / window);
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
        System.out.printf("release-time error (release - scheduled), all %,d exchanges: p50 %.3f ms, p99 %.3f ms,"
                + " max %.3f ms, min %.3f ms%n", errors.size(), ms(pct(errors, 50)), ms(pct(errors, 99)),
                ms(errors.get(errors.size() - 1)), ms(errors.get(0)));
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
            plot(png, keys, perKey, capacity, T, seconds, reserved, released, perWindow, bound);
            System.out.println("plot: " + png);
        }
    }

    static long pct(List<Long> sorted, double p) {
        int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
    }

    static double ms(long nanos) {
        return nanos / 1e6;
    }

    static void plot(String png, int keys, int perKey, int capacity, long T, int seconds, long[][] reserved,
            long[][] released, int[][] perWindow, long bound) throws Exception {
        XYChart cumulative = new XYChartBuilder().width(900).height(600)
                .title(keys + " saturated keys, local store, capacity " + capacity + ", 1 token / "
                        + T / 1_000_000 + " ms")
                .xAxisTitle("seconds since the key's first reservation").yAxisTitle("tokens released (cumulative)")
                .build();
        cumulative.getStyler().setMarkerSize(0);
        cumulative.getStyler().setLegendVisible(true);
        cumulative.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNW);
        for (int k = 0; k < keys; k++) {
            long t0 = reserved[k][0];
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
