package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import io.tokenbucket.example.demo.DemoSite;
import org.apache.camel.component.seda.SedaEndpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code example.maxInFlight}: past it the route's policy suspends the queue's consumer, so the URLs beyond it stay
 * in the queue until URLs in flight are done, and every URL is fetched. Sampled by a thread of the test from Camel's
 * in-flight repository and the seda queue.
 */
class MaxInFlightTest {

    private static final int URLS = 80;
    private static final int MAX_IN_FLIGHT = 10;
    private static final int CONSUMERS = 4;
    private static final String QUEUE = "seda:urls?size=10000&concurrentConsumers=" + CONSUMERS + "&pollTimeout=10";

    @TempDir
    Path dir;

    @Test
    void urlsPastTheBoundStayInTheQueueAndAllAreFetched() throws Exception {
        try (DemoSite site = new DemoSite(dir, 1, "20/1s", 0, 1_000_000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.maxInFlight",
                     String.valueOf(MAX_IN_FLIGHT), "example.queue", QUEUE))) {
            SedaEndpoint queue = scraper.context.getEndpoint(QUEUE, SedaEndpoint.class);
            AtomicInteger mostInFlight = new AtomicInteger();
            AtomicInteger queuedAtTheBound = new AtomicInteger();
            Thread sampler = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    int inFlight = scraper.context.getInflightRepository().size(ScraperRoute.ROUTE_ID);
                    mostInFlight.accumulateAndGet(inFlight, Math::max);
                    if (inFlight >= MAX_IN_FLIGHT) {
                        queuedAtTheBound.accumulateAndGet(queue.getCurrentQueueSize(), Math::max);
                    }
                    LockSupport.parkNanos(100_000);
                }
            });
            sampler.start();
            List<String> urls = scraper.pages(URLS);
            long start = System.nanoTime();
            try {
                scraper.scrape(urls);
            } finally {
                sampler.interrupt();
                sampler.join();
            }
            System.out.printf("maxInFlight %d: %d URLs in %d ms, at most %d in flight, %d left in the queue at the"
                    + " bound%n", MAX_IN_FLIGHT, URLS, (System.nanoTime() - start) / 1_000_000, mostInFlight.get(),
                    queuedAtTheBound.get());

            assertThat(scraper.resultLines()).hasSize(URLS);
            assertThat(site.target().hits()).hasSize(URLS);
            // the queue's consumers may each pass the bound once before the first of them suspends it
            assertThat(mostInFlight.get()).as("most URLs in flight").isBetween(MAX_IN_FLIGHT, MAX_IN_FLIGHT + CONSUMERS);
            assertThat(queuedAtTheBound.get()).as("most URLs left in the queue at the bound").isGreaterThan(URLS / 4);
        }
    }
}
