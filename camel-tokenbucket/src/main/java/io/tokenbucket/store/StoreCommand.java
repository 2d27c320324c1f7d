package io.tokenbucket.store;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Step;

/**
 * One operation on a {@link BucketStore}, as data: the keys it names and the {@link Step} the math decides on them
 * (ticks are nanoseconds). Every acquire (one key, the freest of candidates, all-of keys, candidate groups, fixed or
 * adaptive) and every other operation is this one record, answered with one {@link io.tokenbucket.math.Outcome}.
 *
 * <p>Keys are bounded already ({@link BucketKeys#bound}), in the step's layout: group after group, then the shared
 * keys. Checked on creation: limits for every key, at most {@link BucketStore#MAX_KEYS} keys, no key twice, one key
 * for a peek, penalty, throttled signal or rate; the step checks its amount.
 *
 * @param keys  the keys, one per entry of {@code step.limits()}
 * @param step  what to do on them
 * @param lease the in-flight lease a reservation takes its slots under, and a release or renewal names; null for
 *              none. A store whose slots can outlive their holder (Redis: an instance may die) keeps each slot for the
 *              lease's time unless renewed; the local store, whose slots die with their JVM, ignores it
 */
public record StoreCommand(List<String> keys, Step step, Lease lease) {

    /**
     * The operations on one key only: what a route asks of a bucket (peek, penalize, throttled, rate) names one key,
     * so the stores implement nothing more; the math decides them on any keys.
     */
    private static final Set<Step.Op> ONE_KEY_OPS = java.util.EnumSet.of(Step.Op.PEEK, Step.Op.PENALIZE,
            Step.Op.THROTTLE, Step.Op.RATE);
    private static final java.util.Set<String> STATE_WORDS = java.util.Set.of("r", "s", "q");
    private static final java.util.regex.Pattern LEASE_ID = java.util.regex.Pattern.compile("[A-Za-z0-9._:-]{1,64}");

    /**
     * An in-flight lease: its id, unique among the holders of a store's slots, and how long a slot taken under it
     * lasts without a renewal.
     *
     * @param id     at most 64 characters of letters, digits, {@code - _ . :}, and not one of the words that mark
     *               the parts of a stored state ({@code r}, {@code s}, {@code q}: a slot of lease {@code q} would read
     *               as the start of the waiters' queue, and be lost)
     * @param nanos  the lease time in nanoseconds, from 1 ms to 365 days
     * @param ticketNanos how long a ticket lasts after the try that placed or kept it, in nanoseconds (1 ms to 365
     *               days), or 0 when the lease's reservations take none: a reservation refused for want of a slot
     *               (and accepting a wait) takes a ticket in its keys' queues ({@link io.tokenbucket.math.Waiter}), its
     *               place among the waiters of every instance, which each of its tries renews. One waiter per
     *               instance and key holds one (its first), so queues stay short
     */
    public record Lease(String id, long nanos, long ticketNanos) {

        /** How long a ticket of {@link #withTicket()} lasts after its waiter's last try: 500 ms. */
        public static final long TICKET_NANOS = 500_000_000L;

        /** A lease whose reservations take no ticket. */
        public Lease(String id, long nanos) {
            this(id, nanos, 0);
        }

        /** This lease, its reservations taking a ticket of {@link #TICKET_NANOS}. */
        public Lease withTicket() {
            return ticketNanos > 0 ? this : new Lease(id, nanos, TICKET_NANOS);
        }

        /** Whether its reservations take a ticket. */
        public boolean ticket() {
            return ticketNanos > 0;
        }

        /** The id and times checked. */
        public Lease {
            if (id == null || !LEASE_ID.matcher(id).matches() || STATE_WORDS.contains(id)) {
                throw new IllegalArgumentException("a lease id must be 1 to 64 letters, digits or - _ . :, other than"
                        + " r, s and q, was '" + id + "'");
            }
            if (nanos < 1_000_000 || nanos > BucketStore.MAX_WAIT_NANOS) {
                throw new IllegalArgumentException("a lease time must be from 1 ms to 365 days, was " + nanos
                        + " ns");
            }
            if (ticketNanos != 0 && (ticketNanos < 1_000_000 || ticketNanos > BucketStore.MAX_WAIT_NANOS)) {
                throw new IllegalArgumentException("a ticket time must be 0 or from 1 ms to 365 days, was "
                        + ticketNanos + " ns");
            }
        }
    }

    /** A command without a lease. */
    public StoreCommand(List<String> keys, Step step) {
        this(keys, step, null);
    }

    /** The keys and the step checked together. */
    public StoreCommand {
        if (step.maxWaitTicks() < 0 || step.maxWaitTicks() > BucketStore.MAX_WAIT_NANOS) {
            step = new Step(step.op(), step.groups(), step.limits(), step.amount(),
                    Math.min(Math.max(0, step.maxWaitTicks()), BucketStore.MAX_WAIT_NANOS));
        }
        if (keys.size() != step.keys()) {
            throw new IllegalArgumentException("a command needs limits for every key, was keys " + keys + " with "
                    + step.keys() + " limits");
        }
        if (keys.size() > BucketStore.MAX_KEYS) {
            throw new IllegalArgumentException("an all-of reservation names at most " + BucketStore.MAX_KEYS
                    + " keys, candidates, the keys charged with them and allOf together, was " + keys.size() + " ("
                    + step.groups().length + " candidates, " + (step.shared() - step.groups().length)
                    + " keys charged with them and " + (keys.size() - step.shared()) + " allOf keys)");
        }
        if (keys.size() > 1 && ONE_KEY_OPS.contains(step.op())) {
            throw new IllegalArgumentException(step.op() + " names one key, was keys " + keys);
        }
        if (keys.size() > 1) {
            Set<String> seen = new HashSet<>();
            for (String key : keys) {
                if (!seen.add(key)) {
                    throw new IllegalArgumentException("an all-of reservation names key '" + key + "' twice (keys "
                            + keys + "); each key is charged once");
                }
            }
        }
    }

    /** This command under {@code lease} (null: none). */
    public StoreCommand with(Lease lease) {
        return lease == null ? this : new StoreCommand(keys, step, lease);
    }

    /** {@code op} on one key. */
    public static StoreCommand of(Step.Op op, String key, Limits limits, long amount) {
        return new StoreCommand(List.of(key), Step.of(op, limits, amount));
    }

    /**
     * A reservation of {@code tokens} on one of the candidate groups and on every shared key, as {@link Step} lays
     * them out: all charged, or none.
     *
     * @param groups       the candidate groups, each a candidate followed by the keys charged with it
     * @param groupLimits  the limits of each group's keys, in the same layout
     * @param shared       the keys charged whichever group is chosen, possibly none
     * @param sharedLimits their limits, in the same order
     * @param maxWaitNanos the longest wait accepted: 0 never waits, {@link BucketStore#MAX_WAIT_NANOS} or more any
     *                     wait up to it
     * @throws IllegalArgumentException when the lists and their limits differ in shape, or as the record checks
     */
    public static StoreCommand reserve(List<List<String>> groups, List<List<Limits>> groupLimits, List<String> shared,
                                       List<Limits> sharedLimits, long tokens, long maxWaitNanos) {
        if (groups.size() != groupLimits.size() || shared.size() != sharedLimits.size()) {
            throw new IllegalArgumentException("an all-of reservation needs at least one candidate and limits for"
                    + " every key, was groups " + groups + " and allOf " + shared);
        }
        int[] sizes = new int[groups.size()];
        List<String> keys = new ArrayList<>();
        List<Limits> limits = new ArrayList<>();
        for (int c = 0; c < sizes.length; c++) {
            if (groups.get(c).size() != groupLimits.get(c).size()) {
                throw new IllegalArgumentException("an all-of reservation needs limits for every key, was keys "
                        + groups.get(c) + " with " + groupLimits.get(c).size() + " limits");
            }
            sizes[c] = groups.get(c).size();
            keys.addAll(groups.get(c));
            limits.addAll(groupLimits.get(c));
        }
        keys.addAll(shared);
        limits.addAll(sharedLimits);
        return new StoreCommand(keys, new Step(Step.Op.RESERVE, sizes, limits, tokens, maxWaitNanos));
    }
}
