package io.tokenbucket.example.fetch;

import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.camel.TokenBucketStoreException;
import java.util.function.LongSupplier;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;
import org.apache.camel.processor.errorhandler.RedeliveryPolicy;

/**
 * When a URL that got no token tries the throttle step again, and for how long: the route's error handler's
 * {@code onExceptionOccurred} processor (it runs as the step fails, before Camel computes the redelivery delay) and
 * the {@code retryWhile} of its no-token handler ({@link #retry}). Bound as {@value #BEAN}.
 *
 * <p>A URL refused because its freest proxy's turn is further ahead than {@code example.pairMaxWait}
 * ({@code TokenBucketRejectedException}, nothing consumed) is tried again when that turn comes into reach: after
 * {@link TokenBucketRejectedException#getWaitMillis()} less the max wait, at least {@value #MIN_DELAY_MILLIS} ms and at
 * most {@code example.storeRetryDelay}, with Camel's collision avoidance (15 % either way), so URLs refused together
 * do not return together. Camel's header {@code CamelRedeliveryDelay} carries that delay to the error handler, which
 * schedules the retry (or, for a transacted exchange, waits it on its thread). A store failure
 * ({@code TokenBucketStoreException}) is tried again after {@code example.storeRetryDelay}, also with the jitter.
 *
 * <p>The retries end when the URL has gone {@code example.storeRetries x example.storeRetryDelay} milliseconds
 * without a token since the step first failed: a budget of time, so that shorter delays do not dead-letter a URL
 * sooner. A negative {@code example.storeRetries} retries for ever, as in Camel.
 */
public class NoTokenRetry implements Processor {

    /** The registry name the routes refer to. */
    public static final String BEAN = "noTokenRetry";

    /**
     * The exchange property that holds when the throttle step first failed ({@link System#nanoTime()}); removed once
     * the step has passed ({@link ProxyInUse}, which counts the time in the URL's wait), so the next attempt's budget
     * starts afresh.
     */
    public static final String SINCE = "scrapeNoTokenSince";

    /** The shortest delay before a refused URL tries again, in milliseconds: its turn may be this close to reach. */
    public static final long MIN_DELAY_MILLIS = 10;

    private final long maxWaitMillis;
    private final long budgetMillis;
    private final LongSupplier nanoTime;
    private final RedeliveryPolicy jitter = new RedeliveryPolicy();

    /**
     * @param maxWaitMillis  how far ahead the throttle books a turn ({@code example.pairMaxWait}), milliseconds; 0 when
     *                       unknown (the URL then tries again at its refused turn)
     * @param retries        {@code example.storeRetries}; negative: no end
     * @param delayMillis    {@code example.storeRetryDelay}, milliseconds: the longest delay
     * @param nanoTime       the clock of the budget
     */
    public NoTokenRetry(long maxWaitMillis, long retries, long delayMillis, LongSupplier nanoTime) {
        this.maxWaitMillis = maxWaitMillis;
        this.budgetMillis = budget(retries, delayMillis);
        this.nanoTime = nanoTime;
        jitter.setRedeliveryDelay(delayMillis);
        jitter.setUseCollisionAvoidance(true);
        jitter.setMaximumRedeliveryDelay(0); // no cap but example.storeRetryDelay's own

    }

    /** {@code retries x delayMillis}, or {@link Long#MAX_VALUE} for a negative count or a product past a long. */
    static long budget(long retries, long delayMillis) {
        if (retries < 0 || delayMillis > 0 && retries > Long.MAX_VALUE / delayMillis) {
            return Long.MAX_VALUE;
        }
        return retries * Math.max(0, delayMillis);
    }

    /** How long a URL may go without a token, in milliseconds ({@link Long#MAX_VALUE}: no end). */
    public long budgetMillis() {
        return budgetMillis;
    }

    /**
     * Notes when the step first failed and sets the delay before it is tried again (header
     * {@code CamelRedeliveryDelay}, which Camel's error handler reads in place of its policy's delay): for a refusal,
     * until its turn is in reach; for a store failure, {@code example.storeRetryDelay}, both with Camel's jitter.
     * Other exceptions pass unchanged.
     */
    @Override
    public void process(Exchange exchange) {
        Exception error = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, Exception.class);
        if (!(error instanceof TokenBucketRejectedException) && !(error instanceof TokenBucketStoreException)) {
            return;
        }
        if (exchange.getProperty(SINCE) == null) {
            exchange.setProperty(SINCE, nanoTime.getAsLong());
        }
        // a store failure's delay too: Camel would otherwise start from the last delay this header set
        long delay = error instanceof TokenBucketRejectedException rejected ? delayMillis(rejected.getWaitMillis())
                : jitter.calculateRedeliveryDelay(jitter.getRedeliveryDelay(), 1);
        exchange.getIn().setHeader(Exchange.REDELIVERY_DELAY, delay); // where the error handler reads it
    }

    /**
     * The delay before a URL refused for a turn {@code waitMillis} away tries again: until the turn is within the max
     * wait, from {@value #MIN_DELAY_MILLIS} ms to {@code example.storeRetryDelay}, with Camel's collision avoidance.
     */
    long delayMillis(long waitMillis) {
        long untilInReach = Math.min(jitter.getRedeliveryDelay(),
                Math.max(MIN_DELAY_MILLIS, waitMillis - maxWaitMillis));
        return jitter.calculateRedeliveryDelay(untilInReach, 1);
    }

    /**
     * Whether the step may be tried again: the URL has gone less than the budget without a token (the route's
     * {@code retryWhile}).
     */
    public boolean retry(Exchange exchange) {
        Long since = exchange.getProperty(SINCE, Long.class);
        long waited = since == null ? 0 : (nanoTime.getAsLong() - since) / 1_000_000;
        return budgetMillis == Long.MAX_VALUE || waited < budgetMillis;
    }
}
