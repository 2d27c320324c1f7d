package io.tokenbucket.example;

import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;

import io.tokenbucket.camel.TokenBucketConstants;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;

/**
 * The step that ends each attempt: classifies what the fetch got, tells the {@link ProxyPool} and the
 * {@link ProxyStats}, and decides whether the URL is done. Bound as {@value #BEAN}.
 *
 * <ul>
 * <li>an answer that is the URL's own (2xx, 3xx, 4xx other than 407/429): done, to the results;</li>
 * <li>a proxy failure (connect error, timeout, 407, 5xx): counts against the proxy's health, retry;</li>
 * <li>429: the proxy rests for {@code Retry-After} (seconds or an HTTP date; {@code defaultPenaltyMillis}
 *     when absent), retry on another proxy;</li>
 * <li>after {@code maxAttempts} attempts without an answer: done, to the dead letter with the reason.</li>
 * </ul>
 */
public class FetchOutcome implements Processor {

    /** The registry name the routes refer to. */
    public static final String BEAN = "fetchOutcome";

    private final ProxyPool pool;
    private final ProxyStats stats;
    private final int maxAttempts;
    private final long defaultPenaltyMillis;

    /**
     * @param pool                 told about each proxy's success, failure or penalty
     * @param stats                counts per proxy
     * @param maxAttempts          attempts per URL before it goes to the dead letter, at least 1
     * @param defaultPenaltyMillis the rest after a 429 without {@code Retry-After}
     */
    public FetchOutcome(ProxyPool pool, ProxyStats stats, int maxAttempts, long defaultPenaltyMillis) {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("example.maxAttempts must be at least 1, was " + maxAttempts);
        }
        this.pool = pool;
        this.stats = stats;
        this.maxAttempts = maxAttempts;
        this.defaultPenaltyMillis = defaultPenaltyMillis;
    }

    @Override
    public void process(Exchange exchange) {
        String proxy = exchange.getMessage().getHeader(ProxyStats.PROXY_HEADER, String.class);
        long waited = exchange.getMessage().getHeader(TokenBucketConstants.WAITED, 0L, Long.class);
        exchange.setProperty(Scrape.WAITED, exchange.getProperty(Scrape.WAITED, 0L, Long.class) + waited);
        Exception error = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, Exception.class);
        Integer status = error == null ? exchange.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE, Integer.class)
                : null;
        exchange.setProperty(Scrape.STATUS, status);

        String failure = null;
        if (error != null || status == null) {
            failure = error == null ? "no response" : describe(error, pool.config(proxy));
            pool.failure(proxy, failure);
            stats.failure(proxy, waited);
        } else if (status == 429) {
            long penalty = retryAfterMillis(exchange.getMessage().getHeader("Retry-After", String.class));
            failure = "HTTP 429 (rests " + penalty + " ms)";
            pool.penalise(proxy, penalty);
            stats.tooManyRequests(proxy, waited);
        } else if (status == 407 || status >= 500) {
            failure = "HTTP " + status;
            pool.failure(proxy, failure);
            stats.failure(proxy, waited);
        } else {
            pool.success(proxy);
            byte[] body = exchange.getMessage().getBody(byte[].class);
            stats.fetched(proxy, waited, body == null ? 0 : body.length);
            exchange.getMessage().setBody(ScrapeResult.fetched(exchange, body == null ? 0 : body.length));
            exchange.setProperty(Scrape.OUTCOME, Scrape.FETCHED);
            exchange.setProperty(Scrape.DONE, true);
            return;
        }
        exchange.setProperty(Scrape.REASON, failure + " via " + proxy);
        if (exchange.getProperty(Scrape.ATTEMPTS, 0, Integer.class) >= maxAttempts) {
            deadLetter(exchange, stats);
        }
    }

    /** Ends the URL in the dead letter: counted, its line (with {@link Scrape#REASON}) as the body, done. */
    static void deadLetter(Exchange exchange, ProxyStats stats) {
        stats.deadLetter();
        exchange.getMessage().setBody(ScrapeResult.dead(exchange));
        exchange.setProperty(Scrape.OUTCOME, Scrape.DEAD);
        exchange.setProperty(Scrape.DONE, true);
    }

    private static String describe(Throwable error, ProxyConfig proxy) {
        // the class and the root cause's message say what happened (connection refused, read timed out); no
        // endpoint URI holds a credential, and the proxy's own password is masked in case a message quotes it
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = root.getClass().getSimpleName() + ": " + root.getMessage();
        return proxy == null ? text : proxy.maskIn(text);
    }

    private long retryAfterMillis(String retryAfter) {
        if (retryAfter == null || retryAfter.isBlank()) {
            return defaultPenaltyMillis;
        }
        try {
            return Math.max(0, Long.parseLong(retryAfter.strip()) * 1000);
        } catch (NumberFormatException notSeconds) {
            try {
                Instant when = ZonedDateTime.parse(retryAfter.strip(), DateTimeFormatter.RFC_1123_DATE_TIME)
                        .toInstant();
                return Math.max(0, when.toEpochMilli() - System.currentTimeMillis());
            } catch (DateTimeParseException neither) {
                return defaultPenaltyMillis;
            }
        }
    }
}
