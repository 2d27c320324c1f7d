package io.tokenbucket.example.fetch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.example.proxy.PoolRests;
import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxySource;
import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A host's 429 that cut the pair's adaptive rate does not spend one of the URL's {@code example.maxAttempts}, up
 * to that many such 429s; every other 429 does. Plain exchanges, a fake clock.
 */
class RateSearchAttemptsTest {

    private static final RetryAfter RETRY_AFTER = new RetryAfter(1_000, 60_000,
            Clock.fixed(Instant.parse("2025-06-01T12:00:00Z"), ZoneOffset.UTC));

    private final AtomicLong nanos = new AtomicLong(1_000);
    private final ProxyPool pool = new ProxyPool(ProxySource.text("http://h:1 id=p1"), 3, 5_000,
            new PoolRests(nanos::get), nanos::get);
    private final CamelContext context = new DefaultCamelContext();

    @AfterEach
    void close() throws Exception {
        context.close();
    }

    @Test
    void withTheAdaptiveRateMaxAttemptsMore429sThatCutTheRateAreFree() {
        FetchOutcome outcome = new FetchOutcome(pool, new ProxyStats(), 2, RETRY_AFTER, true);
        Exchange url = newUrl();
        for (int attempt = 1; attempt <= 3; attempt++) {
            outcome.process(refused(url, null));
            assertThat(url.getProperty(Scrape.DONE)).as("after attempt %d", attempt).isNull();
        }
        outcome.process(refused(url, null));
        assertThat(url.getProperty(Scrape.OUTCOME)).as("2 attempts spent, 2 free").isEqualTo(Scrape.DEAD);
        assertThat(url.getProperty(Scrape.REASON)).isEqualTo("HTTP 429 (rate cut) via p1");
    }

    @Test
    void a429WithoutACutSpendsAnAttempt() {
        // without the adaptive rate nothing is cut
        FetchOutcome fixed = new FetchOutcome(pool, new ProxyStats(), 2, RETRY_AFTER, false);
        Exchange url = newUrl();
        fixed.process(refused(url, null));
        fixed.process(refused(url, null));
        assertThat(url.getProperty(Scrape.OUTCOME)).isEqualTo(Scrape.DEAD);
        // the proxy's own 429 (Proxy-Status) cuts nothing either
        FetchOutcome adaptive = new FetchOutcome(pool, new ProxyStats(), 2, RETRY_AFTER, true);
        Exchange own = newUrl();
        adaptive.process(refused(own, "p1; error=http_request_error"));
        adaptive.process(refused(own, "p1; error=http_request_error"));
        assertThat(own.getProperty(Scrape.OUTCOME)).isEqualTo(Scrape.DEAD);
    }

    private Exchange newUrl() {
        Exchange exchange = new DefaultExchange(context);
        exchange.setProperty(Scrape.URL, "http://target/page");
        exchange.setProperty(Scrape.HOST, "target");
        exchange.setProperty(Scrape.TRIED, new ArrayList<String>());
        return exchange;
    }

    /** The URL's next attempt, through p1, answered 429 without Retry-After ({@code proxyStatus}: the proxy's). */
    private static Exchange refused(Exchange url, String proxyStatus) {
        url.getMessage().removeHeaders("*");
        @SuppressWarnings("unchecked")
        List<String> tried = url.getProperty(Scrape.TRIED, List.class);
        tried.add("p1");
        url.setProperty(Scrape.ATTEMPTS, tried.size());
        url.setProperty(Scrape.PROXY, "p1");
        url.getMessage().setHeader(Exchange.HTTP_RESPONSE_CODE, 429);
        url.getMessage().setHeader("Via", "1.1 p1");
        if (proxyStatus != null) {
            url.getMessage().setHeader("Proxy-Status", proxyStatus);
        }
        return url;
    }
}
