/**
 * The pure rate math of a token bucket, written as a reservation ("generic cell rate algorithm").
 *
 * <p>Nothing here knows Camel, Redis or a clock: time is a {@code long} parameter in ticks of whatever unit
 * the caller chose (the local store uses nanoseconds, the Redis script microseconds). Every operation on every
 * shape of keys is one {@link io.tokenbucket.math.Step} decided by one function,
 * {@link io.tokenbucket.math.BucketMath#decide}, which answers one {@link io.tokenbucket.math.Outcome} and the
 * states to store. A limit's whole state is one number, {@code tat}: the instant at which it will be full again.
 */
package io.tokenbucket.math;
