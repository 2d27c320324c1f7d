/**
 * The Camel glue of the {@code tokenbucket:} component. Only this package imports Camel.
 *
 * <p>What Camel and its tooling see: {@link io.tokenbucket.camel.TokenBucketComponent},
 * {@link io.tokenbucket.camel.TokenBucketEndpoint} (with the JMX members),
 * {@link io.tokenbucket.camel.TokenBucketConfiguration} (every option, the Redis and adaptive ones grouped in its
 * superclasses), {@link io.tokenbucket.camel.TokenBucketLimitResolver} (per-key limits from a bean),
 * {@link io.tokenbucket.camel.TokenBucketConstants} (the headers) and the exceptions.
 *
 * <p>Behind them, one role per class: {@code TokenBucketRequest} reads one exchange's headers into one record
 * per operation (its key lists through {@code TokenBucketKeyLists}),
 * {@link io.tokenbucket.camel.TokenBucketProducer} decides, {@code TokenBucketWaitQueue} holds the exchanges that
 * wait (of every route, for tokens or a slot), {@code TokenBucketHandOff} says where they continue,
 * {@code TokenBucketExceptions} builds every message from plain values, {@code TokenBucketLimitSource} checks the
 * options and gives each key its limits, and {@code TokenBucketStoreBinding} opens the store. The roles get what they
 * work with as one {@code TokenBucketServices} record, not the endpoint; the endpoint binds the health check and the
 * meters while it runs.
 */
package io.tokenbucket.camel;
