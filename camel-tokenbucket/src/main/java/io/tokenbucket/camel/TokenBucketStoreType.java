package io.tokenbucket.camel;

/** Where an endpoint keeps its buckets. */
public enum TokenBucketStoreType {

    /** In this JVM's memory: one limit per Camel instance. */
    local
}
