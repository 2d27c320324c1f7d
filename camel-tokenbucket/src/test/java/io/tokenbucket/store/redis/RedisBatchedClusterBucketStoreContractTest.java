package io.tokenbucket.store.redis;

/**
 * The whole store contract on a Redis Cluster again, with batching on ({@code redisBatching=true}): reservations that
 * queue behind a call in flight go as one script call, and every guarantee holds as for single calls.
 */
class RedisBatchedClusterBucketStoreContractTest extends RedisClusterBucketStoreContractTest {

    @Override
    boolean batching() {
        return true;
    }
}
