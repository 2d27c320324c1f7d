package io.tokenbucket.benchmarks;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import com.google.common.util.concurrent.RateLimiter;
import io.github.bucket4j.Bucket;
import io.github.resilience4j.ratelimiter.RateLimiterConfig;
import io.github.resilience4j.ratelimiter.internal.AtomicRateLimiter;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.store.local.LocalBucketStore;

/**
 * Measurement 5: heap per live local key, and after the keys go idle (our sweep), against a
 * {@code ConcurrentHashMap<String, limiter>} of each peer (none of which drops idle keys by itself).
 *
 * <p>The key strings are built before the baseline is taken, so the figures are the limiter's own cost per key
 * (map entry and table slot included, key string excluded; the key strings' size is printed apart). Heap is
 * read from {@code MemoryMXBean} after {@code System.gc()}; run with {@code -XX:+UseSerialGC} so a
 * {@code System.gc()} is a full, compacting collection. Each key takes one token of a 1-per-300 ms bucket, so
 * it is live (not full) when measured and full again 300 ms later.
 */
public final class MemoryPerKey {

    private static final long PERIOD_NANOS = TimeUnit.MILLISECONDS.toNanos(300);

    private MemoryPerKey() {
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0].replace("_", "")) : 1_000_000;
        System.out.printf("keys: %,d; JVM: %s %s; max heap %,d MB; GC: %s%n", n, System.getProperty("java.vm.name"),
                System.getProperty("java.version"), Runtime.getRuntime().maxMemory() >> 20,
                ManagementFactory.getGarbageCollectorMXBeans().get(0).getName());

        long empty = usedAfterGc();
        String[] names = new String[n];
        for (int i = 0; i < n; i++) {
            names[i] = "key-" + i;
        }
        long base = usedAfterGc();
        System.out.printf("key strings themselves (\"key-<i>\"): %.1f B/key (not counted below)%n",
                (base - empty) / (double) n);

        // ours
        LocalBucketStore store = new LocalBucketStore();
        Limits limits = Limits.of(Limit.of(1, 1, PERIOD_NANOS));
        for (String k : names) {
            if (!store.reserveNow(k, limits, 1, 0).granted()) {
                throw new IllegalStateException("a fresh bucket refused " + k);
            }
        }
        long live = usedAfterGc() - base;
        report("ours (LocalBucketStore), live", live, n, store.size());
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(PERIOD_NANOS) + 200); // every bucket is full again
        int dropped = store.sweep();
        long idle = usedAfterGc() - base;
        report("ours (LocalBucketStore), idle after sweep (dropped " + dropped + ")", idle, n, store.size());
        store = null;

        peer("bucket4j (lock-free Bucket in a ConcurrentHashMap)", names,
                () -> Bucket.builder().addLimit(l -> l.capacity(1).refillGreedy(1, Duration.ofNanos(PERIOD_NANOS)))
                        .build(),
                b -> b.tryConsume(1), base);
        peer("guava (RateLimiter in a ConcurrentHashMap)", names,
                () -> RateLimiter.create(1e9 / PERIOD_NANOS), RateLimiter::tryAcquire, base);
        RateLimiterConfig config = RateLimiterConfig.custom().limitForPeriod(1)
                .limitRefreshPeriod(Duration.ofNanos(PERIOD_NANOS)).timeoutDuration(Duration.ZERO).build();
        int[] i = {0};
        peer("resilience4j (AtomicRateLimiter in a ConcurrentHashMap)", names,
                () -> new AtomicRateLimiter(names[i[0]++], config), AtomicRateLimiter::acquirePermission, base);
        // keep the key strings reachable until the end, so every figure is net of them
        System.out.println("(" + names[n - 1] + ")");
    }

    private static <T> void peer(String name, String[] names, java.util.function.Supplier<T> make, Consumer<T> take,
                                 long base) {
        ConcurrentHashMap<String, T> map = new ConcurrentHashMap<>();
        for (String k : names) {
            T limiter = make.get();
            take.accept(limiter);
            map.put(k, limiter);
        }
        report(name + ", live (never dropped)", usedAfterGc() - base, names.length, map.size());
    }

    private static void report(String what, long bytes, int n, int held) {
        System.out.printf("%-75s %,14d B  %8.1f B/key  (%,d entries held)%n", what, bytes, bytes / (double) n, held);
    }

    static long usedAfterGc() {
        var memory = ManagementFactory.getMemoryMXBean();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            used = Math.min(used, memory.getHeapMemoryUsage().getUsed());
        }
        return used;
    }
}
