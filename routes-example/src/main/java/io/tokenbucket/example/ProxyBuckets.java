package io.tokenbucket.example;

/**
 * What the pool tells the proxies' buckets when a proxy's health changes. The application uses
 * {@link TokenBucketProxyBuckets}, which sends the component's {@code penalize} and {@code remove} bucket
 * operations to the throttle endpoint, so a penalty also holds back the exchanges queued on the proxy's bucket
 * and, with {@code store=redis}, every instance sees it. {@link #NONE} (without the throttle, and in unit tests)
 * leaves the penalty to the {@link ProxyPool} alone, which simply stops handing the proxy out.
 */
public interface ProxyBuckets {

    /** Does nothing: the penalty and the health are kept by the pool only. */
    ProxyBuckets NONE = new ProxyBuckets() {
    };

    /** The target asked this proxy to rest (429 / {@code Retry-After}) for {@code millis}. */
    default void penalize(String proxyId, long millis) {
    }

    /** The proxy became unhealthy or left the pool: its bucket state is no longer worth keeping. */
    default void remove(String proxyId) {
    }
}
