package io.tokenbucket.store;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletionStage;

import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;

/**
 * The reservations on several keys the store tests send, in the shapes they think in (candidates, the keys charged
 * with each, all-of keys), each built as the one {@link StoreCommand#reserve} every acquire is.
 */
public final class Reservations {

    private Reservations() {
    }

    /**
     * Reserves {@code tokens} on whichever of {@code keys} has them soonest (of equals, the one with the most
     * tokens, then the first), as {@link BucketStore#reserve} would on that key; the answer names it
     * ({@link Outcome#chosen()}).
     */
    public static CompletionStage<Outcome> reserveFreest(BucketStore store, List<String> keys, List<Limits> limits,
                                                         long tokens, long maxWaitNanos) {
        return reserveAll(store, keys, limits, List.of(), List.of(), tokens, maxWaitNanos);
    }

    /** Reserves {@code tokens} on the freest of {@code keys} and on every key of {@code allOf}, in one step. */
    public static CompletionStage<Outcome> reserveAll(BucketStore store, List<String> keys, List<Limits> limits,
                                                      List<String> allOf, List<Limits> allOfLimits, long tokens,
                                                      long maxWaitNanos) {
        return reserveAll(store, keys, limits, Collections.nCopies(keys.size(), List.of()),
                Collections.nCopies(keys.size(), List.of()), allOf, allOfLimits, tokens, maxWaitNanos);
    }

    /**
     * {@link #reserveAll(BucketStore, List, List, List, List, long, long)} with candidate groups: each candidate
     * {@code keys[c]} charged together with the keys {@code with[c]}.
     */
    public static CompletionStage<Outcome> reserveAll(BucketStore store, List<String> keys, List<Limits> limits,
                                                      List<List<String>> with, List<List<Limits>> withLimits,
                                                      List<String> allOf, List<Limits> allOfLimits, long tokens,
                                                      long maxWaitNanos) {
        if (keys.size() != limits.size() || with.size() != keys.size() || withLimits.size() != keys.size()) {
            throw new IllegalArgumentException("an all-of reservation needs at least one candidate and limits for"
                    + " every key, was keys " + keys + " and allOf " + allOf);
        }
        List<List<String>> groups = new ArrayList<>();
        List<List<Limits>> groupLimits = new ArrayList<>();
        for (int c = 0; c < keys.size(); c++) {
            groups.add(concat(keys.get(c), with.get(c)));
            groupLimits.add(concat(limits.get(c), withLimits.get(c)));
        }
        return store.execute(StoreCommand.reserve(groups, groupLimits, allOf, allOfLimits, tokens, maxWaitNanos));
    }

    private static <T> List<T> concat(T first, List<T> rest) {
        List<T> all = new ArrayList<>(1 + rest.size());
        all.add(first);
        all.addAll(rest);
        return all;
    }
}
