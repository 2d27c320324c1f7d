/**
 * The in-memory store: {@link io.tokenbucket.store.local.LocalBucketStore} turns commands into rate-math steps,
 * and its table of buckets applies them atomically (lock-free for one limit) and sweeps idle buckets without
 * losing a reservation.
 */
package io.tokenbucket.store.local;
