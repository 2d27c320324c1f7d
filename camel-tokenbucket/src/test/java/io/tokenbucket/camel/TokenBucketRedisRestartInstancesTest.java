package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three Camel instances (three CamelContexts, each its own component and Lettuce client) saturate one key of one Redis
 * while that Redis is restarted with an empty data set: the loss adds at most one bucket ({@code C}) and the slots
 * waiters had booked to the bound, whatever each instance admitted.
 */
class TokenBucketRedisRestartInstancesTest {

    private static final int INSTANCES = 3;
    private static final int SENDERS = 2;
    private static final int CAPACITY = 5;
    private static final long INTERVAL_MS = 10; // 100 per second

    private RedisHandle redis;
    private final List<CamelContext> instances = new ArrayList<>();

    @BeforeEach
    void startInstances() throws Exception {
        redis = RedisServers.standalone();
        for (int i = 0; i < INSTANCES; i++) {
            CamelContext camel = new DefaultCamelContext();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    errorHandler(noErrorHandler());
                    from("direct:delay").to("tokenbucket:restarted?store=redis&redisUri=" + redis.uri()
                            + "&capacity=" + CAPACITY + "&refillAmount=100&refillPeriod=1s&maxWait=200ms"
                            + "&storeTimeout=500ms");
                }
            });
            camel.start();
            instances.add(camel);
        }
    }

    @AfterEach
    void stopInstances() {
        instances.forEach(CamelContext::stop);
        redis.close();
    }

    @Test
    void aRedisRestartedEmptyUnderThreeSaturatingInstancesAddsOneBucketAndTheBookedSlots() throws Exception {
        int senders = INSTANCES * SENDERS;
        ConcurrentLinkedQueue<long[]> admissions = new ConcurrentLinkedQueue<>(); // instance, nanoTime
        AtomicLong storeFailures = new AtomicLong();
        CountDownLatch running = new CountDownLatch(50);
        CountDownLatch restarted = new CountDownLatch(1);
        CountDownLatch answeredAfter = new CountDownLatch(50);
        ExecutorService pool = Executors.newFixedThreadPool(senders);
        long start = System.nanoTime();
        List<Future<?>> sent = new ArrayList<>();
        for (int i = 0; i < INSTANCES; i++) {
            int instance = i;
            ProducerTemplate template = instances.get(i).createProducerTemplate();
            for (int t = 0; t < SENDERS; t++) {
                sent.add(pool.submit(() -> {
                    while (answeredAfter.getCount() > 0 && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30)) {
                        Exception failure = template.request("direct:delay", e -> { }).getException();
                        if (failure == null) {
                            admissions.add(new long[] {instance, System.nanoTime()});
                            running.countDown();
                            if (restarted.getCount() == 0) {
                                answeredAfter.countDown();
                            }
                        } else if (failure instanceof TokenBucketStoreException) {
                            storeFailures.incrementAndGet();
                            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1)); // pacing: the outage's second
                        } else if (!(failure instanceof TokenBucketRejectedException)) {
                            throw failure;
                        }
                    }
                    return null;
                }));
            }
        }
        assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
        redis.stop(); // SIGKILL: nothing saved
        redis.start(); // same port, no data
        long restartedAt = System.nanoTime();
        restarted.countDown();
        for (Future<?> f : sent) {
            f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdownNow();
        long end = System.nanoTime();
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(end - start);
        // steady C + elapsed/T (+1 for rounding); the restart adds a full bucket and at most one booked slot per
        // sender (each waits for one exchange at a time)
        long bound = CAPACITY + elapsedMs / INTERVAL_MS + 1 + CAPACITY + senders;
        // from the restart on: a full bucket, its refill, and the slots booked before it that waiters still take
        long afterMs = TimeUnit.NANOSECONDS.toMillis(end - restartedAt);
        long boundAfter = CAPACITY + afterMs / INTERVAL_MS + 1 + senders;
        long after = admissions.stream().filter(a -> a[1] >= restartedAt).count();
        long[] perInstance = new long[INSTANCES];
        admissions.forEach(a -> perInstance[(int) a[0]]++);
        System.out.printf("3 instances, Redis restarted empty: %d admitted in %d ms (per instance %d %d %d), bound %d;"
                + " %d in the %d ms after the restart, bound %d; %d store failures%n", admissions.size(), elapsedMs,
                perInstance[0], perInstance[1], perInstance[2], bound, after, afterMs, boundAfter,
                storeFailures.get());
        assertThat((long) admissions.size()).isLessThanOrEqualTo(bound);
        assertThat(after).isLessThanOrEqualTo(boundAfter);
        assertThat(perInstance).doesNotContain(0L);
    }
}
