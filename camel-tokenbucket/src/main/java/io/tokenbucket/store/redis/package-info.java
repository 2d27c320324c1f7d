/**
 * The Redis store: every bucket operation is one {@code EVALSHA} of a generic Lua script
 * ({@code bucket.lua}, the same math as {@link io.tokenbucket.math.BucketMath}) that runs on the Redis clock,
 * so many Camel instances share one exact limit per key. Lettuce is the client; its classes are only loaded
 * when an endpoint uses {@code store=redis}.
 */
package io.tokenbucket.store.redis;
