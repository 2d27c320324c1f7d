package io.tokenbucket.store;

/**
 * A store's answer to a reservation or a peek.
 *
 * @param granted   true when the tokens are reserved (the caller proceeds after {@code waitNanos}); false when
 *                  the wait exceeded the caller's maximum and nothing was consumed
 * @param waitNanos nanoseconds until the tokens are there (the wait to observe when granted, the refused wait
 *                  otherwise)
 * @param remaining whole tokens left in the bucket after this answer, never negative
 */
public record Reservation(boolean granted, long waitNanos, long remaining) {
}
