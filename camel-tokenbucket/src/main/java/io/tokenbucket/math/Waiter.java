package io.tokenbucket.math;

import java.util.Arrays;

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

    /**
     * Whether a key of {@code limits} holding {@code slots} in-flight slots has none free for {@code waiter}: its
     * slots and the tickets ahead of the waiter's reach the limit.
     */
    static boolean full(Limits limits, long slots, String[] tickets, Waiter waiter) {
        return limits.inFlight() > 0 && slots + ahead(tickets, waiter) >= limits.inFlight();
    }

    /** The tickets ahead of {@code waiter}'s own: all of them when it holds none (or is null). */
    private static int ahead(String[] tickets, Waiter waiter) {
        if (tickets == null) {
            return 0;
        }
        for (int j = 0; waiter != null && j < tickets.length; j++) {
            if (tickets[j].equals(waiter.id())) {
                return j;
            }
        }
        return tickets.length;
    }

    /**
     * The tickets without {@code id}'s; with it at its place (or last, when it held none) when {@code place} is true.
     * The very array given when nothing changes; null for none.
     */
    static String[] queued(String[] tickets, String id, boolean place) {
        int at = -1;
        for (int j = 0; tickets != null && j < tickets.length; j++) {
            if (tickets[j].equals(id)) {
                at = j;
            }
        }
        if (at < 0 && !place) {
            return tickets;
        }
        int n = tickets == null ? 0 : tickets.length;
        if (place) {
            String[] next = Arrays.copyOf(tickets == null ? new String[0] : tickets, at < 0 ? n + 1 : n);
            next[at < 0 ? n : at] = id;
            return next;
        }
        String[] next = new String[n - 1];
        System.arraycopy(tickets, 0, next, 0, at);
        System.arraycopy(tickets, at + 1, next, at, n - at - 1);
        return next.length == 0 ? null : next;
    }
}
