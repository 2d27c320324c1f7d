package io.tokenbucket.benchmarks;

import java.util.Arrays;
import java.util.List;

import org.HdrHistogram.Histogram;

/**
 * The arithmetic the Redis drivers ({@link RedisAcquire}, {@link Targets}) print their figures with: medians and
 * ranges of the rounds, ratios taken round by round, latency histograms merged over the rounds, nanoseconds shown
 * as milliseconds.
 */
final class Figures {

    private Figures() {
    }

    /** Nanoseconds in milliseconds. */
    static double ms(long nanos) {
        return nanos / 1e6;
    }

    /** The median of {@code values} (the mean of the middle two for an even count); the array is not changed. */
    static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** Each run's acquires per second, in order. */
    static double[] opsPerSecond(List<ClosedLoop.Run> runs) {
        return runs.stream().mapToDouble(ClosedLoop.Run::opsPerSecond).toArray();
    }

    /** {@code ours[i] / peer[i]} for each round {@code i} of {@code ours}. */
    static double[] byRound(double[] ours, double[] peer) {
        double[] r = new double[ours.length];
        for (int i = 0; i < r.length; i++) {
            r[i] = ours[i] / peer[i];
        }
        return r;
    }

    /** {@code "min–max"}, two decimals each. */
    static String range(double[] values) {
        return String.format("%.2f–%.2f", Arrays.stream(values).min().orElse(Double.NaN),
                Arrays.stream(values).max().orElse(Double.NaN));
    }

    /** The latency of every run, in one histogram (nanoseconds). */
    static Histogram merged(List<ClosedLoop.Run> runs) {
        Histogram h = new Histogram(3);
        runs.forEach(r -> h.add(r.latency()));
        return h;
    }

    /** A ratio taken round by round (ours ÷ a peer's throughput, say): its median and range over the rounds. */
    record Ratio(double median, double min, double max) {
        static Ratio of(double[] byRound) {
            return new Ratio(Figures.median(byRound), Arrays.stream(byRound).min().orElse(Double.NaN),
                    Arrays.stream(byRound).max().orElse(Double.NaN));
        }

        /** {@code "median (min–max)"}, two decimals each. */
        String text() {
            return String.format("%.2f (%.2f–%.2f)", median, min, max);
        }
    }
}
