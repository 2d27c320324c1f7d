package io.tokenbucket.example;

import io.tokenbucket.camel.TokenBucketConstants;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;

/**
 * The step between the proxy's bucket and the (proxy, host) pair's ({@link ScraperRoute#PAIRS}): names the pair
 * in header {@value ScraperRoute#PAIR_HEADER} ({@code "<proxy id> <host key>"}, the proxy the throttle chose and
 * the URL's {@link HostKey}), drops the proxies' candidates and the host's all-of key (else the pair's bucket would
 * choose among them, not take the pair's key, and charge the host again), and keeps the proxy bucket's wait
 * (header {@code CamelTokenBucketWaited}, which the pair's step overwrites) for the attempt's total
 * ({@link FetchOutcome}). Bound as {@value #BEAN}.
 */
public class PairKey implements Processor {

    /** The registry name the routes refer to. */
    public static final String BEAN = "pairKey";

    @Override
    public void process(Exchange exchange) {
        addWaited(exchange);
        exchange.getMessage().removeHeader(TokenBucketConstants.CANDIDATES);
        exchange.getMessage().removeHeader(TokenBucketConstants.ALL_OF); // the host's token is taken already
        exchange.getMessage().setHeader(ScraperRoute.PAIR_HEADER, TokenBucketProxyBuckets.pairKey(
                exchange.getMessage().getHeader(ProxyStats.PROXY_HEADER, String.class),
                exchange.getProperty(Scrape.HOST, String.class)));
    }

    /**
     * Adds the last bucket step's wait (and removes its header, so no later step counts it again) to this
     * attempt's ({@link Scrape#ATTEMPT_WAITED}).
     *
     * @return the attempt's wait so far, in milliseconds
     */
    static long addWaited(Exchange exchange) {
        long waited = exchange.getMessage().getHeader(TokenBucketConstants.WAITED, 0L, Long.class);
        exchange.getMessage().removeHeader(TokenBucketConstants.WAITED);
        long total = exchange.getProperty(Scrape.ATTEMPT_WAITED, 0L, Long.class) + Math.max(0, waited);
        exchange.setProperty(Scrape.ATTEMPT_WAITED, total);
        return total;
    }
}
