package io.tokenbucket.camel;

/**
 * The bucket store could not answer (for example Redis was unreachable or too slow) and the endpoint's
 * store-error policy is to fail: the exchange was not admitted.
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
