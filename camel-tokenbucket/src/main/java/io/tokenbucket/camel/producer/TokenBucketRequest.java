package io.tokenbucket.camel.producer;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Stream;

import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketKeys;

/**
 * What one exchange asks of its endpoint: one type per operation (header {@code CamelTokenBucketOperation}, default
 * {@code acquire}), each holding what that operation needs and nothing else, read from the exchange's headers by
 * {@link TokenBucketRequestReader}.
 *
 * <p>Every key is resolved once, as the request is read ({@link Key}): limits are decided on the key as sent, and
 * only the form the store keeps ({@link BucketKeys#bound}) is bounded. Costs are in tokens: from 1 to the smallest
 * capacity of the keys charged, for a refund from 1 up.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public sealed interface TokenBucketRequest {

    /** The bucket of exchanges without a key when the endpoint does not require one. */
    String DEFAULT_KEY = "";

    /**
     * A key resolved: as the exchange sent it (what limits and messages use), as the store keeps it, and its limits.
     */
    record Key(String sent, String stored, Limits limits) {

        /** {@code sent}, bounded for the store, with the limits {@code limitsOf} gives it. */
        public static Key of(String sent, Function<String, Limits> limitsOf) {
            return new Key(sent, BucketKeys.bound(sent), limitsOf.apply(sent));
        }

        /** The sent forms of {@code keys}, in order. */
        static List<String> sent(List<Key> keys) {
            return keys.stream().map(Key::sent).toList();
        }

        /** The stored forms of {@code keys}, in order. */
        static List<String> stored(List<Key> keys) {
            return keys.stream().map(Key::stored).toList();
        }

        /** The limits of {@code keys}, in order. */
        static List<Limits> limits(List<Key> keys) {
            return keys.stream().map(Key::limits).toList();
        }

        /** The smallest capacity of {@code keys}; {@link Long#MAX_VALUE} when there is none. */
        static long smallestCapacity(List<Key> keys) {
            long capacity = Long.MAX_VALUE;
            for (int i = 0; i < keys.size(); i++) { // no iterator: asked by every acquire, mostly of no keys
                capacity = Math.min(capacity, keys.get(i).limits().capacity());
            }
            return capacity;
        }
    }

    /** A candidate of an {@link AcquireAny}: its key and the keys charged with it (its group; often none). */
    record Candidate(Key key, List<Key> with) {

        /** The candidate's key, then the keys charged with it: its group as the store lays it out. */
        List<Key> group() {
            List<Key> group = new ArrayList<>(1 + with.size());
            group.add(key);
            group.addAll(with);
            return group;
        }
    }

    /**
     * Acquire {@code tokens} on {@code key} and on every one of {@code allOf} (header {@code CamelTokenBucketAllOf},
     * else the {@code allOf} option, without {@code key}; empty when none), in one store step.
     */
    record Acquire(Key key, List<Key> allOf, long tokens) implements TokenBucketRequest {

        /** The refund that gives this acquire's tokens back to every key it charged. */
        Refund refund() {
            return new Refund(key, allOf, tokens);
        }
    }

    /**
     * Acquire {@code tokens} on the freest of {@code candidates} (header {@code CamelTokenBucketCandidates}, distinct,
     * in their order), with the keys charged with it and {@code allOf}, in one store step.
     */
    record AcquireAny(List<Candidate> candidates, List<Key> allOf, long tokens) implements TokenBucketRequest {

        /**
         * The acquire as if the exchange had named only candidate {@code index}, the one the store chose: its key,
         * charged with its group's keys and the all-of keys (so a refund or an abandoned wait gives back to each).
         */
        Acquire chosen(int index) {
            Candidate chosen = candidates.get(index);
            if (chosen.with().isEmpty()) {
                return new Acquire(chosen.key(), allOf, tokens);
            }
            List<Key> charged = new ArrayList<>(chosen.with());
            charged.addAll(allOf);
            return new Acquire(chosen.key(), List.copyOf(charged), tokens);
        }
    }

    /**
     * Give {@code tokens} (any number from 1; never past full) back to {@code key} and every one of {@code allOf},
     * in one store step.
     */
    record Refund(Key key, List<Key> allOf, long tokens) implements TokenBucketRequest {

        /** The stored keys given back to: {@code key}, then {@code allOf}. */
        List<String> stored() {
            return Stream.concat(Stream.of(key), allOf.stream()).map(Key::stored).toList();
        }

        /** The limits of {@link #stored()}, at the same positions. */
        List<Limits> limits() {
            return Stream.concat(Stream.of(key), allOf.stream()).map(Key::limits).toList();
        }
    }

    /** What an acquire of {@code tokens} on {@code key} would get now, taking nothing. */
    record Peek(Key key, long tokens) implements TokenBucketRequest {
    }

    /** Make {@code key} unavailable for {@code penaltyNanos} (header {@code CamelTokenBucketPenalty}, at most 365d). */
    record Penalize(Key key, long penaltyNanos) implements TokenBucketRequest {
    }

    /** Drop the state of {@code key}. */
    record Remove(Key key) implements TokenBucketRequest {
    }

    /** A throttled signal on {@code key}: cut its adaptive rate. */
    record Throttled(Key key) implements TokenBucketRequest {
    }

    /** Give back the in-flight slots the exchange holds on this endpoint, now. */
    record ReleaseSlots() implements TokenBucketRequest {
        static final ReleaseSlots INSTANCE = new ReleaseSlots();
    }

    /** Read the adaptive rate of {@code key}. */
    record Rate(Key key) implements TokenBucketRequest {
    }

    /** The keys of {@code acquire} (its key and all-of keys) that have an in-flight limit. */
    static List<Key> slotKeys(Acquire acquire) {
        if (acquire.allOf().isEmpty()) { // the common case, asked by every granted acquire: no list built
            return acquire.key().limits().inFlight() > 0 ? List.of(acquire.key()) : List.of();
        }
        return Stream.concat(Stream.of(acquire.key()), acquire.allOf().stream()).filter(k -> k.limits().inFlight() > 0)
                .toList();
    }

    /**
     * The stored keys with an in-flight limit that {@code request} (an acquire, or an acquire of the freest candidate)
     * may take a slot of: of every candidate and group, and its all-of keys.
     */
    static Set<String> anySlotKeys(TokenBucketRequest request) {
        Set<String> stored = new HashSet<>(); // a loop: asked by every Redis acquire with an in-flight limit
        for (Key k : allSlotKeys(request)) {
            stored.add(k.stored());
        }
        return stored;
    }

    /** The keys with an in-flight limit of every candidate (and group) of {@code request} and its all-of keys, once. */
    static List<Key> allSlotKeys(TokenBucketRequest request) {
        if (request instanceof Acquire a) {
            return slotKeys(a);
        }
        AcquireAny any = (AcquireAny) request;
        Map<String, Key> keys = new LinkedHashMap<>();
        for (int c = 0; c < any.candidates().size(); c++) {
            for (Key k : slotKeys(any.chosen(c))) {
                keys.putIfAbsent(k.stored(), k);
            }
        }
        return new ArrayList<>(keys.values());
    }

    /** The prefix of every header of this component ({@link io.tokenbucket.camel.TokenBucketConstants}). */
    String PREFIX = "CamelTokenBucket";
}
