package io.tokenbucket.math;

/**
 * A reservation's place among the waiters for in-flight slots ({@link BucketMath#decide}). A key with an in-flight
 * limit keeps the <em>tickets</em> of the waiters for its slots, in arrival order: a key is full for a reservation
 * when its held slots and the tickets ahead of the reservation's own (all of them, when it has none) reach the limit,
 * so a freed slot goes to the oldest waiter, not to whoever asks first.
 *
 * @param id     the reservation's id (its lease's), never null
 * @param ticket whether a refusal for want of a slot (of a reservation that accepts a wait) takes a ticket on each of
 *               its keys with an in-flight limit, or keeps the one it holds there in its place
 */
public record Waiter(String id, boolean ticket) {

    /** The id checked. */
    public Waiter {
        if (id == null) {
            throw new IllegalArgumentException("a waiter needs an id");
        }
    }
}
