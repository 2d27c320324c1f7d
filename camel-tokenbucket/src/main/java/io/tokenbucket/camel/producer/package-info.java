/**
 * How an exchange sent to a {@code tokenbucket:} endpoint is admitted; internal to the component.
 *
 * <p>{@link io.tokenbucket.camel.producer.TokenBucketProducer} decides: {@code TokenBucketRequestReader} reads one
 * exchange's headers into one {@link io.tokenbucket.camel.producer.TokenBucketRequest} per operation (its key lists
 * through {@link io.tokenbucket.camel.producer.TokenBucketKeyLists}),
 * {@link io.tokenbucket.camel.producer.TokenBucketLimitSource} gives each key its limits, the store answers,
 * {@link io.tokenbucket.camel.producer.TokenBucketWaitQueue} holds the exchanges that wait (of every route, for tokens
 * or a slot), {@code TokenBucketLeases} holds the in-flight slots until their exchanges end, and
 * {@link io.tokenbucket.camel.producer.TokenBucketHandOff} says where an exchange continues, on the
 * {@link io.tokenbucket.camel.producer.TokenBucketTimer}'s signal or the store's answer.
 * {@link io.tokenbucket.camel.producer.TokenBucketExceptions} builds the messages from plain values. These parts get
 * what they work with as one {@link io.tokenbucket.camel.producer.TokenBucketServices} record, not the endpoint.
 */
package io.tokenbucket.camel.producer;
