package io.tokenbucket.example.fetch;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.camel.TokenBucketStoreException;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The retry of a throttle step that got no token, on a clock of the test's own: a refusal tries again when its turn
 * comes into reach (Camel's 15 % jitter either way, capped by {@code example.storeRetryDelay}), a store failure after
 * {@code example.storeRetryDelay}, and the retries end after {@code example.storeRetries x example.storeRetryDelay}
 * milliseconds without a token, however many tries that took.
 */
class NoTokenRetryTest {

    private static final long MAX_WAIT = 100;
    private static final long DELAY = 500;

    private final CamelContext context = new DefaultCamelContext();
    private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
    private final NoTokenRetry retry = new NoTokenRetry(MAX_WAIT, 130, DELAY, nanos::get);

    @AfterEach
    void stop() throws Exception {
        context.close();
    }

    @Test
    void aRefusedUrlTriesAgainWhenItsTurnComesIntoReachNotAFixedDelayLater() {
        for (int i = 0; i < 200; i++) { // the jitter is random: every draw within its bounds
            // the turn 250 ms away, 150 ms beyond the max wait
            assertThat(delayAfter(refused(250))).isBetween(127L, 173L);
            // a turn just beyond the max wait: the floor, a few ms
            assertThat(delayAfter(refused(MAX_WAIT + 1))).isBetween(8L, 12L);
            // a turn far ahead (a pair resting for a minute): example.storeRetryDelay, as before
            assertThat(delayAfter(refused(60_000))).isBetween(425L, 575L);
            // a store failure: example.storeRetryDelay, whatever a refusal set before on the same exchange
            Exchange exchange = failed(refused(MAX_WAIT + 1));
            retry.process(exchange);
            exchange.setProperty(Exchange.EXCEPTION_CAUGHT, new TokenBucketStoreException("proxies", "p1", "down",
                    null));
            retry.process(exchange);
            assertThat(exchange.getIn().getHeader(Exchange.REDELIVERY_DELAY, Long.class)).isBetween(425L, 575L);
        }
    }

    @Test
    void theJitterSpreadsUrlsRefusedForTheSameTurn() {
        long first = delayAfter(refused(250));
        boolean spread = false;
        for (int i = 0; i < 50 && !spread; i++) {
            spread = delayAfter(refused(250)) != first;
        }
        assertThat(spread).as("50 delays for the same turn all %d ms", first).isTrue();
    }

    @Test
    void theRetriesEndAfterTheBudgetOfTimeNotAfterACountOfTries() {
        // 130 x 500 ms: 65 s without a token, in tries of 10 ms as much as in tries of 500
        Exchange exchange = failed(refused(MAX_WAIT + 1));
        retry.process(exchange);
        for (int i = 0; i < 1000; i++) {
            nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(10));
            retry.process(exchange); // refused again: the budget still counts from the first refusal
            assertThat(retry.retry(exchange)).as("after %d ms", (i + 1) * 10).isTrue();
        }
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(54_999));
        assertThat(retry.retry(exchange)).as("after 64 999 ms").isTrue();
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(1));
        assertThat(retry.retry(exchange)).as("after 65 000 ms").isFalse();
        // the step passed (the route removes the property): the next attempt's refusal has the whole budget again
        exchange.removeProperty(NoTokenRetry.SINCE);
        retry.process(exchange);
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(64_999));
        assertThat(retry.retry(exchange)).isTrue();
    }

    @Test
    void noRetriesEndAtOnceAndNegativeRetriesNever() {
        NoTokenRetry none = new NoTokenRetry(MAX_WAIT, 0, DELAY, nanos::get);
        Exchange exchange = failed(refused(250));
        none.process(exchange);
        assertThat(none.retry(exchange)).isFalse();
        NoTokenRetry forever = new NoTokenRetry(MAX_WAIT, -1, DELAY, nanos::get);
        forever.process(exchange);
        nanos.addAndGet(TimeUnit.DAYS.toNanos(400));
        assertThat(forever.retry(exchange)).isTrue();
        assertThat(forever.budgetMillis()).isEqualTo(Long.MAX_VALUE);
        assertThat(new NoTokenRetry(MAX_WAIT, Long.MAX_VALUE / 2, DELAY, nanos::get).budgetMillis())
                .isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void otherExceptionsPassUnchanged() {
        Exchange exchange = failed(new IllegalStateException("a bug"));
        retry.process(exchange);
        assertThat(exchange.getProperties()).doesNotContainKey(NoTokenRetry.SINCE);
        assertThat(exchange.getIn().getHeaders()).doesNotContainKey(Exchange.REDELIVERY_DELAY);
    }

    private long delayAfter(Exception error) {
        Exchange exchange = failed(error);
        retry.process(exchange);
        return exchange.getIn().getHeader(Exchange.REDELIVERY_DELAY, Long.class);
    }

    private Exchange failed(Exception error) {
        Exchange exchange = new DefaultExchange(context);
        exchange.setProperty(Exchange.EXCEPTION_CAUGHT, error);
        return exchange;
    }

    private static TokenBucketRejectedException refused(long waitMillis) {
        return new TokenBucketRejectedException("proxies", "pair p1 host", 1, waitMillis, "refused");
    }
}
