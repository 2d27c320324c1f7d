package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Many threads on a few keys in real time: no key ever gets more than its bound, and none is starved. */
class TokenBucketConcurrencyTest extends TokenBucketTestSupport {

    private static final int KEYS = 3;
    private static final int CAPACITY = 5;
    private static final long INTERVAL_MS = 20; // 50 per second

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler()); // rejections are the point here
                from("direct:hammer").to("tokenbucket:hammer?capacity=" + CAPACITY
                        + "&refillAmount=50&refillPeriod=1s&mode=reject");
            }
        };
    }

    @Test
    void fourThreadsOnThreeKeysNeverOverAdmit() throws Exception {
        AtomicLongArray admitted = new AtomicLongArray(KEYS);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MILLISECONDS.toNanos(1500);
        List<Future<?>> workers = new ArrayList<>();
        try {
            for (int t = 0; t < 4; t++) {
                workers.add(pool.submit(() -> {
                    for (int i = 0; i < 2_000_000 && System.nanoTime() < deadline; i++) {
                        int key = i % KEYS;
                        if (template.request("direct:hammer",
                                e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "k" + key))
                                .getException() == null) {
                            admitted.incrementAndGet(key);
                        }
                    }
                }));
            }
            for (Future<?> w : workers) {
                w.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        long bound = CAPACITY + elapsedMs / INTERVAL_MS + 1;
        for (int k = 0; k < KEYS; k++) {
            System.out.printf("key k%d: %d admitted in %d ms, bound %d%n", k, admitted.get(k), elapsedMs, bound);
            assertThat(admitted.get(k)).as("admitted on k%d", k).isLessThanOrEqualTo(bound)
                    .isGreaterThanOrEqualTo(bound / 2);
        }
    }
}
