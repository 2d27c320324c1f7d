package io.tokenbucket.example.proxy;


/**
 * What the pool tells the keeper of the (proxy, host) pairs' rests: a pair's penalty, and (with
 * {@code example.adaptive}) that the host refused the pair, nothing else. A pair's rest is kept where the choice of
 * a proxy reads it:
 * <ul>
 * <li>with the freest choice (the throttle's, the default), in the pair's bucket alone: the application uses
 *     {@link BucketSteps}, which puts the component's {@code penalize} and {@code throttled} operations on the
 *     exchange for the route to run as steps of {@code ScraperRoute.THROTTLE}. The throttle's candidate groups hold
 *     each pair's key ({@code ProxyChooser}), so the freest choice passes a resting pair by, a penalty also holds
 *     back the exchanges queued on that pair and, with {@code store=redis}, every instance sees it. The pool keeps
 *     no rest beside it (its seam is {@link #NONE});</li>
 * <li>when the pool chooses in turn (round robin, always without the throttle), in the pool's {@link PoolRests},
 *     which the pool consults ({@link #restingNanos}) so that its turn skips the pair for that host meanwhile;
 *     with the throttle the pair's bucket is told too ({@link #and}), for the other instances and the turns
 *     booked.</li>
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

    /**
     * Tells this and {@code also} every penalty and cut; the rests are {@code also}'s. This itself when
     * {@code also} is {@link #NONE}. With round robin and the throttle the pool keeps the rests its turn skips
     * ({@link PoolRests}) while the pair's bucket is told too ({@link BucketSteps}), for the other instances.
     */
    default ProxyBuckets and(ProxyBuckets also) {
        if (also == NONE) {
            return this;
        }
        ProxyBuckets first = this;
        return new ProxyBuckets() {
            @Override
            public void penalize(String proxyId, String host, long millis) {
                first.penalize(proxyId, host, millis);
                also.penalize(proxyId, host, millis);
            }

            @Override
            public void throttled(String proxyId, String host) {
                first.throttled(proxyId, host);
                also.throttled(proxyId, host);
            }

            @Override
            public long restingNanos(String proxyId, String host) {
                return also.restingNanos(proxyId, host);
            }

            @Override
            public int restingHosts(String proxyId) {
                return also.restingHosts(proxyId);
            }
        };
    }
}
