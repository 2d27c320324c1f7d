package io.tokenbucket.example.fetch;

import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;

/**
 * The dead letter of a URL whose route failed with an exception no other step handles (a bean that throws, a bad
 * header, a bug): without it Camel would log the failure and the URL would have neither a result nor a dead letter.
 * It goes at once, without redelivery (the same step would fail the same way), with the exception's class and
 * message as the reason. Not from a broker, which delivers the URL again before its own dead letter, and not for a
 * {@code TokenBucketException}: a route that stops fails its waiting exchanges with it. Its in-flight slots go back as
 * for any exchange that ends, and the rests its earlier 429s still owe are told ({@link FetchOutcome#ended}). Bound as
 * {@value #BEAN}.
 */
public class RouteFailure implements Processor {

    /** The registry name the routes refer to. */
    public static final String BEAN = "routeFailure";

    private final ProxyStats stats;
    private final FetchOutcome outcome;

    /**
     * @param stats   counts the dead letter
     * @param outcome settles the URL's pending 429s ({@link FetchOutcome#ended})
     */
    public RouteFailure(ProxyStats stats, FetchOutcome outcome) {
        this.stats = stats;
        this.outcome = outcome;
    }

    @Override
    public void process(Exchange exchange) {
        Exception error = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, Exception.class);
        exchange.setProperty(Scrape.REASON, "the route failed: " + (error == null ? "unknown error"
                : error.getClass().getSimpleName() + ": " + error.getMessage()));
        outcome.ended(exchange);
        FetchOutcome.deadLetter(exchange, stats);
    }
}
