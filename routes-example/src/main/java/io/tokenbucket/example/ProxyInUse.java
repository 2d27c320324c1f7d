package io.tokenbucket.example;

import java.util.List;

import org.apache.camel.Exchange;
import org.apache.camel.Processor;

/**
 * The step between the throttle and the fetch: reads the proxy id the attempt ended up with (header
 * {@value ProxyStats#PROXY_HEADER}: set by {@link ProxyChooser} in round robin, or by {@code tokenbucket:} when
 * it took the freest of the candidates), counts the attempt and puts the proxy's host, port and credentials on
 * the exchange for the fetch URI. Bound as {@value #BEAN}.
 *
 * <p>A proxy that left the pool while the exchange waited for its token fails the attempt (the route retries
 * it on another proxy) rather than being fetched through without its settings.
 */
public class ProxyInUse implements Processor {

    /** The registry name the routes refer to. */
    public static final String BEAN = "proxyInUse";

    private final ProxyPool pool;

    /** @param pool where the chosen proxy's settings come from */
    public ProxyInUse(ProxyPool pool) {
        this.pool = pool;
    }

    @Override
    public void process(Exchange exchange) {
        // a throttle step that failed (the store was down) and was redelivered by the error handler leaves its
        // exception here although it then succeeded: FetchOutcome must see only this fetch's own failure
        exchange.removeProperty(Exchange.EXCEPTION_CAUGHT);
        exchange.setProperty(Scrape.FETCH_NANOS, System.nanoTime());
        String id = exchange.getMessage().getHeader(ProxyStats.PROXY_HEADER, String.class);
        @SuppressWarnings("unchecked")
        List<String> tried = exchange.getProperty(Scrape.TRIED, List.class);
        tried.add(String.valueOf(id));
        exchange.setProperty(Scrape.ATTEMPTS, tried.size());
        exchange.getMessage().removeHeader(io.tokenbucket.camel.TokenBucketConstants.CANDIDATES);
        ProxyConfig proxy = id == null ? null : pool.config(id);
        if (proxy == null) {
            throw new IllegalStateException("proxy " + id + " left the pool before its fetch");
        }
        exchange.getMessage().setHeader(Exchange.HTTP_URI, exchange.getProperty(Scrape.URL));
        exchange.getMessage().setHeader(Exchange.HTTP_METHOD, "GET");
        exchange.setProperty(Scrape.PROXY_HOST, proxy.host());
        exchange.setProperty(Scrape.PROXY_PORT, proxy.port());
        exchange.setProperty(Scrape.PROXY_USER, proxy.hasCredentials() ? proxy.username() : "");
        exchange.setProperty(Scrape.PROXY_PASSWORD, proxy.hasCredentials() ? proxy.password() : "");
    }
}
