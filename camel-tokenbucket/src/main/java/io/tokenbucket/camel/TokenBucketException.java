package io.tokenbucket.camel;

import org.apache.camel.CamelException;

/**
 * The base of every exception the {@code tokenbucket:} endpoint sets on an exchange for a rate-limiting
 * outcome, so that one {@code onException(TokenBucketException.class)} routes them all. Thrown as it is when
 * an exchange was still waiting for its tokens when its endpoint stopped (its tokens are refunded).
 */
public class TokenBucketException extends CamelException {

    private static final long serialVersionUID = 1L;

    /** The most characters of one value a message shows. */
    static final int MAX_VALUE_IN_MESSAGE = 64;

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

    /**
     * {@code value} for a message: at most {@value #MAX_VALUE_IN_MESSAGE} characters, then its length; every message
     * of the component shows a value that came from the exchange so (public for the component's own packages).
     */
    public static String shown(Object value) {
        String shown = value instanceof Object[] array ? java.util.Arrays.toString(array) : String.valueOf(value);
        return shown.length() > MAX_VALUE_IN_MESSAGE ? shown.substring(0, MAX_VALUE_IN_MESSAGE) + "... ("
                + shown.length() + " characters)" : shown;
    }
}
