package io.tokenbucket.example;

/**
 * What the pool tells the proxies' buckets when a proxy's health changes: the seam where the component's
 * bucket operations plug in once they exist (a later issue adds a {@code penalize} operation to
 * {@code tokenbucket:}, and {@code remove}). Until then {@link #NONE} is used and the penalty lives in the
 * {@link ProxyPool} alone, which simply stops handing the proxy out.
 *
 * <p>With the operations, a penalty would also hold back the exchanges already waiting in the proxy's
 * bucket, and with {@code store=redis} every instance would see it.
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
