package io.tokenbucket.camel;

import java.util.concurrent.atomic.LongAdder;

/**
 * What an endpoint's exchanges met, counted without locks: the one source of the endpoint's JMX attributes,
 * its dev console entry and its Micrometer meters.
 */
public final class TokenBucketStatistics {

    private final LongAdder admitted = new LongAdder();
    private final LongAdder delayed = new LongAdder();
    private final LongAdder rejected = new LongAdder();
    private final LongAdder storeErrors = new LongAdder();
    private final LongAdder waitNanos = new LongAdder();

    void admitted(long waitedNanos) {
        admitted.increment();
        if (waitedNanos > 0) {
            delayed.increment();
            waitNanos.add(waitedNanos);
        }
    }

    void rejected() {
        rejected.increment();
    }

    void storeError() {
        storeErrors.increment();
    }

    /** Exchanges that got their tokens (at once or after a wait), check mode's allowed ones included. */
    public long getAdmitted() {
        return admitted.sum();
    }

    /** Of the admitted exchanges, those that waited for their tokens. */
    public long getDelayed() {
        return delayed.sum();
    }

    /** Exchanges that did not get their tokens: rejected, over maxWait, or check mode's not allowed. */
    public long getRejected() {
        return rejected.sum();
    }

    /** Exchanges whose store failed to answer (Redis down or too slow), whatever the onStoreError policy. */
    public long getStoreErrors() {
        return storeErrors.sum();
    }

    /** Nanoseconds the delayed exchanges waited, in all. */
    public long getWaitNanos() {
        return waitNanos.sum();
    }

    /** Mean wait of the delayed exchanges in milliseconds, 0 when none waited. */
    public double getMeanWaitMillis() {
        long n = delayed.sum();
        return n == 0 ? 0 : waitNanos.sum() / 1e6 / n;
    }
}
