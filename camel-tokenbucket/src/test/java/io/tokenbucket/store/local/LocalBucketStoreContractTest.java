package io.tokenbucket.store.local;

import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.BucketStoreContract;

/** The store contract against the local store on the real clock. */
class LocalBucketStoreContractTest extends BucketStoreContract {

    @Override
    protected BucketStore newStore(String namespace) {
        return new LocalBucketStore();
    }
}
