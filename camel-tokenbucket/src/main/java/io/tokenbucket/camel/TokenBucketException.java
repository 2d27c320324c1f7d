package io.tokenbucket.camel;

import org.apache.camel.CamelException;

/**
 * The base of every exception the {@code tokenbucket:} endpoint sets on an exchange for a rate-limiting
 * outcome, so that one {@code onException(TokenBucketException.class)} routes them all. Thrown as it is when
 * an exchange was still waiting for its tokens when its endpoint stopped (its tokens are refunded).
 */
public class TokenBucketException extends CamelException {

    private static final long serialVersionUID = 1L;

    private final String endpointName;
    private final String key;

    /**
     * @param endpointName the limiter name ({@code tokenbucket:name})
     * @param key          the bucket key, as the exchange sent it
     * @param message      the full message
     */
    public TokenBucketException(String endpointName, String key, String message) {
        super(message);
        this.endpointName = endpointName;
        this.key = key;
    }

    /**
     * @param endpointName the limiter name ({@code tokenbucket:name})
     * @param key          the bucket key, as the exchange sent it
     * @param message      the full message
     * @param cause        the underlying failure
     */
    public TokenBucketException(String endpointName, String key, String message, Throwable cause) {
        super(message, cause);
        this.endpointName = endpointName;
        this.key = key;
    }

    /** The limiter name of the endpoint, the {@code name} of {@code tokenbucket:name}. */
    public String getEndpointName() {
        return endpointName;
    }

    /** The bucket key of the exchange, as it sent it (the message shows at most its first 64 characters). */
    public String getKey() {
        return key;
    }
}
