/**
 * The pure rate math of a token bucket, written as a reservation ("generic cell rate algorithm").
 *
 * <p>Nothing here knows Camel, Redis or a clock: time is a {@code long} parameter in ticks of whatever unit
 * the caller chose (the local store uses nanoseconds, the Redis script microseconds), and every function
 * returns the next state instead of mutating one. A bucket's whole state is one number, {@code tat}: the
 * instant at which the bucket will be full again. See {@link io.tokenbucket.math.BucketMath}.
 */
package io.tokenbucket.math;
