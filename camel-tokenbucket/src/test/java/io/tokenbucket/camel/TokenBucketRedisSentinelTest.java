package io.tokenbucket.camel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisSentinelHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A Redis Sentinel setup (master, replica, three Sentinels, {@code down-after-milliseconds} 1000) and Camel instances
 * on one key (each a CamelContext with its own component and Lettuce client), through a graceful failover and a
 * {@code kill -9} of the master.
 *
 * <p>The bound across one failover is {@code 2C + r·t} on a key: the writes the old master took after the replica's
 * promotion are lost with it (asynchronous replication), at most one bucket's worth as long as no instance writes to
 * the old master once the Sentinels announce the new one ({@code +switch-master}). Without following that
 * announcement an instance stays on the old master until Sentinel demotes it, some 10 s later, while an instance that
 * connects meanwhile writes to the new one: two buckets side by side.
 */
class TokenBucketRedisSentinelTest {

    private static final int CAPACITY = 10;
    private static final long INTERVAL_MS = 100; // 10 per second
    /**
     * How soon after a {@code kill -9} of the master the bucket answers again, at most: Sentinel's down-after, then
     * agreement, election and promotion (about 2 s more when the machine is idle), with room for a loaded machine.
     */
    private static final Duration RECOVERY_BOUND = Duration.ofMillis(RedisSentinelHandle.DOWN_AFTER_MILLIS + 9000);

    private RedisSentinelHandle sentinel;
    private final List<CamelContext> instances = new ArrayList<>();
    private final List<Thread> senders = new ArrayList<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final AtomicLong admitted = new AtomicLong();
    private final AtomicLong storeFailures = new AtomicLong();
    /** Store failures by their cause, and when the first happened ({@link System#nanoTime()}), for the output. */
    private final Map<String, Long> failureCauses = new ConcurrentHashMap<>();
    private final AtomicLong firstFailureNanos = new AtomicLong();
    /** When the bucket last answered (admitted or rejected), {@link System#nanoTime()}. */
    private final AtomicLong lastAnswer = new AtomicLong();

    @BeforeEach
    void startSentinel() {
        sentinel = RedisServers.sentinel();
    }

    @AfterEach
    void stopAll() throws InterruptedException {
        stop.set(true);
        for (Thread t : senders) {
            t.join(10_000);
        }
        instances.forEach(CamelContext::stop);
        sentinel.close();
    }

    /**
     * Instance A saturates one key; a graceful failover; once the Sentinels name the new master, instance B starts (it
     * resolves the new master) and saturates the same key with A for 4 s. Together they stay within {@code 2C + r·t}, and
     * both subscribe to their released channel on the new master.
     */
    @Test
    void gracefulFailoverWithTwoInstancesOnOneKeyStaysWithinTwoBucketsAndTheRate() throws Exception {
        CamelContext first = instance();
        waitForASlot(first);
        long start = System.nanoTime();
        send(first, 2);
        await().atMost(Duration.ofSeconds(10)).until(() -> admitted.get() >= CAPACITY);
        RedisHandle old = sentinel.failover();
        sentinel.awaitMaster(sentinel.other(old));
        long switched = System.nanoTime();
        CamelContext second = instance();
        send(second, 2);
        waitForASlot(second);
        long answersBefore = lastAnswer.get();
        await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(50))
                .until(() -> System.nanoTime() - switched >= TimeUnit.SECONDS.toNanos(4));
        stop.set(true);
        for (Thread t : senders) {
            t.join(10_000);
        }
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        long oneBucket = CAPACITY + elapsedMs / INTERVAL_MS + 1;
        long bound = oneBucket + CAPACITY;
        System.out.printf("graceful failover, 2 instances on one key: %d admitted in %d ms (C + r*t = %d, bound"
                + " 2C + r*t = %d), %d store failures%s; the Sentinels named the new master %d ms after the start%n",
                admitted.get(), elapsedMs, oneBucket, bound, storeFailures.get(), storeFailures.get() == 0 ? ""
                        : " (the first " + TimeUnit.NANOSECONDS.toMillis(firstFailureNanos.get() - switched)
                                + " ms after they named the new master; by cause: " + failureCauses + ")",
                TimeUnit.NANOSECONDS.toMillis(switched - start));
        assertThat(lastAnswer.get()).as("the bucket answered after the switch").isGreaterThan(answersBefore);
        assertThat(admitted.get()).isLessThanOrEqualTo(bound);
        // both instances listen for releases on the new master, where releases are now published, well before
        // Sentinel demotes the old master (some 8 to 10 s after the switch) and drops the connections there
        RedisHandle now = sentinel.other(old);
        await().atMost(Duration.ofSeconds(2)).untilAsserted(() -> assertThat(
                now.command("PUBSUB", "NUMSUB", "tokenbucket:slots:released")).isEqualTo(
                        List.of("tokenbucket:slots:released", 2L)));
    }

    /** A {@code kill -9} of the master: the bucket answers again within {@link #RECOVERY_BOUND}. */
    @Test
    void killOfTheMasterRecoversWithinTheBound() {
        send(instance(), 1);
        await().atMost(Duration.ofSeconds(10)).until(() -> lastAnswer.get() != 0);
        long start = System.nanoTime();
        RedisHandle old = sentinel.master();
        old.stop();
        long killed = System.nanoTime();
        await().atMost(RECOVERY_BOUND.plusSeconds(5)).pollInterval(Duration.ofMillis(20))
                .until(() -> lastAnswer.get() > killed);
        long recoveryMs = TimeUnit.NANOSECONDS.toMillis(lastAnswer.get() - killed);
        sentinel.awaitMaster(sentinel.other(old));
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        System.out.printf("kill -9 of the master: the bucket answered again after %d ms (bound %d ms), %d store"
                + " failures meanwhile, %d admitted%n", recoveryMs, RECOVERY_BOUND.toMillis(), storeFailures.get(),
                admitted.get());
        assertThat(recoveryMs).isLessThanOrEqualTo(RECOVERY_BOUND.toMillis());
        assertThat(elapsedMs).isPositive();
    }

    private CamelContext instance() throws RuntimeException {
        CamelContext camel = new DefaultCamelContext();
        try {
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    errorHandler(noErrorHandler());
                    from("direct:reject").to("tokenbucket:shared?store=redis&redisUri=RAW(" + sentinel.uri()
                            + ")&capacity=" + CAPACITY + "&refillAmount=10&refillPeriod=1s&mode=reject");
                    // its first waiter subscribes to the released channel, where a release that frees a slot some
                    // instance waits for is published
                    from("direct:slots").to("tokenbucket:slots?store=redis&redisUri=RAW(" + sentinel.uri()
                            + ")&maxInFlight=1&maxWait=10s").delay(100);
                }
            });
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        camel.start();
        instances.add(camel);
        return camel;
    }

    /** Two exchanges on one slot: the second waits, so the instance listens for releases. */
    private static void waitForASlot(CamelContext camel) throws Exception {
        ProducerTemplate template = camel.createProducerTemplate();
        CompletableFuture<Exchange> one = template.asyncSend("direct:slots", e -> { });
        CompletableFuture<Exchange> two = template.asyncSend("direct:slots", e -> { });
        assertThat(one.get(20, TimeUnit.SECONDS).getException()).isNull();
        assertThat(two.get(20, TimeUnit.SECONDS).getException()).isNull();
    }

    /**
     * Starts {@code threads} senders in a closed loop on {@code camel}, each pausing 5 ms between exchanges (a
     * load generator's pace, so a failing store does not spin), until the test stops them.
     */
    private void send(CamelContext camel, int threads) {
        ProducerTemplate template = camel.createProducerTemplate();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> {
                while (!stop.get()) {
                    Exception failure = template.request("direct:reject", e -> { }).getException();
                    if (failure == null) {
                        admitted.incrementAndGet();
                        lastAnswer.set(System.nanoTime());
                    } else if (failure instanceof TokenBucketRejectedException) {
                        lastAnswer.set(System.nanoTime());
                    } else if (failure instanceof TokenBucketStoreException) {
                        if (storeFailures.incrementAndGet() == 1) {
                            firstFailureNanos.set(System.nanoTime());
                        }
                        failureCauses.merge(String.valueOf(failure.getCause()), 1L, Long::sum);
                    } else {
                        throw new IllegalStateException(failure);
                    }
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                }
            }, "sender-" + senders.size());
            t.setDaemon(true);
            t.start();
            senders.add(t);
        }
    }
}
