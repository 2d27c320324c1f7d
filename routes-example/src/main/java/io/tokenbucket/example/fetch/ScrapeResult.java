package io.tokenbucket.example.fetch;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.Exchange;
import org.apache.camel.util.json.Jsoner;

/**
 * The one JSON line written per URL: to the results endpoint
 * ({@code {"url":…,"status":200,"bytes":…,"proxy":"p1","waitedMs":…,"attempts":1,"elapsedMs":…}}) or to the
 * dead letter ({@code {"url":…,"reason":…,"proxies":[…],"attempts":…,"elapsedMs":…}}). Proxy ids only: never
 * a proxy URL, so no credential reaches a result.
 */
public final class ScrapeResult {

    private ScrapeResult() {
    }

    /** The line of a fetched URL, with its trailing new line. */
    static String fetched(Exchange exchange, long bytes) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("url", exchange.getProperty(Scrape.URL));
        line.put("status", exchange.getProperty(Scrape.STATUS));
        line.put("bytes", bytes);
        line.put("proxy", exchange.getMessage().getHeader(ProxyStats.PROXY_HEADER));
        line.put("waitedMs", exchange.getProperty(Scrape.WAITED, 0L, Long.class));
        line.put("attempts", exchange.getProperty(Scrape.ATTEMPTS));
        line.put("elapsedMs", elapsedMillis(exchange));
        line.put("fetchMs", TimeUnit.NANOSECONDS.toMillis(System.nanoTime()
                - exchange.getProperty(Scrape.FETCH_NANOS, System.nanoTime(), Long.class)));
        return Jsoner.serialize(line) + "\n";
    }

    /** The line of a URL that failed on every attempt, with its trailing new line. */
    static String dead(Exchange exchange) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("url", exchange.getProperty(Scrape.URL));
        line.put("reason", exchange.getProperty(Scrape.REASON));
        line.put("status", exchange.getProperty(Scrape.STATUS));
        line.put("proxies", List.copyOf(exchange.getProperty(Scrape.TRIED, List.class)));
        line.put("waitedMs", exchange.getProperty(Scrape.WAITED, 0L, Long.class));
        line.put("attempts", exchange.getProperty(Scrape.ATTEMPTS));
        line.put("elapsedMs", elapsedMillis(exchange));
        return Jsoner.serialize(line) + "\n";
    }

    private static long elapsedMillis(Exchange exchange) {
        long start = exchange.getProperty(Scrape.START_NANOS, System.nanoTime(), Long.class);
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }
}
