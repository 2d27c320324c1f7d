package io.tokenbucket.camel;

/**
 * The exchange did not get its tokens (or an in-flight slot) and consumed none: in {@code reject} mode because they
 * were not there at once, in {@code delay} mode because they would have taken longer than {@code maxWait}. The message
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
     * @param waitMillis   how long the tokens would have taken to arrive, in milliseconds (rounded up), or when an
     *                     in-flight slot may be free ({@link #getWaitMillis()})
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

    /**
     * How long the tokens would have taken to arrive, in milliseconds (rounded up): after a refusal for them, at
     * least 1. After a refusal for want of an in-flight slot, whose release time nobody knows (it comes when an
     * exchange ends), a hint: the longer of the tokens' wait and the time this endpoint's exchanges typically hold
     * their slots (a moving mean of their hold times in this JVM), at least 1 ms, and 1000 ms before any slot has
     * been given back. Never 0, so a {@code Retry-After} built from it (rounded up to seconds) is never 0.
     */
    public long getWaitMillis() {
        return waitMillis;
    }

    /**
     * {@link #getWaitMillis()} in whole seconds, rounded up, at least 1: the value of an HTTP {@code Retry-After}
     * header.
     */
    public long getRetryAfterSeconds() {
        return Math.max(1, waitMillis / 1000 + (waitMillis % 1000 == 0 ? 0 : 1));
    }
}
