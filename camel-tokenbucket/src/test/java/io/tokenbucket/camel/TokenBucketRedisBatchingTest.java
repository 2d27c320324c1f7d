package io.tokenbucket.camel;

import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.tokenbucket.camel.observe.TokenBucketMetrics;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code redisBatching} option as a route sees it, on a real redis-server: on (the default), reservations
 * sent while one is in flight go to Redis together, and the statistics, JMX and Micrometer say how many per call;
 * off, every reservation is a call of its own and no batch is counted. Either way each exchange gets its own answer,
 * and the exchanges of a reply carrying many reservations go on in a few worker pool tasks, not one each.
 */
class TokenBucketRedisBatchingTest extends TokenBucketRedisTestSupport {

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    /** The worker pool: two threads, counting the tasks it is given. */
    private final AtomicInteger poolTasks = new AtomicInteger();
    private final ExecutorService worker = new ThreadPoolExecutor(2, 2, 0, TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>()) {
        @Override
        public void execute(Runnable task) {
            poolTasks.incrementAndGet();
            super.execute(task);
        }
    };

    @Override
    protected RoutesBuilder createRouteBuilder() {
        context.getComponent("tokenbucket", TokenBucketComponent.class).setWorkerPool(worker);
        return new RouteBuilder() {
            @Override
            public void configure() {
            }
        };
    }

    @AfterEach
    void stopThreads() {
        worker.shutdownNow();
    }

    private static final int COUNT = 2_000;
    /** 500 an hour, no waiting: exactly 500 of the exchanges pass however long the calls take. */
    private static final String LIMITS = "&capacity=500&refillPeriod=1h&mode=reject&storeTimeout=5s";

    private String uri(String name, String options) {
        return "tokenbucket:" + name + "?store=redis&redisUri=" + redis.uri() + LIMITS + options;
    }

    /** Sends {@link #COUNT} exchanges on one key without waiting for any; answers how many were admitted. */
    private long admitted(String uri) throws Exception {
        context.getRegistry().bind(TokenBucketMetrics.CAMEL_REGISTRY_NAME, meters);
        Sent sent = sendAsync(uri, COUNT, Map.of(TokenBucketConstants.KEY, "one"));
        assertThat(sent.done().await(30, TimeUnit.SECONDS)).isTrue();
        long admitted = sent.exchanges().stream().filter(e -> e.getException() == null).count();
        assertThat(sent.exchanges()).filteredOn(e -> e.getException() != null)
                .allMatch(e -> e.getException() instanceof TokenBucketRejectedException);
        return admitted;
    }

    @Test
    void onByDefaultReservationsInFlightGoTogetherAndTheSizesAreCounted() throws Exception {
        String uri = uri("batched", "");
        assertThat(admitted(uri)).isEqualTo(500);
        TokenBucketEndpoint endpoint = context.getEndpoint(uri, TokenBucketEndpoint.class);
        assertThat(endpoint.getConfiguration().isRedisBatching()).isTrue();
        TokenBucketStatistics stats = endpoint.getStatistics();
        assertThat(stats.getStoreBatches()).isPositive().isLessThan(COUNT);
        assertThat(endpoint.getMeanStoreBatchSize()).isGreaterThan(1)
                .isEqualTo((double) COUNT / stats.getStoreBatches());
        DistributionSummary sizes = meters.get("tokenbucket.store.batch.size").tag("endpoint", "batched").summary();
        assertThat(sizes.count()).isEqualTo(stats.getStoreBatches());
        assertThat(sizes.totalAmount()).isEqualTo(COUNT);
        // every answer came on Redis's I/O thread and continued on the pool: once per task, not once per exchange
        System.out.printf("%d exchanges answered in %d calls continued in %d worker pool tasks%n", COUNT,
                stats.getStoreBatches(), poolTasks.get());
        assertThat(poolTasks.get()).isPositive().isLessThan(COUNT / 2);
    }

    @Test
    void offEveryReservationIsACallOfItsOwn() throws Exception {
        String uri = uri("unbatched", "&redisBatching=false");
        assertThat(admitted(uri)).isEqualTo(500);
        TokenBucketEndpoint endpoint = context.getEndpoint(uri, TokenBucketEndpoint.class);
        assertThat(endpoint.getConfiguration().isRedisBatching()).isFalse();
        assertThat(endpoint.getStatistics().getStoreBatches()).isZero();
        assertThat(endpoint.getMeanStoreBatchSize()).isZero();
        assertThat(meters.get("tokenbucket.store.batch.size").tag("endpoint", "unbatched").summary().count())
                .isZero();
    }
}
