package io.tokenbucket.camel;

/** What the endpoint does with an exchange whose tokens are not there yet. */
public enum TokenBucketMode {

    /** Wait until the tokens are there (up to {@code maxWait}), holding no thread while waiting. */
    delay,

    /** Never wait: fail the exchange with {@link TokenBucketRejectedException}, consuming nothing. */
    reject,

    /**
     * Never wait, never fail: set header {@code CamelTokenBucketAllowed} (true consumes the tokens, false
     * consumes nothing) and continue.
     */
    check
}
