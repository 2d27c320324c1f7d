package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;

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
        redis = RedisServers.shared();
        redis.flushAll();
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

    /**
     * Six senders in a closed loop on three instances for 4 s: never more than the bound {@code C + elapsed/T} (+1 for
     * rounding), exactly; and at least 90 % of what the bucket could release while it was being asked. A stretch in
     * which no sender got an answer from the bucket lets it fill and lose what it cannot hold, by design: the senders,
     * their JVM or Redis were not scheduled on a loaded machine (measuring only the stretches with no request in
     * flight would miss a stalled JVM, whose requests stay "in flight" while nothing reaches Redis), or every instance
     * had its store calls time out in that stall and failed its exchanges at once for a second (onStoreError=fail,
     * {@code FallbackBucketStore}). Such failures are no answer from the bucket; at least a quarter of the bound must
     * remain, so a store that fails throughout fails the test.
     */
    @Test
    void threeInstancesSaturatingOneKeyStayWithinOneBucket() throws Exception {
        AtomicLong admitted = new AtomicLong();
        AtomicLong storeFailures = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(INSTANCES * 2);
        long start = System.nanoTime();
        long runNanos = TimeUnit.SECONDS.toNanos(4);
        List<Future<LongStream.Builder>> senders = new ArrayList<>();
        for (CamelContext camel : instances) {
            ProducerTemplate template = camel.createProducerTemplate();
            for (int t = 0; t < 2; t++) {
                senders.add(pool.submit(() -> {
                    LongStream.Builder answers = LongStream.builder(); // when the bucket admitted or rejected
                    while (System.nanoTime() - start < runNanos) {
                        Exception failure = template.request("direct:reject", e -> { }).getException();
                        long now = System.nanoTime();
                        if (failure == null) {
                            admitted.incrementAndGet();
                            answers.add(now);
                        } else if (failure instanceof TokenBucketRejectedException) {
                            answers.add(now);
                        } else if (failure instanceof TokenBucketStoreException) {
                            storeFailures.incrementAndGet();
                        } else {
                            throw failure;
                        }
                    }
                    return answers;
                }));
            }
        }
        LongStream answers = LongStream.empty();
        for (Future<LongStream.Builder> f : senders) {
            answers = LongStream.concat(answers, f.get(60, TimeUnit.SECONDS).build());
        }
        pool.shutdownNow();
        long end = System.nanoTime();
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(end - start);
        long bound = CAPACITY + elapsedMs / INTERVAL_MS + 1;
        double lost = tokensLostToStalls(start, end, answers.sorted().toArray());
        long floor = (long) Math.floor((bound - lost) * 0.9);
        System.out.printf("%d instances on one Redis key: %d admitted in %d ms, bound %d (over-admission %d),"
                + " %.1f tokens lost to stalls, floor %d, %d store failures%n", INSTANCES, admitted.get(), elapsedMs,
                bound, Math.max(0, admitted.get() - bound), lost, floor, storeFailures.get());
        assertThat(bound - lost).as("tokens the bucket could release while asked").isGreaterThanOrEqualTo(bound / 4.0);
        assertThat(admitted.get()).isLessThanOrEqualTo(bound).isGreaterThanOrEqualTo(floor);
    }

    /**
     * The tokens a saturated bucket refilled but could not hold while nobody asked: in each stretch between two of its
     * answers (any sender) longer than the bucket takes to fill ({@code C*T}), what it refilled beyond {@code C};
     * before the first answer (the bucket starts full) and after the last (nobody asks again), all it refilled.
     *
     * @param answers the instants of every answer, sorted, in {@link System#nanoTime()} nanoseconds
     */
    static double tokensLostToStalls(long start, long end, long[] answers) {
        double tokensPerNano = 1.0 / TimeUnit.MILLISECONDS.toNanos(INTERVAL_MS);
        if (answers.length == 0) {
            return (end - start) * tokensPerNano;
        }
        double lost = (answers[0] - start) * tokensPerNano + (end - answers[answers.length - 1]) * tokensPerNano;
        for (int i = 1; i < answers.length; i++) {
            lost += Math.max(0, (answers[i] - answers[i - 1]) * tokensPerNano - CAPACITY);
        }
        return lost;
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
