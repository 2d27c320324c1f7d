package io.tokenbucket.example.fetch;

import java.util.ArrayList;

import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;

/**
 * The first step of every URL, before any proxy or token: sets up its bookkeeping and checks the URL
 * ({@link TargetUrl}). A URL that is not fetched (not http or https, no host, unparsable, credentials in it, too
 * long) goes straight to the dead letter with the reason and 0 attempts: no proxy is chosen, no token taken, no
 * request made. Bound as {@value #BEAN}.
 */
public class ScrapeStart implements Processor {

    /** The registry name the routes refer to. */
    public static final String BEAN = "scrapeStart";

    private final ProxyStats stats;

    /** @param stats counts the dead letters */
    public ScrapeStart(ProxyStats stats) {
        this.stats = stats;
    }

    @Override
    public void process(Exchange exchange) {
        String given = exchange.getMessage().getBody(String.class);
        exchange.setProperty(Scrape.START_NANOS, System.nanoTime());
        exchange.setProperty(Scrape.ATTEMPTS, 0);
        exchange.setProperty(Scrape.TRIED, new ArrayList<String>());
        exchange.setProperty(Scrape.WAITED, 0L);
        try {
            TargetUrl target = TargetUrl.parse(given);
            exchange.setProperty(Scrape.URL, target.given());
            String host;
            try {
                host = HostKey.of(target);
            } catch (IllegalArgumentException e) {
                throw new TargetUrl.Refused(e.getMessage(), target.given());
            }
            exchange.setProperty(Scrape.TARGET, target);
            exchange.setProperty(Scrape.HOST, host);
        } catch (TargetUrl.Refused refused) {
            exchange.setProperty(Scrape.URL, refused.shown());
            exchange.setProperty(Scrape.REASON, "not fetched: " + refused.getMessage());
            FetchOutcome.deadLetter(exchange, stats);
        }
    }
}
