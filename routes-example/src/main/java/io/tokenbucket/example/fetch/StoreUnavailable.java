package io.tokenbucket.example.fetch;

import io.tokenbucket.camel.TokenBucketStoreException;
import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;

/**
 * The dead letter of a URL that got no token: the bucket store (Redis) kept failing (with
 * {@code camel.component.tokenbucket.on-store-error=fail}, the default, {@code tokenbucket:} admits nothing without a
 * token and fails the exchange with {@code TokenBucketStoreException}), or, with the component's {@code maxWait},
 * its proxies stayed booked further ahead than that ({@code TokenBucketRejectedException}). The route's error handler
 * redelivers it to the throttle ({@link NoTokenRetry}) until it has gone {@code example.storeRetries x
 * example.storeRetryDelay} milliseconds without a token, and only then calls this step, which writes the URL's
 * dead-letter line with the store's error as the reason. The proxies are not blamed: a store failure is nobody's
 * health. The URL's attempts are over, so the rests its earlier 429s still owe are told ({@link FetchOutcome#ended}).
 * Bound as {@value #BEAN}.
 */
public class StoreUnavailable implements Processor {

    /** The registry name the routes refer to. */
    public static final String BEAN = "storeUnavailable";

    private final ProxyStats stats;
    private final long budgetMillis;
    private final FetchOutcome outcome;

    /**
     * @param stats        counts the dead letter
     * @param budgetMillis how long the error handler tried the throttle again ({@link NoTokenRetry#budgetMillis})
     * @param outcome      settles the URL's pending 429s ({@link FetchOutcome#ended})
     */
    public StoreUnavailable(ProxyStats stats, long budgetMillis, FetchOutcome outcome) {
        this.stats = stats;
        this.budgetMillis = budgetMillis;
        this.outcome = outcome;
    }

    @Override
    public void process(Exchange exchange) {
        Exception error = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, Exception.class);
        String what = error instanceof TokenBucketStoreException ? "bucket store unavailable"
                : "no token within maxWait";
        exchange.setProperty(Scrape.REASON, what + " for " + budgetMillis + " ms: "
                // the component's own message: it shows the Redis URI rebuilt without credentials, never the password
                + (error == null ? "unknown error" : String.valueOf(error.getMessage())));
        outcome.ended(exchange);
        FetchOutcome.deadLetter(exchange, stats);
    }
}
