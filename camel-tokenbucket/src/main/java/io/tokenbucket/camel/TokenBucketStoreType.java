package io.tokenbucket.camel;

/** Where an endpoint keeps its buckets. */
public enum TokenBucketStoreType {

    /** In this JVM's memory: one limit per Camel instance. */
    local,

    /** In Redis: one limit shared by every Camel instance that uses the same Redis and key prefix. */
    redis
}
