package io.tokenbucket.example.proxy;

import io.tokenbucket.example.ScraperRoute;

/**
 * What the pool tells the keeper of the (proxy, host) pairs' rests: a pair's penalty, and (with
 * {@code example.adaptive}) that the host refused the pair, nothing else. A pair's rest is kept in one place:
 * <ul>
 * <li>with the throttle, in the pair's bucket: the application uses {@link BucketSteps}, which puts the component's
 *     {@code penalize} and {@code throttled} operations on the exchange for the route to run as steps of
 *     {@link ScraperRoute#THROTTLE}. The throttle's candidate groups hold each pair's key ({@link ProxyChooser}), so
 *     the freest choice passes a resting pair by, a penalty also holds back the exchanges queued on that pair and,
 *     with {@code store=redis}, every instance sees it. The pool keeps no rest beside it (its seam is
 *     {@link #NONE});</li>
 * <li>without the throttle ({@code example.throttle=false}), in the pool's {@link PoolRests}, which the pool
 *     consults ({@link #restingNanos}) so that it hands the proxy out to no URL of that host meanwhile.</li>
 * </ul>
 * Either keeps the longer of a running rest and a new penalty, so a penalty told late or twice never shortens one.
 *
 * <p>Health is not told: a proxy that goes unhealthy, or leaves this instance's proxy file, keeps its bucket.
 * Removing it would hand the proxy a full bucket while the turns booked on the old one are still to come (more
 * requests at the target than the limit allows) and, with Redis, erase a penalty another instance stored. A
 * bucket left alone refills by itself during a cooldown and, once full, expires by itself.
 */
public interface ProxyBuckets {

    /**
     * Keeps nothing: the pool's seam with the throttle, whose pairs' buckets are told per attempt
     * ({@link BucketSteps}), and in unit tests that do not care.
     */
    ProxyBuckets NONE = new ProxyBuckets() {
    };

    /** {@code host} asked this proxy to rest (429 / {@code Retry-After}): the pair rests {@code millis}. */
    default void penalize(String proxyId, String host, long millis) {
    }

    /**
     * {@code host} itself refused this proxy's request (a 429 or 503 it sent, not the proxy's own): with
     * {@code example.adaptive} the pair's adaptive rate is cut (the component's {@code throttled} operation);
     * otherwise nothing.
     */
    default void throttled(String proxyId, String host) {
    }

    /**
     * Nanoseconds until the pair's rest kept here ends: 0 when it does not rest, or when its rest is kept by its
     * bucket, which the throttle itself waits for or passes by.
     */
    default long restingNanos(String proxyId, String host) {
        return 0;
    }

    /** On how many hosts the proxy's pairs rest here now (0 when the rests are kept by the buckets). */
    default int restingHosts(String proxyId) {
        return 0;
    }
}
