package io.tokenbucket.store.redis;

/**
 * The whole store contract on a standalone Redis again, with batching on ({@code redisBatching=true}): reservations that
 * queue behind a call in flight go as one script call, and every guarantee holds as for single calls.
 */
class RedisBatchedBucketStoreContractTest extends RedisBucketStoreContractTest {

    @Override
    boolean batching() {
        return true;
    }
}
