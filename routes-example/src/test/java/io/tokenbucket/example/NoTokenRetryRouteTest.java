package io.tokenbucket.example;

import static io.tokenbucket.example.ScraperHarness.awaitUntil;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.CamelEvent;
import org.apache.camel.support.EventNotifierSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A URL whose freest proxy's turn is further ahead than {@code example.pairMaxWait} tries again when that turn comes
 * into reach, not {@code example.storeRetryDelay} later, and goes to the dead letter after
 * {@code example.storeRetries x example.storeRetryDelay} milliseconds without a token, however many tries that took.
 * One proxy, real servers on loopback, checked at the target.
 */
class NoTokenRetryRouteTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    void aUrlRefusedForATurnTwoSecondsAwayIsFetchedAtThatTurnNotAStoreRetryDelayLater(String dsl) throws Exception {
        // a minute between retries: a URL tried again only after it would miss the harness's 40 s wait
        AtomicInteger redeliveries = new AtomicInteger();
        try (DemoSite site = new DemoSite(dir, 1, "50/1s", 0, new DemoTarget(1000, 1000), DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of("example.pairMaxWait", "100ms",
                     "example.storeRetryDelay", "60000"), context -> countRedeliveries(context, redeliveries))) {
            // the only pair rests 2 s (as after a 429): the URL's turn is 2 s away, beyond the max wait
            scraper.bucketOperation(scraper.pairKey("p1"), "penalize", Map.of(TokenBucketConstants.PENALTY, "2s"));
            long rested = System.nanoTime();
            String page = scraper.pages(1).get(0);
            scraper.scrape(List.of(page));

            assertThat(scraper.resultLines()).singleElement().satisfies(line -> {
                assertThat(line.getString("url")).isEqualTo(page);
                assertThat(line.getString("proxy")).isEqualTo("p1");
            });
            assertThat(scraper.deadLines()).isEmpty();
            assertThat(redeliveries.get()).as("tries again of the throttle step").isPositive();
            // fetched once, and not before the rest ended: the retry booked the turn, it did not skip it
            List<Hit> hits = site.target().hits().stream().filter(h -> h.path().startsWith("/page/")).toList();
            assertThat(hits).singleElement().satisfies(hit -> assertThat(hit.nanos() - rested)
                    .as("ns from the rest to the fetch").isGreaterThan(TimeUnit.MILLISECONDS.toNanos(1500)));
        }
    }

    @Test
    void aUrlThatGetsNoTokenGoesToTheDeadLetterAfterTheBudgetOfTimeNotAfterStoreRetriesTries() throws Exception {
        // one proxy with one in-flight slot, held by a page the target answers after 8 s: another URL is refused
        // (its slot's wait unknown: the component's hint, 1 s) and tries again about every 0.9 s. Its budget is 1 x 2 s
        AtomicInteger redeliveries = new AtomicInteger();
        try (DemoSite site = new DemoSite(dir, 1, "100/1s,1inflight", 0, new DemoTarget(1000, 1000),
                DemoProxy.Mode.KEEPALIVE);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of("example.pairMaxWait", "100ms",
                     "example.storeRetries", "1", "example.storeRetryDelay", "2000",
                     "example.responseTimeout", "20000",
                     // the slow page holds a consumer thread for its fetch: a second one takes the next URL
                     "example.queue", "seda:urls?size=10000&pollTimeout=10&concurrentConsumers=2"),
                     context -> countRedeliveries(context, redeliveries))) {
            String slow = site.target().baseUrl() + "/delay/8000";
            scraper.send(List.of(slow));
            awaitUntil("the slow page at the target", () -> site.target().hits().size(), n -> n == 1,
                    Duration.ofSeconds(20));
            String refused = scraper.pages(1).get(0);
            long sent = System.nanoTime();
            scraper.send(List.of(refused));
            awaitUntil("the refused URL's dead letter", () -> scraper.dead.getReceivedCounter(), n -> n == 1,
                    Duration.ofSeconds(20));
            long deadAfter = System.nanoTime() - sent;

            assertThat(scraper.deadLines()).singleElement().satisfies(line -> {
                assertThat(line.getString("url")).isEqualTo(refused);
                assertThat(line.getString("reason")).startsWith("no token within maxWait for 2000 ms: ");
            });
            // the budget is time: more tries than example.storeRetries, and not a dead letter before 2 s
            assertThat(redeliveries.get()).as("tries again of the throttle step").isGreaterThan(1);
            assertThat(deadAfter).as("ns from sending the URL to its dead letter")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(2000));
            awaitUntil("the slow page's result", () -> scraper.results.getReceivedCounter(), n -> n == 1,
                    Duration.ofSeconds(30));
            assertThat(site.target().hits()).extracting(Hit::path).containsExactly("/delay/8000");
        }
    }

    /** Counts Camel's redelivery events of the context: each a try again of a failed step. */
    private static void countRedeliveries(CamelContext context, AtomicInteger redeliveries) {
        context.getManagementStrategy().addEventNotifier(new EventNotifierSupport() {
            @Override
            public void notify(CamelEvent event) {
                redeliveries.incrementAndGet();
            }

            @Override
            public boolean isEnabled(CamelEvent event) {
                return event instanceof CamelEvent.ExchangeRedeliveryEvent;
            }
        });
    }
}
