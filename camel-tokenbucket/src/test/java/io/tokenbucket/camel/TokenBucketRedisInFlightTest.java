package io.tokenbucket.camel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.StoreCommand;
import io.tokenbucket.store.redis.RedisConnections;
import io.tokenbucket.store.redis.RedisBucketStore;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.seda.SedaEndpoint;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * In-flight limits shared by three Camel instances (three CamelContexts, each with its own component and Lettuce
 * client) on one Redis: together never more than the limit in flight, counted by the step after the endpoint; every
 * slot back when the exchanges end; a slot freed in one instance reaches a waiter in another; a lease that nobody
 * renews (its instance died) comes back after the lease time and not before; a long exchange keeps its slot.
 */
class TokenBucketRedisInFlightTest {

    private static final int INSTANCES = 3;
    private static final String OPTIONS = "store=redis&maxInFlight=4&inFlightLease=1s&maxWait=30s";

    private RedisHandle redis;
    private final List<CamelContext> instances = new ArrayList<>();
    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger most = new AtomicInteger();
    private final AtomicInteger ended = new AtomicInteger();
    private final List<String> admissions = new java.util.concurrent.CopyOnWriteArrayList<>();

    @BeforeEach
    void startInstances() throws Exception {
        redis = RedisServers.shared();
        redis.flushAll();
        for (int i = 0; i < INSTANCES; i++) {
            CamelContext camel = new DefaultCamelContext();
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    onException(IllegalStateException.class).handled(true);
                    from("seda:load?concurrentConsumers=10&size=100000")
                            .to("tokenbucket:shared?redisUri=" + redis.uri() + "&" + OPTIONS)
                            .process(e -> {
                                most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                                try {
                                    Thread.sleep(ThreadLocalRandom.current().nextInt(3)); // the work
                                    if (e.getMessage().getBody(Integer.class) % 5 == 0) {
                                        throw new IllegalStateException("fails after the endpoint");
                                    }
                                } finally {
                                    inside.decrementAndGet();
                                    ended.incrementAndGet();
                                }
                            });
                    from("direct:hold").to("tokenbucket:shared?redisUri=" + redis.uri() + "&" + OPTIONS)
                            .process(e -> Thread.sleep(e.getMessage().getBody(Long.class)));
                    from("direct:fair").to("tokenbucket:fair?store=redis&maxInFlight=1&maxWait=30s&redisUri="
                            + redis.uri()).process(e -> {
                                admissions.add(e.getContext().getName());
                                Thread.sleep(2); // the work that holds the slot
                            });
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

    private long freeSlots(CamelContext camel) {
        Exchange peek = camel.createProducerTemplate().request("tokenbucket:shared?redisUri=" + redis.uri() + "&"
                + OPTIONS, e -> e.getMessage().setHeader(TokenBucketConstants.OPERATION, "peek"));
        return peek.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class);
    }

    @Test
    void threeInstancesNeverHaveMoreInFlightThanTheLimitAndEndWithEverySlotBack() {
        int perInstance = 400;
        for (CamelContext camel : instances) {
            ProducerTemplate template = camel.createProducerTemplate();
            for (int i = 0; i < perInstance; i++) {
                template.sendBody("seda:load", i);
            }
        }
        await().atMost(60, TimeUnit.SECONDS).until(() -> ended.get() == INSTANCES * perInstance);
        await().atMost(10, TimeUnit.SECONDS).until(() -> instances.stream().allMatch(c -> c.getEndpoint("seda:load",
                SedaEndpoint.class).getCurrentQueueSize() == 0 && c.getInflightRepository().size() == 0));
        assertThat(most.get()).isEqualTo(4); // reached across the instances, never passed
        await().atMost(10, TimeUnit.SECONDS).until(() -> freeSlots(instances.get(0)) == 4); // releases are async
    }

    @Test
    void instancesWaitingForOneKeyAreServedInTurnNotTheReleasingOneAlone() throws Exception {
        List<CamelContext> two = instances.subList(0, 2);
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(6);
        try {
            for (int t = 0; t < 6; t++) { // three callers per instance, each sending as soon as its last is done
                ProducerTemplate template = two.get(t % 2).createProducerTemplate();
                pool.submit(() -> {
                    while (!stop.get()) {
                        template.sendBody("direct:fair", 1);
                    }
                    return null;
                });
            }
            await().atMost(60, TimeUnit.SECONDS).until(() -> admissions.size() >= 200);
        } finally {
            stop.set(true);
            pool.shutdown();
            pool.awaitTermination(30, TimeUnit.SECONDS);
        }
        List<String> first = admissions.subList(0, 200);
        for (CamelContext camel : two) {
            long mine = first.stream().filter(camel.getName()::equals).count();
            assertThat(mine).as("admissions of %s among the first 200", camel.getName()).isGreaterThanOrEqualTo(60);
        }
    }

    @Test
    void aSlotOfADeadInstanceComesBackAfterItsLeaseAndNotBefore() throws Exception {
        // a "dead instance": four slots taken under leases of 1 s that nobody renews or releases
        RedisConnections connections = new RedisConnections();
        try (RedisConnections.Lease connection = connections.acquire(redis.uri(), Duration.ofSeconds(5));
             RedisBucketStore dead = new RedisBucketStore(connection::commands, false,
                     RedisBucketStore.namespace("tokenbucket:", "shared"),
                     Duration.ofSeconds(5), false, size -> { })) {
            Limits four = Limits.inFlightOnly(4);
            long taken = System.nanoTime();
            for (int i = 0; i < 4; i++) {
                Outcome o = dead.execute(new StoreCommand(List.of(""), Step.reserve(four, 1, 0),
                        new StoreCommand.Lease("dead-" + i, TimeUnit.SECONDS.toNanos(1)))).toCompletableFuture()
                        .get(5, TimeUnit.SECONDS);
                assertThat(o.granted()).isTrue();
            }
            assertThat(freeSlots(instances.get(1))).isZero();
            Exchange waited = instances.get(1).createProducerTemplate().request("direct:hold",
                    e -> e.getMessage().setBody(0L));
            long admittedAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - taken);
            assertThat(waited.getException()).isNull();
            assertThat(admittedAfterMs).as("not before the lease ran out").isGreaterThanOrEqualTo(1000);
            assertThat(admittedAfterMs).as("soon after it (polled every 20 ms)").isLessThan(5000);
        } finally {
            connections.close();
        }
    }

    @Test
    void aLongExchangeKeepsItsSlotPastTheLeaseTimeAndAReleaseReachesAnotherInstance() throws Exception {
        var holders = new ArrayList<java.util.concurrent.CompletableFuture<Exchange>>();
        long start = System.nanoTime(); // before the holders: no holder ends sooner than 2.5 s after it
        for (int i = 0; i < 4; i++) { // four exchanges of 2.5 s, two and a half lease times
            holders.add(instances.get(0).createProducerTemplate().asyncSend("direct:hold",
                    e -> e.getMessage().setBody(2500L)));
        }
        await().atMost(10, TimeUnit.SECONDS).until(() -> freeSlots(instances.get(2)) == 0);
        Exchange waiter = instances.get(2).createProducerTemplate().request("direct:hold",
                e -> e.getMessage().setBody(0L));
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(waiter.getException()).isNull();
        assertThat(waitedMs).as("admitted only when a holder ended, not when a lease time passed")
                .isGreaterThanOrEqualTo(2500);
        for (var h : holders) {
            assertThat(h.get(10, TimeUnit.SECONDS).getException()).isNull();
        }
        await().atMost(10, TimeUnit.SECONDS).until(() -> freeSlots(instances.get(1)) == 4);
    }
}
