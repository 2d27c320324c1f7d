package io.tokenbucket.benchmarks;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.google.common.util.concurrent.RateLimiter;
import io.github.bucket4j.Bucket;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.store.local.LocalBucketStore;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Measurement 1: the cost of one local acquire when the limit never binds (1e9 tokens per second, a burst of
 * 1e9), so what is measured is the bookkeeping. Every implementation is reached the same way a keyed limiter is
 * used: a {@link ConcurrentHashMap} lookup of a {@code String} key (ours does it inside the store), the key taken
 * round robin from {@code keys} pre-built strings, each thread starting at a random offset.
 *
 * <p>The peers as a user gets them by default: Bucket4j's {@code Bucket.builder()} (lock-free, millisecond
 * clock), Guava's {@code RateLimiter.create} (synchronized, SmoothBursty), Resilience4j's
 * {@code AtomicRateLimiter} (CAS on a cycle state, fixed window), and a bare {@code AtomicLong} increment by CAS
 * with no clock at all, the physical ceiling.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class LocalAcquire {

    /** Tokens per second, and the burst: far above any rate reachable here, so no limit ever binds. */
    static final long RATE = 1_000_000_000L;

    @Param({"1", "100000"})
    public int keys;

    String[] names;
    LocalBucketStore ours;
    Limits limits;
    ConcurrentHashMap<String, Bucket> bucket4j;
    ConcurrentHashMap<String, RateLimiter> guava;
    ConcurrentHashMap<String, AtomicRateLimiter> resilience4j;
    ConcurrentHashMap<String, AtomicLong> cas;

    /** Each thread's position in the key ring. */
    @State(Scope.Thread)
    public static class Cursor {
        int i;

        @Setup
        public void start(LocalAcquire bench) {
            i = ThreadLocalRandom.current().nextInt(bench.keys);
        }

        String next(String[] names) {
            int j = i + 1;
            if (j == names.length) {
                j = 0;
            }
            i = j;
            return names[j];
        }
    }

    @Setup
    public void setup(BenchmarkParams params) {
        String b = params.getBenchmark();
        setup(b.substring(b.lastIndexOf('.') + 1));
    }

    /** Builds the keys and the limiters of {@code impl} only (one benchmark per fork). */
    public void setup(String impl) {
        names = new String[keys];
        for (int i = 0; i < keys; i++) {
            names[i] = "key-" + i;
        }
        switch (impl) {
            case "ours", "oursLocked" -> {
                ours = new LocalBucketStore(System::nanoTime, impl.equals("ours"));
                limits = Limits.of(Limit.of(RATE, RATE, TimeUnit.SECONDS.toNanos(1)));
                for (String n : names) { // the buckets exist, as the peers' limiters do
                    ours.reserveNow(n, limits, 1, 0);
                }
            }
            case "bucket4j" -> {
                bucket4j = new ConcurrentHashMap<>();
                for (String n : names) {
                    bucket4j.put(n, Bucket.builder()
                            .addLimit(l -> l.capacity(RATE).refillGreedy(RATE, Duration.ofSeconds(1))).build());
                }
            }
            case "guava" -> {
                guava = new ConcurrentHashMap<>();
                for (String n : names) {
                    guava.put(n, RateLimiter.create(RATE));
                }
            }
            case "resilience4j" -> {
                resilience4j = new ConcurrentHashMap<>();
                RateLimiterConfig config = RateLimiterConfig.custom().limitForPeriod((int) RATE)
                        .limitRefreshPeriod(Duration.ofSeconds(1)).timeoutDuration(Duration.ZERO).build();
                for (String n : names) {
                    resilience4j.put(n, new AtomicRateLimiter(n, config));
                }
            }
            case "atomicCas" -> {
                cas = new ConcurrentHashMap<>();
                for (String n : names) {
                    cas.put(n, new AtomicLong());
                }
            }
            default -> throw new IllegalArgumentException("no implementation " + impl);
        }
    }

    @Benchmark
    public Outcome ours(Cursor c) {
        return ours.reserveNow(c.next(names), limits, 1, 0);
    }

    /** Ours without the lock-free path: the locked path every other command takes, for the same reservation. */
    @Benchmark
    public Outcome oursLocked(Cursor c) {
        return ours.reserveNow(c.next(names), limits, 1, 0);
    }

    @Benchmark
    public boolean bucket4j(Cursor c) {
        return bucket4j.get(c.next(names)).tryConsume(1);
    }

    @Benchmark
    public boolean guava(Cursor c) {
        return guava.get(c.next(names)).tryAcquire();
    }

    @Benchmark
    public boolean resilience4j(Cursor c) {
        return resilience4j.get(c.next(names)).acquirePermission();
    }

    /** The ceiling: a bounded increment by compare-and-set, no clock, no math. */
    @Benchmark
    public boolean atomicCas(Cursor c) {
        AtomicLong counter = cas.get(c.next(names));
        while (true) {
            long v = counter.get();
            if (v == Long.MAX_VALUE) {
                return false;
            }
            if (counter.compareAndSet(v, v + 1)) {
                return true;
            }
        }
    }
}
