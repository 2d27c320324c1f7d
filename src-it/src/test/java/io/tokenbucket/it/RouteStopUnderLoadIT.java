package io.tokenbucket.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import io.tokenbucket.camel.TokenBucketException;
import io.tokenbucket.example.ExampleApp;
import io.tokenbucket.example.ScrapeRun;
import io.tokenbucket.example.ScraperRoute;
import io.tokenbucket.example.demo.DemoSite;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.main.BaseMainSupport;
import org.apache.camel.main.Main;
import org.apache.camel.main.MainListenerSupport;
import org.apache.camel.spi.CamelEvent;
import org.apache.camel.support.EventNotifierSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scenario 6: the example's route is stopped while thousands of its exchanges wait for tokens (three proxies, one
 * token each per hour, 3,000 URLs: three fetched, the rest waiting in {@code tokenbucket:} without a thread each).
 * Stopping the route fails every waiting exchange with {@code TokenBucketException} (their tokens refunded), so
 * none is left hanging: the route's in-flight count drops to zero and the application completes by itself.
 */
class RouteStopUnderLoadIT {

    private static final int URLS = 3_000;

    @TempDir
    Path dir;

    @Test
    void stoppingTheRouteWhileThousandsWaitLeavesNoneHanging() throws Exception {
        try (DemoSite site = new DemoSite(dir, 3, "1/1h", URLS, 1_000, 1000)) {
            ScrapeRun run = new ScrapeRun(System.out);
            Main main = ExampleApp.createMain(run, site, dir.resolve("out"));
            AtomicReference<CamelContext> context = new AtomicReference<>();
            Map<String, Long> failures = new ConcurrentHashMap<>();
            main.addMainListener(new MainListenerSupport() {
                @Override
                public void beforeStart(BaseMainSupport m) {
                    m.getCamelContext().getManagementStrategy().addEventNotifier(new EventNotifierSupport() {
                        @Override
                        public void notify(CamelEvent event) {
                            Exchange e = ((CamelEvent.ExchangeFailedEvent) event).getExchange();
                            if (ScraperRoute.ROUTE_ID.equals(e.getFromRouteId())) {
                                failures.merge(e.getException().getClass().getSimpleName(), 1L, Long::sum);
                            }
                        }

                        @Override
                        public boolean isEnabled(CamelEvent event) {
                            return event.getType() == CamelEvent.Type.ExchangeFailed;
                        }
                    });
                }

                @Override
                public void afterStart(BaseMainSupport m) {
                    context.set(m.getCamelContext());
                }
            });
            main.addOverrideProperty("example.progressInterval", "0");
            // every URL taken from the queue at once (the example's default takes 200), so that thousands wait
            main.addOverrideProperty("example.maxInFlight", String.valueOf(URLS));
            int threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();
            CompletableFuture<Integer> running = CompletableFuture.supplyAsync(() -> {
                try {
                    return main.run(new String[0]); // returns once every URL has an outcome
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });

            // the load: three fetched (one token per proxy), every other URL waiting in the bucket
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while ((context.get() == null || run.sent() < URLS || inflight(context.get()) != URLS - 3)
                    && System.nanoTime() < deadline && !running.isDone()) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
            assertThat(site.target().awaitHits(3, 30_000)).isTrue();
            int waiting = inflight(context.get());
            assertThat(waiting).as("exchanges waiting for tokens").isEqualTo(URLS - 3);
            int threadsDuring = ManagementFactory.getThreadMXBean().getThreadCount();

            long stopping = System.nanoTime();
            context.get().getRouteController().stopRoute(ScraperRoute.ROUTE_ID, 5, TimeUnit.SECONDS);
            long stopMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopping);

            // every exchange finished (3 fetched, the others failed), so the application completed by itself
            assertThat(running.get(60, TimeUnit.SECONDS)).as("Camel Main exit code").isZero();
            assertThat(run.failed()).as("exchanges failed by the stop").isEqualTo(URLS - 3);
            assertThat(failures).as("exceptions of the failed exchanges").containsExactly(
                    Map.entry(TokenBucketException.class.getSimpleName(), (long) URLS - 3));
            assertThat(run.stats().fetched()).isEqualTo(3);
            assertThat(site.target().hits()).hasSize(3);
            System.out.printf("[e2e] 6. route stopped with %d exchanges waiting: failed %s, none hanging;"
                    + " stopRoute took %d ms (Camel's graceful wait of 5 s, then our producer fails its waiters);"
                    + " JVM threads %d before Camel started, %d with %d waiting (Camel's own pools, none per"
                    + " waiter)%n", waiting, failures, stopMillis, threadsBefore, threadsDuring, waiting);
        }
    }

    private static int inflight(CamelContext context) {
        return context.getInflightRepository().size(ScraperRoute.ROUTE_ID);
    }
}
