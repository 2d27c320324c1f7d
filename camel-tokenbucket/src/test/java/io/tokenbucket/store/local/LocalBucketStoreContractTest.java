package io.tokenbucket.store.local;

import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.BucketStoreContract;

/** The store contract against the local store on the real clock. */
class LocalBucketStoreContractTest extends BucketStoreContract {

    @Override
    protected BucketStore newStore(String namespace) {
        return new LocalBucketStore();
    }

    /** Each local store keeps its own buckets: there is no second instance on the same state. */
    @Override
    public BucketStore anotherInstance() {
        return null;
    }
}
