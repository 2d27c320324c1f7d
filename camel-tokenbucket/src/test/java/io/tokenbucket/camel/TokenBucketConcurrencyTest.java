package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import io.tokenbucket.camel.producer.TokenBucketTimer;
import org.apache.camel.CamelContext;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Many threads on a few keys, on a clock the threads themselves move: each key gets exactly its burst and the tokens
 * refilled over the time they moved, never more (over-admission) and never fewer (a lost update), however the
 * threads interleave and whatever the machine's speed.
 */
class TokenBucketConcurrencyTest extends TokenBucketTestSupport {

    private static final int KEYS = 3;
    private static final int CAPACITY = 5;
    private static final long INTERVAL_MS = 20; // 50 per second
    private static final int THREADS = 4;
    private static final int REQUESTS = 3_000; // per thread; every 4th moves the clock on by 1 ms

    /** The local buckets' time. */
    private final AtomicLong now = new AtomicLong(System.nanoTime());

    @Override
    protected CamelContext createCamelContext() throws Exception {
        CamelContext camel = super.createCamelContext();
        TokenBucketComponent component = new TokenBucketComponent();
        component.shared().useClocks(TokenBucketTimer.SYSTEM, now::get);
        camel.addComponent("tokenbucket", component);
        return camel;
    }

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

    private boolean admitted(int key) {
        return template.request("direct:hammer", e -> e.getMessage().setHeader(TokenBucketConstants.KEY, "k" + key))
                .getException() == null;
    }

    @Test
    void fourThreadsOnThreeKeysGetExactlyTheirTokens() throws Exception {
        AtomicLongArray admitted = new AtomicLongArray(KEYS);
        AtomicLong movedMs = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        List<Future<?>> workers = new ArrayList<>();
        for (int k = 0; k < KEYS; k++) { // each bucket made, full, before the clock moves
            assertThat(admitted(k)).isTrue();
            admitted.incrementAndGet(k);
        }
        try {
            for (int t = 0; t < THREADS; t++) {
                workers.add(pool.submit(() -> {
                    // each thread asks every key every third request while it moves the clock 1 ms per 4: a key is
                    // asked far more often than it refills, so no bucket sits full and wastes its refill
                    for (int i = 0; i < REQUESTS; i++) {
                        if (i % 4 == 0) {
                            now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1));
                            movedMs.incrementAndGet();
                        }
                        int key = i % KEYS;
                        if (admitted(key)) {
                            admitted.incrementAndGet(key);
                        }
                    }
                }));
            }
            for (Future<?> w : workers) {
                w.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (int k = 0; k < KEYS; k++) { // what is left: the tokens no thread found, the clock standing still
            while (admitted(k)) {
                admitted.incrementAndGet(k);
            }
        }
        long expected = CAPACITY + movedMs.get() / INTERVAL_MS;
        for (int k = 0; k < KEYS; k++) {
            System.out.printf("key k%d: %d admitted over %d ms of the clock, expected %d%n", k, admitted.get(k),
                    movedMs.get(), expected);
            assertThat(admitted.get(k)).as("admitted on k%d", k).isEqualTo(expected);
        }
    }
}
