package io.tokenbucket.camel;

/**
 * The exchange did not get its tokens and consumed none: in {@code reject} mode because they were not there
 * at once, in {@code delay} mode because they would have taken longer than {@code maxWait}. The message
 * names the endpoint, the key, the tokens asked for, the limit and the wait.
 *
 * <p>It carries no stack trace: a rejection is an expected outcome, met on the hot path of every exchange over its
 * limit, and its message says all there is (filling a trace cost a walk of the stack and about 2 kB per rejection).
 */
public class TokenBucketRejectedException extends TokenBucketException {

    private static final long serialVersionUID = 1L;

    private final long tokens;
    private final long waitMillis;

    /**
     * @param endpointName the limiter name
     * @param key          the bucket key
     * @param tokens       the tokens asked for
     * @param waitMillis   how long the tokens would have taken to arrive, in milliseconds (rounded up)
     * @param message      the full message
     */
    public TokenBucketRejectedException(String endpointName, String key, long tokens, long waitMillis,
                                        String message) {
        super(endpointName, key, message);
        this.tokens = tokens;
        this.waitMillis = waitMillis;
    }

    /** Leaves the stack trace empty (see the class description). */
    @Override
    public synchronized Throwable fillInStackTrace() {
        return this;
    }

    /** The tokens the exchange asked for. */
    public long getTokens() {
        return tokens;
    }

    /** How long the tokens would have taken to arrive, in milliseconds (rounded up). */
    public long getWaitMillis() {
        return waitMillis;
    }
}
