package io.tokenbucket.camel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.store.FallbackBucketStore;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.NotifyBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Redis dies under load and comes back, once per store-error policy. Two threads keep sending; the test
 * records every exchange (when it started, how long it took, how it ended) and checks the policy's promise
 * over the outage, then that the store recovers by itself once Redis is back (a new process: no data, no
 * script).
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketRedisFailureTest extends TokenBucketRedisTestSupport {

    private static final long STORE_TIMEOUT_MS = 300;

    /** One exchange's story. */
    record Outcome(long startNanos, long endNanos, Exception failure) {
        boolean admitted() {
            return failure == null;
        }
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler()); // thousands of expected failures
            }
        };
    }

    private Endpoint endpoint(String policy) {
        // 50 tokens per second, burst 5, never waiting: what is admitted is exactly what the store granted
        return context.getEndpoint("tokenbucket:outage-" + policy + "?store=redis&redisUri=" + redis.uri()
                + "&capacity=5&refillAmount=50&refillPeriod=1s&mode=reject&onStoreError=" + policy
                + "&storeTimeout=" + STORE_TIMEOUT_MS + "ms");
    }

    @Test
    void failPolicyAdmitsNothingWithoutRedisAndRecovers() throws Exception {
        TokenBucketEndpoint endpoint = (TokenBucketEndpoint) endpoint("fail");
        Run run = outage(endpoint);
        List<Outcome> during = run.during();
        assertThat(during).as("exchanges during the outage").isNotEmpty();
        assertThat(during).noneMatch(Outcome::admitted);
        assertThat(during).allSatisfy(o -> assertThat(o.failure()).isInstanceOf(TokenBucketStoreException.class));
        // the outcomes add up: each exchange of the run is counted once, as admitted, rejected or a store error
        long storeErrors = run.all().stream().filter(o -> o.failure() instanceof TokenBucketStoreException).count();
        assertThat(endpoint.getStoreErrorCount()).isEqualTo(storeErrors);
        assertThat(endpoint.getAdmittedCount() + endpoint.getRejectedCount() + endpoint.getStoreErrorCount())
                .isEqualTo(run.all().size());
        assertThat(endpoint.getFallbackCount()).isZero();
        assertThat(run.all()).allSatisfy(o -> assertThat(o.endNanos() - o.startNanos())
                .as("time to answer").isLessThan(TimeUnit.MILLISECONDS.toNanos(STORE_TIMEOUT_MS + 700)));
        System.out.printf("onStoreError=fail: %d exchanges during a %d ms outage, none admitted; recovered %d ms"
                + " after Redis restarted%n", during.size(), run.outageMs(), run.recoveryMs());
    }

    @Test
    void allowPolicyAdmitsAndCountsDuringTheOutage() throws Exception {
        TokenBucketEndpoint endpoint = (TokenBucketEndpoint) endpoint("allow");
        Run run = outage(endpoint);
        assertThat(run.during()).isNotEmpty().allMatch(Outcome::admitted);
        FallbackBucketStore store = (FallbackBucketStore) endpoint.store();
        // one store call per exchange (mode=reject): each exchange of the outage went to the policy, and no
        // exchange more than once
        assertThat(endpoint.getFallbackCount()).as("fallbacks").isGreaterThanOrEqualTo(run.during().size())
                .isLessThanOrEqualTo(run.all().size());
        // answered by the policy, so admitted (or rejected) like any other exchange, and no store error
        assertThat(endpoint.getStoreErrorCount()).isZero();
        assertThat(endpoint.getAdmittedCount()).as("admitted")
                .isEqualTo(run.all().stream().filter(Outcome::admitted).count());
        assertThat(endpoint.getRejectedCount()).as("rejected").isEqualTo(run.all().stream()
                .filter(o -> o.failure() instanceof TokenBucketRejectedException).count());
        assertThat(run.all()).allSatisfy(o -> assertThat(o.admitted() || o.failure() instanceof
                TokenBucketRejectedException).as("admitted or rejected: %s", o.failure()).isTrue());
        System.out.printf("onStoreError=allow: %d admitted and counted during a %d ms outage (%d store failures);"
                + " recovered %d ms after Redis restarted%n", store.fallbacks(), run.outageMs(), store.failures(),
                run.recoveryMs());
    }

    @Test
    void localPolicyThrottlesLocallyDuringTheOutage() throws Exception {
        Run run = outage(endpoint("local"));
        long admitted = run.during().stream().filter(Outcome::admitted).count();
        long bound = 5 + run.outageMs() / 20 + 1;
        assertThat(admitted).as("admitted by the local bucket").isPositive().isLessThanOrEqualTo(bound);
        assertThat(run.during()).filteredOn(o -> !o.admitted())
                .allSatisfy(o -> assertThat(o.failure()).isInstanceOf(TokenBucketRejectedException.class));
        System.out.printf("onStoreError=local: %d admitted during a %d ms outage (local bound %d); recovered %d ms"
                + " after Redis restarted%n", admitted, run.outageMs(), bound, run.recoveryMs());
    }

    /** What happened around one outage. */
    record Run(List<Outcome> all, long stoppedAt, long restartedAt, long recoveredAt) {
        /** Exchanges that started after Redis was dead and ended before it was started again. */
        List<Outcome> during() {
            return all.stream().filter(o -> o.startNanos() > stoppedAt && o.endNanos() < restartedAt).toList();
        }

        long outageMs() {
            return TimeUnit.NANOSECONDS.toMillis(restartedAt - stoppedAt);
        }

        long recoveryMs() {
            return TimeUnit.NANOSECONDS.toMillis(recoveredAt - restartedAt);
        }
    }

    @Test
    void anEndpointStartsWhileRedisIsDownAppliesItsPolicyAndConnectsWhenRedisComesUp() throws Exception {
        redis.stop();
        try {
            // starting the endpoint does not need Redis: the connection is made in the background
            Endpoint fail = context.getEndpoint("tokenbucket:down-fail?store=redis&redisUri=" + redis.uri()
                    + "&capacity=5&refillPeriod=1s&mode=reject&onStoreError=fail");
            Endpoint local = context.getEndpoint("tokenbucket:down-local?store=redis&redisUri=" + redis.uri()
                    + "&capacity=5&refillPeriod=1s&mode=reject&onStoreError=local");
            Exchange failed = template.request(fail, x -> x.getMessage().setHeader(TokenBucketConstants.KEY, "k"));
            assertThat(failed.getException()).isInstanceOf(TokenBucketStoreException.class)
                    .hasMessageContaining("Not connected to Redis yet");
            // local: five admitted by a local bucket, the sixth rejected by it
            for (int i = 0; i < 5; i++) {
                assertThat(template.request(local, x -> x.getMessage().setHeader(TokenBucketConstants.KEY, "k"))
                        .getException()).isNull();
            }
            assertThat(template.request(local, x -> x.getMessage().setHeader(TokenBucketConstants.KEY, "k"))
                    .getException()).isInstanceOf(TokenBucketRejectedException.class);
            assertThat(redis.isRunning()).isFalse();

            redis.start();
            long restarted = System.nanoTime();
            // within the reconnect backoff (1 s) and the policy's bypass (1 s), the bucket is in Redis
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> template
                    .request(fail, x -> x.getMessage().setHeader(TokenBucketConstants.KEY, "k")).getException() == null);
            assertThat((Long) redis.command("EXISTS", "tokenbucket:down-fail:k")).isEqualTo(1L);
            System.out.printf("started without Redis; first exchange answered by Redis %d ms after it came up%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restarted));
        } finally {
            redis.start();
        }
    }

    @Test
    void exchangesRedeliveredByTheErrorHandlerDuringAnOutagePassOnceEachAndOnlyWithATokenFromRedis() throws Exception {
        Map<String, AtomicInteger> passes = new ConcurrentHashMap<>();
        AtomicLong passedWhileDown = new AtomicLong();
        AtomicBoolean down = new AtomicBoolean(true);
        redis.stop();
        context.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                onException(TokenBucketStoreException.class).maximumRedeliveries(1000).redeliveryDelay(50)
                        .asyncDelayedRedelivery().handled(true).to("mock:gaveUp");
                from("seda:redeliver?concurrentConsumers=4").routeId("redeliver")
                        .to("tokenbucket:redeliver?store=redis&redisUri=" + redis.uri()
                                + "&capacity=3&refillPeriod=100ms&onStoreError=fail&storeTimeout=300ms")
                        .process(e -> {
                            passes.computeIfAbsent(e.getMessage().getBody(String.class),
                                    k -> new AtomicInteger()).incrementAndGet();
                            if (down.get()) {
                                passedWhileDown.incrementAndGet();
                            }
                        });
            }
        });
        NotifyBuilder done = new NotifyBuilder(context)
                .fromRoute("redeliver").whenDone(30).create();
        for (int i = 0; i < 30; i++) {
            String body = "m" + i;
            template.sendBodyAndHeader("seda:redeliver", body, TokenBucketConstants.KEY, "k");
        }
        Thread.sleep(1000); // the outage's length: every exchange meets the dead store and is redelivered
        down.set(false);
        redis.start();
        assertThat(done.matches(30, TimeUnit.SECONDS)).as("all 30 exchanges done").isTrue();
        assertThat(passedWhileDown.get()).as("exchanges past the throttle while Redis was down").isZero();
        assertThat(passes).hasSize(30);
        assertThat(passes.values()).extracting(AtomicInteger::get).containsOnly(1);
    }

    /**
     * Sends from two threads; after 300 ms kills Redis, keeps sending for 1.5 s, starts Redis again and waits
     * until an exchange is answered by Redis again (a key appears).
     */
    private Run outage(Endpoint endpoint) throws Exception {
        TokenBucketEndpoint tb = (TokenBucketEndpoint) endpoint;
        ConcurrentLinkedQueue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
        AtomicBoolean sending = new AtomicBoolean(true);
        ExecutorService senders = Executors.newFixedThreadPool(2);
        List<Future<?>> futures = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            futures.add(senders.submit(() -> {
                for (int i = 0; sending.get() && i < 5_000_000; i++) {
                    long start = System.nanoTime();
                    Exchange e = template.request(endpoint, x -> x.getMessage()
                            .setHeader(TokenBucketConstants.KEY, "k"));
                    outcomes.add(new Outcome(start, System.nanoTime(), e.getException()));
                }
            }));
        }
        long stoppedAt;
        long restartedAt;
        long recoveredAt;
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> outcomes.stream().anyMatch(Outcome::admitted));
            Thread.sleep(300); // load before the outage; the outcome does not depend on it
            redis.stop();
            stoppedAt = System.nanoTime();
            Thread.sleep(1500); // the outage itself: its length is the scenario, not a synchronisation
            restartedAt = System.nanoTime();
            redis.start();
            String key = "tokenbucket:outage-" + tb.getConfiguration().getOnStoreError() + ":k";
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                    .until(() -> ((Long) redis.command("EXISTS", key)) == 1L);
            recoveredAt = System.nanoTime();
        } finally {
            sending.set(false);
            for (Future<?> f : futures) {
                f.get(30, TimeUnit.SECONDS);
            }
            senders.shutdownNow();
        }
        // every exchange sent, the last ones included: the senders have stopped
        return new Run(List.copyOf(outcomes), stoppedAt, restartedAt, recoveredAt);
    }
}
