package io.tokenbucket.camel;

/**
 * What a Redis-backed endpoint does when Redis cannot be reached or does not answer within {@code storeTimeout}. Not
 * when Redis answers with a refusal that waiting will not mend (a missing ACL permission, a script error): such an
 * exchange fails with {@link TokenBucketStoreException} under every policy.
 */
public enum TokenBucketStoreErrorPolicy {

    /** The exchange fails with {@link TokenBucketStoreException}: nothing is admitted without a token. */
    fail,

    /** The exchange is admitted without a token, and counted. */
    allow,

    /** The exchange is throttled by a local bucket with the same limits, until Redis answers again. */
    local
}
