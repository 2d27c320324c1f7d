package io.tokenbucket.example.fetch;

import java.util.List;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.example.proxy.ProxyClient;
import io.tokenbucket.example.proxy.ProxyClients;
import io.tokenbucket.example.proxy.ProxyConfig;
import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;

/**
 * The step between the throttle and the fetch: reads the proxy id the attempt ended up with (header
 * {@value ProxyStats#PROXY_HEADER}: set by {@link ProxyChooser} in round robin, or by {@code tokenbucket:} when
 * it took the freest of the candidates), notes it and the attempt's wait ({@link Scrape#PROXY}), counts the
 * attempt, names the proxy's {@link ProxyClient} for the fetch
 * URI (property {@value Scrape#PROXY_CLIENT}) and gives camel-http the URL: header {@code CamelHttpUri} (scheme,
 * host, path) and {@code CamelHttpRawQuery} (the URL's own query), see {@link TargetUrl}. Bound as {@value #BEAN}.
 *
 * <p>It runs between the token and the request, so it only reads what was prepared before: the client and its
 * endpoint exist already ({@link ProxyClients}), the URL was encoded by {@link ScrapeStart}.
 *
 * <p>A proxy that left the pool while the exchange waited for its token fails the attempt (the route retries
 * it on another proxy) rather than being fetched through without its settings.
 */
public class ProxyInUse implements Processor {

    /** The registry name the routes refer to. */
    public static final String BEAN = "proxyInUse";

    private final ProxyPool pool;
    private final ProxyClients clients;

    /**
     * @param pool    where the chosen proxy's settings come from
     * @param clients the proxies' HttpClient set-ups
     */
    public ProxyInUse(ProxyPool pool, ProxyClients clients) {
        this.pool = pool;
        this.clients = clients;
    }

    @Override
    public void process(Exchange exchange) {
        // a throttle step that failed (the store was down) and was redelivered by the error handler leaves its
        // exception here although it then succeeded: FetchOutcome must see only this fetch's own failure
        exchange.removeProperty(Exchange.EXCEPTION_CAUGHT);
        exchange.setProperty(Scrape.FETCH_NANOS, System.nanoTime());
        String id = exchange.getMessage().getHeader(ProxyStats.PROXY_HEADER, String.class);
        // the throttle's wait of this attempt, for its proxy, pair and host together (0 without the throttle), after
        // the time it went without a token before the step passed (NoTokenRetry), which starts afresh
        Long since = exchange.getProperty(NoTokenRetry.SINCE, Long.class);
        exchange.removeProperty(NoTokenRetry.SINCE);
        long waited = Math.max(0, exchange.getMessage().getHeader(TokenBucketConstants.WAITED, 0L, Long.class))
                + (since == null ? 0 : Math.max(0, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since)));
        exchange.setProperty(Scrape.PROXY, id);
        exchange.setProperty(Scrape.ATTEMPT_WAITED, waited);
        exchange.setProperty(Scrape.WAITED, exchange.getProperty(Scrape.WAITED, 0L, Long.class) + waited);
        @SuppressWarnings("unchecked")
        List<String> tried = exchange.getProperty(Scrape.TRIED, List.class);
        tried.add(String.valueOf(id));
        exchange.setProperty(Scrape.ATTEMPTS, tried.size());
        exchange.getMessage().removeHeader(TokenBucketConstants.CANDIDATES);
        ProxyConfig proxy = id == null ? null : pool.config(id);
        String client = proxy == null ? null : clients.nameOf(proxy);
        if (client == null) {
            throw new IllegalStateException("proxy " + id + " left the pool before its fetch");
        }
        exchange.setProperty(Scrape.PROXY_CLIENT, client);
        TargetUrl target = exchange.getProperty(Scrape.TARGET, TargetUrl.class);
        exchange.getMessage().setHeader(Exchange.HTTP_URI, target.base());
        if (target.rawQuery() != null) {
            // the raw query wins over CamelHttpQuery and over the endpoint URI's own query, and is not decoded
            exchange.getMessage().setHeader(Exchange.HTTP_RAW_QUERY, target.rawQuery());
        }
        exchange.getMessage().setHeader(Exchange.HTTP_METHOD, "GET");
    }
}
