package io.tokenbucket.camel;

/** What a Redis-backed endpoint does when Redis fails or does not answer within {@code storeTimeout}. */
public enum TokenBucketStoreErrorPolicy {

    /** The exchange fails with {@link TokenBucketStoreException}: nothing is admitted without a token. */
    fail,

    /** The exchange is admitted without a token, and counted. */
    allow,

    /** The exchange is throttled by a local bucket with the same limits, until Redis answers again. */
    local
}
