/**
 * Where buckets live: one small asynchronous interface, {@link io.tokenbucket.store.BucketStore}, with a
 * local (in-memory) implementation and, in its own package, a Redis one. A store holds the buckets of one
 * limiter (one endpoint name); it applies {@link io.tokenbucket.math.BucketMath} atomically per key and
 * knows nothing of Camel. Every operation is a {@link io.tokenbucket.store.StoreCommand} sent through the
 * store's one method, {@link io.tokenbucket.store.BucketStore#execute}, and answered with one
 * {@link io.tokenbucket.math.Outcome}.
 */
package io.tokenbucket.store;
