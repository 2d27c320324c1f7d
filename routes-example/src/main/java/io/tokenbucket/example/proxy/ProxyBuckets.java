package io.tokenbucket.example.proxy;

import io.tokenbucket.example.ScraperRoute;

/**
 * What the pool tells the buckets: a (proxy, host) pair's penalty, and (with {@code example.adaptive}) that the
 * host refused the pair, nothing else. With the throttle the application uses {@link BucketSteps}, which puts the
 * component's {@code penalize} and {@code throttled} operations on the exchange for the route to run as steps of
 * {@link ScraperRoute#THROTTLE}, so a penalty also holds back the exchanges queued on that pair and, with
 * {@code store=redis}, every instance sees it. {@link #NONE} (without the throttle, and in unit tests) leaves
 * the penalty to the {@link ProxyPool} alone, which simply stops handing the proxy out.
 *
 * <p>Health is not told: a proxy that goes unhealthy, or leaves this instance's proxy file, keeps its bucket.
 * Removing it would hand the proxy a full bucket while the turns booked on the old one are still to come (more
 * requests at the target than the limit allows) and, with Redis, erase a penalty another instance stored. A
 * bucket left alone refills by itself during a cooldown and, once full, expires by itself.
 */
public interface ProxyBuckets {

    /** Does nothing: the penalty is kept by the pool only. */
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
}
