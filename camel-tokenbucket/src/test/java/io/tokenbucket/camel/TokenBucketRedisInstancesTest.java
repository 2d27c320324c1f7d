package io.tokenbucket.camel;

import java.util.ArrayList;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three Camel instances (three CamelContexts, each with its own component and its own Lettuce client) share one
 * Redis: together they never get more than one bucket's worth on a key.
 */
class TokenBucketRedisInstancesTest {

    private static final int INSTANCES = 3;
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
                    from("direct:reject").to("tokenbucket:shared?store=redis&redisUri=" + redis.uri() + "&capacity="
                            + CAPACITY + "&refillAmount=100&refillPeriod=1s&mode=reject");
                    from("direct:delay").to("tokenbucket:shared?store=redis&redisUri=" + redis.uri() + "&capacity="
                            + CAPACITY + "&refillAmount=100&refillPeriod=1s&keyHeader=lane");
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
    void threeInstancesSaturatingOneKeyStayWithinOneBucket() throws Exception {
        AtomicLong admitted = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(INSTANCES * 2);
        long start = System.nanoTime();
        long runNanos = TimeUnit.SECONDS.toNanos(4);
        List<Future<?>> senders = new ArrayList<>();
        for (CamelContext camel : instances) {
            ProducerTemplate template = camel.createProducerTemplate();
            for (int t = 0; t < 2; t++) {
                senders.add(pool.submit(() -> {
                    while (System.nanoTime() - start < runNanos) {
                        if (template.request("direct:reject", e -> { }).getException() == null) {
                            admitted.incrementAndGet();
                        }
                    }
                }));
            }
        }
        for (Future<?> f : senders) {
            f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdownNow();
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        long bound = CAPACITY + elapsedMs / INTERVAL_MS + 1;
        System.out.printf("%d instances on one Redis key: %d admitted in %d ms, bound %d (over-admission %d)%n",
                INSTANCES, admitted.get(), elapsedMs, bound, Math.max(0, admitted.get() - bound));
        assertThat(admitted.get()).isLessThanOrEqualTo(bound).isGreaterThanOrEqualTo(bound * 9 / 10);
    }

    @Test
    void waitingExchangesOfThreeInstancesAreSpacedByTheSharedBucket() throws Exception {
        int perInstance = 60;
        List<Future<Object>> sent = new ArrayList<>();
        long start = System.nanoTime();
        for (CamelContext camel : instances) {
            ProducerTemplate template = camel.createProducerTemplate();
            for (int i = 0; i < perInstance; i++) {
                sent.add(template.asyncRequestBodyAndHeader("direct:delay", i, "lane", "one"));
            }
        }
        for (Future<Object> f : sent) {
            f.get(60, TimeUnit.SECONDS);
        }
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        long fastest = (INSTANCES * perInstance - CAPACITY) * INTERVAL_MS;
        System.out.printf("%d waiting exchanges from %d instances released in %d ms (the bucket allows no less"
                + " than %d ms)%n", INSTANCES * perInstance, INSTANCES, elapsedMs, fastest);
        assertThat(elapsedMs).isGreaterThanOrEqualTo(fastest - 2 * INTERVAL_MS);
    }
}
