package io.tokenbucket.camel;

/**
 * The bucket store could not answer (for example Redis was unreachable or too slow) and the endpoint's
 * store-error policy is to fail, or Redis refused the call (a missing ACL permission, a script error: under every
 * policy): the exchange was not admitted. Also what a Redis endpoint's start fails with when Redis cannot be
 * connected to for a reason other than being unreachable, or refuses what the endpoint needs.
 */
public class TokenBucketStoreException extends TokenBucketException {

    private static final long serialVersionUID = 1L;

    /**
     * @param endpointName the limiter name
     * @param key          the bucket key
     * @param message      the full message
     * @param cause        the store's failure
     */
    public TokenBucketStoreException(String endpointName, String key, String message, Throwable cause) {
        super(endpointName, key, message, cause);
    }
}
