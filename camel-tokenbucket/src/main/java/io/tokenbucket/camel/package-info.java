/**
 * The Camel glue of the {@code tokenbucket:} component: what Camel, its tooling and applications see. Only this
 * package and its subpackages import Camel.
 *
 * <p>{@link io.tokenbucket.camel.TokenBucketComponent} and {@link io.tokenbucket.camel.TokenBucketEndpoint} (with the
 * JMX members), {@link io.tokenbucket.camel.TokenBucketConfiguration} (every option, the Redis and adaptive ones
 * grouped in its superclasses), {@link io.tokenbucket.camel.TokenBucketLimitResolver} (per-key limits from a bean),
 * {@link io.tokenbucket.camel.TokenBucketConstants} (the headers), the enums, the exceptions,
 * {@link io.tokenbucket.camel.TokenBucketStatistics} (the counters), the dev console and
 * {@link io.tokenbucket.camel.TokenBucketBackPressure}. The component hands each endpoint what its endpoints share
 * ({@code TokenBucketShared}: buckets, connections, timer, worker pool, wait queues).
 *
 * <p>Behind them, by role, packages that are internal to the component: {@code producer} (how an exchange is
 * admitted: read, limited, reserved, made to wait, continued), {@code redis} (opening a Redis store: the only code
 * that loads Lettuce), {@code observe} (the health check and the meters) and {@code syntax} (the text of limits,
 * durations and numeric options). Those packages import this one's options, enums and exceptions, never the
 * component or the endpoint.
 */
package io.tokenbucket.camel;
