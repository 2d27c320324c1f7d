package io.tokenbucket.camel.producer;

import java.util.concurrent.ExecutorService;
import java.util.function.Supplier;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketStatistics;
import io.tokenbucket.camel.TokenBucketStoreException;
import io.tokenbucket.store.BucketStore;

/**
 * What one endpoint's parts work with, handed to them instead of the endpoint: its limiter name, options, counters,
 * its store, and the component's timer and worker pool (looked up at each use, as the component makes them anew when
 * it starts again).
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 *
 * @param name          the limiter name ({@code tokenbucket:name})
 * @param configuration the endpoint's options
 * @param statistics    the endpoint's counters
 * @param storeBinding  the endpoint's store and what is bound to it while the endpoint runs
 * @param timers        the component's timer, which wakes waiting exchanges and renews leases
 * @param workers       the pool on which exchanges continue after waiting
 * @param handOffs      how an exchange continues there (or on the thread that waits for it)
 * @param onRelease     wakes every queue of waiters under the limiter name: an exchange gave its slots back
 */
public record TokenBucketServices(String name, TokenBucketConfiguration configuration, TokenBucketStatistics statistics,
                                  TokenBucketStoreBinding storeBinding,
                                  Supplier<TokenBucketTimer> timers, Supplier<ExecutorService> workers,
                                  Supplier<TokenBucketHandOff> handOffs, Runnable onRelease) {

    /** The component's timer; null before the component first started, then stopped while it is stopped. */
    TokenBucketTimer timer() {
        return timers.get();
    }

    /** The pool on which exchanges continue after waiting. */
    ExecutorService worker() {
        return workers.get();
    }

    /** How an exchange continues after waiting: on the worker pool, batched, or on the thread that waits for it. */
    TokenBucketHandOff handOff() {
        return handOffs.get();
    }

    /** The buckets of the endpoint's limiter; null before the endpoint first started. */
    BucketStore store() {
        return storeBinding.store();
    }

    /**
     * The exception of an exchange whose store call failed or timed out ({@code onStoreError=fail}), or was refused
     * (under every policy), naming the store without its secrets.
     */
    TokenBucketStoreException storeFailed(Throwable failure) {
        return TokenBucketExceptions.storeFailed(name, storeBinding.description(), storeBinding::redact,
                configuration.getStoreTimeout(), failure);
    }

    /** Wakes the waiters of the limiter name, of every endpoint: an exchange gave its in-flight slots back. */
    public void slotsReleased() {
        onRelease.run();
    }
}
