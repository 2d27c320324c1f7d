package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.function.Supplier;

import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketKeys;
import io.tokenbucket.store.BucketStore;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.NoSuchHeaderException;

/**
 * What one exchange asks of its endpoint, read from its headers and checked in full before anything is reserved,
 * so a bad header never takes a waiting place or a token. The precedence is Camel's: header, then option, then an
 * error naming the header ({@link TokenBucketExceptions}).
 *
 * <p>Keys are data from the exchange: limits are decided on the key as sent ({@code key}), and only the form the
 * store keeps ({@code stored}, {@link BucketKeys#bound}) is bounded.
 *
 * @param operation    header {@code CamelTokenBucketOperation}; default {@link TokenBucketOperation#acquire}
 * @param key          the key as sent (header named by {@code keyHeader}; {@link #DEFAULT_KEY} without one when
 *                     {@code requireKey=false}); null for an acquire with candidates
 * @param stored       {@code key} as the store keeps it; null with candidates
 * @param limits       the key's limits; null with candidates
 * @param tokens       the cost in tokens (header {@code CamelTokenBucketCost}, else the {@code cost} option): from 1
 *                     to the capacity, for refund from 1 up; 0 for remove, penalize, throttled and rate, which take
 *                     none
 * @param penaltyNanos for penalize, header {@code CamelTokenBucketPenalty} in nanoseconds (at most 365 days); else 0
 * @param candidates   for acquire, the keys of header {@code CamelTokenBucketCandidates}, with the keys charged with
 *                     each when its entries are groups; null without it
 * @param allOf        for acquire and refund, the keys of header {@code CamelTokenBucketAllOf} (else of the
 *                     {@code allOf} option), without the exchange's own key; null when there are none
 */
record TokenBucketRequest(TokenBucketOperation operation, String key, String stored, Limits limits, long tokens,
                          long penaltyNanos, Candidates candidates, Candidates allOf) {

    /** The bucket of exchanges without a key when the endpoint does not require one. */
    static final String DEFAULT_KEY = "";

    /**
     * The most entries a key list (header {@code CamelTokenBucketCandidates} or {@code CamelTokenBucketAllOf}, option
     * {@code allOf}) is read for, blank and repeated ones included: 16,384, the keys one store step may charge
     * ({@link BucketStore#MAX_KEYS}) sixteen times over.
     */
    static final int MAX_ENTRIES = 16 * BucketStore.MAX_KEYS;

    /**
     * The distinct candidate keys of one exchange in their order, with their stored forms and limits at the same
     * positions; also the shape of its all-of keys, and of the keys charged with a candidate.
     *
     * @param with for candidate groups, the keys charged with each candidate (possibly none), at the same positions;
     *             null when no candidate has any (and for all-of keys)
     */
    record Candidates(List<String> keys, List<String> stored, List<Limits> limits, List<Candidates> with) {

        Candidates(List<String> keys, List<String> stored, List<Limits> limits) {
            this(keys, stored, limits, null);
        }

        /** These keys followed by {@code more}'s (either may be null: the other is answered). */
        static Candidates join(Candidates first, Candidates more) {
            if (first == null || first.keys().isEmpty()) {
                return more;
            }
            if (more == null) {
                return first;
            }
            return new Candidates(concat(first.keys(), more.keys()), concat(first.stored(), more.stored()),
                    concat(first.limits(), more.limits()));
        }

        private static <T> List<T> concat(List<T> first, List<T> more) {
            List<T> all = new ArrayList<>(first);
            all.addAll(more);
            return List.copyOf(all);
        }
    }

    /**
     * Reads and checks the request of {@code exchange} (its message's headers) for the endpoint {@code name}.
     *
     * @throws IllegalArgumentException naming the header and its value (at most 64 characters of it) when a header
     *                                  is invalid, or when the limit resolver answers no limits
     * @throws NoSuchHeaderException    when the key is missing or blank and {@code requireKey=true}
     */
    static TokenBucketRequest read(Exchange exchange, String name, TokenBucketConfiguration config,
                                   TokenBucketLimitSource limitSource) throws NoSuchHeaderException {
        Message message = exchange.getMessage();
        TokenBucketOperation operation = operationOf(message);
        Candidates candidates = operation == TokenBucketOperation.acquire
                ? candidatesOf(message, name, config, limitSource) : null;
        boolean charges = operation == TokenBucketOperation.acquire || operation == TokenBucketOperation.refund;
        if (candidates != null) {
            Candidates allOf = allOfOf(message, name, config, limitSource, null);
            long capacity = Math.min(smallestCapacity(candidates), smallestCapacity(allOf));
            Set<String> grouped = new HashSet<>(candidates.keys());
            if (candidates.with() != null) {
                for (Candidates group : candidates.with()) {
                    grouped.addAll(group.keys());
                    capacity = Math.min(capacity, smallestCapacity(group));
                }
            }
            if (allOf != null) {
                for (String key : allOf.keys()) {
                    if (grouped.contains(key)) {
                        throw TokenBucketExceptions.allOfCandidate(name, key,
                                message.getHeader(TokenBucketConstants.ALL_OF) == null);
                    }
                }
                if (candidates.with() != null && grouped.size() + allOf.keys().size() > BucketStore.MAX_KEYS) {
                    throw TokenBucketExceptions.tooManyGroupKeys(name, grouped.size() + allOf.keys().size(),
                            message.getHeader(TokenBucketConstants.CANDIDATES));
                }
            }
            return new TokenBucketRequest(operation, null, null, null, tokensOf(message, name, config, capacity), 0,
                    candidates, allOf);
        }
        String key = keyOf(exchange, name, config);
        String stored = BucketKeys.bound(key);
        Limits limits = limitSource.limitsFor(key);
        Candidates allOf = charges ? allOfOf(message, name, config, limitSource, key) : null;
        return switch (operation) {
            case acquire -> new TokenBucketRequest(operation, key, stored, limits,
                    tokensOf(message, name, config, Math.min(limits.capacity(), smallestCapacity(allOf))), 0, null,
                    allOf);
            case peek -> new TokenBucketRequest(operation, key, stored, limits,
                    tokensOf(message, name, config, limits.capacity()), 0, null, null);
            // a refund of more than the capacity is accepted: it fills the bucket and no more
            case refund -> new TokenBucketRequest(operation, key, stored, limits,
                    tokensOf(message, name, config, Long.MAX_VALUE), 0, null, allOf);
            case remove, throttled, rate -> new TokenBucketRequest(operation, key, stored, limits, 0, 0, null, null);
            case penalize -> new TokenBucketRequest(operation, key, stored, limits, 0, penaltyOf(message), null, null);
        };
    }

    /**
     * The request as if the exchange had named only candidate {@code index}: the key the store chose, charged with
     * its group's keys and the all-of keys (so a refund or an abandoned wait gives back to every one of them).
     */
    TokenBucketRequest chosen(int index) {
        Candidates group = candidates.with() == null ? null : candidates.with().get(index);
        return new TokenBucketRequest(operation, candidates.keys().get(index), candidates.stored().get(index),
                candidates.limits().get(index), tokens, penaltyNanos, null, Candidates.join(group, allOf));
    }

    /** The keys whose buckets this request charges: its key (or the chosen candidate's) and its all-of keys. */
    List<String> charged() {
        return allOf == null ? List.of(stored) : with(stored, allOf.stored());
    }

    /** The limits of {@link #charged()}, at the same positions. */
    List<Limits> chargedLimits() {
        return allOf == null ? List.of(limits) : with(limits, allOf.limits());
    }

    private static <T> List<T> with(T first, List<T> rest) {
        List<T> all = new ArrayList<>(1 + rest.size());
        all.add(first);
        all.addAll(rest);
        return all;
    }

    private static long smallestCapacity(Candidates keys) {
        long capacity = Long.MAX_VALUE;
        if (keys != null) {
            for (Limits limits : keys.limits()) {
                capacity = Math.min(capacity, limits.capacity());
            }
        }
        return capacity;
    }

    /**
     * The all-of keys of header {@code CamelTokenBucketAllOf}, else of the {@code allOf} option, without
     * {@code ownKey} (charged once); null when there are none.
     */
    private static Candidates allOfOf(Message message, String name, TokenBucketConfiguration config,
                                      TokenBucketLimitSource source, String ownKey) {
        Object raw = message.getHeader(TokenBucketConstants.ALL_OF);
        String header = TokenBucketConstants.ALL_OF;
        if (raw == null) {
            raw = config.getAllOf();
            header = "allOf";
            if (raw == null) {
                return null;
            }
        }
        int max = config.getMaxAllOf();
        String named = header;
        Object shown = raw;
        Set<String> distinct = distinctKeys(raw, named, key -> !key.equals(ownKey), max,
                () -> TokenBucketExceptions.tooManyAllOf(name, named, max, shown));
        return distinct.isEmpty() ? null : keysOf(distinct, source);
    }

    /**
     * Checks the {@code allOf} option's text: at most {@code max} distinct keys.
     *
     * @throws IllegalArgumentException naming the option and its value
     */
    static void allOfOption(String text, int max) {
        distinctKeys(text, "allOf", key -> true, max,
                () -> TokenBucketExceptions.tooManyAllOf(null, "allOf", max, text));
    }

    private static TokenBucketOperation operationOf(Message message) {
        Object raw = message.getHeader(TokenBucketConstants.OPERATION);
        if (raw == null) {
            return TokenBucketOperation.acquire;
        }
        if (raw instanceof TokenBucketOperation op) {
            return op;
        }
        try {
            return TokenBucketOperation.valueOf(raw.toString().trim().toLowerCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw TokenBucketExceptions.badOperation(raw);
        }
    }

    private static String keyOf(Exchange exchange, String name, TokenBucketConfiguration config)
            throws NoSuchHeaderException {
        String header = config.getKeyHeader();
        String key = exchange.getMessage().getHeader(header, String.class);
        if (key == null || key.isBlank()) {
            if (config.isRequireKey()) {
                throw TokenBucketExceptions.noKey(name, header, exchange);
            }
            return DEFAULT_KEY;
        }
        return key;
    }

    /**
     * The distinct candidate keys of header {@code CamelTokenBucketCandidates} in their order, or null when the
     * header is absent: a collection or any other {@link Iterable}, an array, or text separated by commas; read no
     * further than one key past {@code maxCandidates}. An entry of a collection or array that is itself one is a
     * candidate group ({@link #groupsOf}).
     */
    private static Candidates candidatesOf(Message message, String name, TokenBucketConfiguration config,
                                           TokenBucketLimitSource source) {
        Object header = message.getHeader(TokenBucketConstants.CANDIDATES);
        if (header == null) {
            return null;
        }
        // looking for groups walks the entries before they are read as keys: an Iterable that is not a collection
        // may give them only once, so they are taken into a list first (bounded as items() bounds every list)
        Object raw = header instanceof Iterable<?> && !(header instanceof Collection<?>) ? listOf(header) : header;
        int max = config.getMaxCandidates();
        if (hasGroup(raw)) {
            return groupsOf(raw, name, max, config.getMaxAllOf(), source);
        }
        Set<String> distinct = distinctKeys(raw, TokenBucketConstants.CANDIDATES, key -> true, max,
                () -> TokenBucketExceptions.tooManyCandidates(name, max, raw));
        if (distinct.isEmpty()) {
            throw TokenBucketExceptions.noCandidate(raw);
        }
        return keysOf(distinct, source);
    }

    /** The entries of an {@link Iterable} in a list, read once, at most {@link #MAX_ENTRIES}. */
    private static List<Object> listOf(Object iterable) {
        List<Object> entries = new ArrayList<>();
        items(iterable, TokenBucketConstants.CANDIDATES).forEachRemaining(entries::add);
        return entries;
    }

    /** Whether a header value is a collection or array with an entry that is itself a collection or array. */
    private static boolean hasGroup(Object raw) {
        if (!isList(raw)) {
            return false;
        }
        for (Iterator<?> items = items(raw, TokenBucketConstants.CANDIDATES); items.hasNext(); ) {
            if (isList(items.next())) {
                return true;
            }
        }
        return false;
    }

    private static boolean isList(Object value) {
        return value instanceof Iterable<?> || value != null && value.getClass().isArray();
    }

    /**
     * The entries of an {@link Iterable} or an array, in order, failing naming {@code header} past
     * {@link #MAX_ENTRIES}: only distinct keys count towards maxCandidates and maxAllOf, so without this bound a
     * header of a billion blank or repeated entries (or an endless {@code Iterable}) would be read for ever.
     */
    private static Iterator<?> items(Object list, String header) {
        Iterator<?> source = list instanceof Iterable<?> items ? items.iterator() : new Iterator<Object>() {
            private int next;

            @Override
            public boolean hasNext() {
                return next < java.lang.reflect.Array.getLength(list);
            }

            @Override
            public Object next() {
                if (!hasNext()) {
                    throw new java.util.NoSuchElementException();
                }
                return java.lang.reflect.Array.get(list, next++);
            }
        };
        return new Iterator<Object>() {
            private int read;

            @Override
            public boolean hasNext() {
                return source.hasNext();
            }

            @Override
            public Object next() {
                if (++read > MAX_ENTRIES) {
                    throw TokenBucketExceptions.tooManyEntries(header, MAX_ENTRIES);
                }
                return source.next();
            }
        };
    }

    /**
     * The candidate groups of header {@code CamelTokenBucketCandidates}: each entry that is a collection or array is
     * a group, its first key the candidate and the rest charged with it; any other entry is a candidate alone (a
     * blank one is skipped, as in a plain list). A group's entries are keys, not lists. Every key must be distinct,
     * a group's first key non-blank and none of its keys blank, a group at most {@code maxAllOf} keys besides its
     * candidate, at most {@code maxCandidates} groups and {@link BucketStore#MAX_KEYS} keys in all; reading
     * stops at the first key past a bound.
     *
     * @throws IllegalArgumentException naming the header and its value otherwise
     */
    private static Candidates groupsOf(Object raw, String name, int maxCandidates, int maxAllOf,
                                       TokenBucketLimitSource source) {
        Set<String> seen = new HashSet<>();
        List<String> keys = new ArrayList<>();
        List<List<String>> with = new ArrayList<>();
        for (Iterator<?> items = items(raw, TokenBucketConstants.CANDIDATES); items.hasNext(); ) {
            Object item = items.next();
            List<String> group = new ArrayList<>();
            if (isList(item)) {
                for (Iterator<?> members = items(item, TokenBucketConstants.CANDIDATES); members.hasNext(); ) {
                    Object member = members.next();
                    if (isList(member)) {
                        // its text ("[a, b]") would be a bucket of its own, and none of its keys charged
                        throw TokenBucketExceptions.badGroup(name, raw, "a group's keys must be text, not a list");
                    }
                    String key = text(member);
                    if (key.isEmpty()) {
                        throw TokenBucketExceptions.badGroup(name, raw, "a group's keys must not be blank");
                    }
                    if (group.size() > maxAllOf) {
                        throw TokenBucketExceptions.badGroup(name, raw, "a group charges at most maxAllOf "
                                + maxAllOf + " keys with its candidate");
                    }
                    group.add(key);
                }
                if (group.isEmpty()) {
                    throw TokenBucketExceptions.badGroup(name, raw, "a group must start with its candidate key");
                }
            } else {
                String key = text(item);
                if (key.isEmpty()) {
                    continue;
                }
                group.add(key);
            }
            for (String key : group) {
                if (!seen.add(key)) {
                    throw TokenBucketExceptions.badGroup(name, raw, "key '" + TokenBucketExceptions.shown(key)
                            + "' is named twice; with groups every key is charged once");
                }
            }
            if (seen.size() > BucketStore.MAX_KEYS) {
                throw TokenBucketExceptions.tooManyGroupKeys(name, seen.size(), raw);
            }
            keys.add(group.get(0));
            with.add(group.subList(1, group.size()));
            if (keys.size() > maxCandidates) {
                throw TokenBucketExceptions.tooManyCandidates(name, maxCandidates, raw);
            }
        }
        if (keys.isEmpty()) {
            throw TokenBucketExceptions.noCandidate(raw);
        }
        Candidates candidates = keysOf(new LinkedHashSet<>(keys), source);
        List<Candidates> groups = new ArrayList<>(with.size());
        for (List<String> group : with) {
            groups.add(keysOf(new LinkedHashSet<>(group), source));
        }
        return new Candidates(candidates.keys(), candidates.stored(), candidates.limits(), List.copyOf(groups));
    }

    private static String text(Object item) {
        return item == null ? "" : item.toString().trim();
    }

    /**
     * The distinct non-blank keys of a header value in their order, those {@code kept} accepts: a collection or
     * any other {@link Iterable}, an array, or text separated by commas; read no further than one key past
     * {@code max}, which fails with {@code tooMany}.
     */
    private static Set<String> distinctKeys(Object raw, String header, Predicate<String> kept, int max,
                                            Supplier<IllegalArgumentException> tooMany) {
        Set<String> distinct = new LinkedHashSet<>();
        if (isList(raw)) {
            for (Iterator<?> items = items(raw, header); items.hasNext(); ) {
                addKey(distinct, text(items.next()), kept, max, tooMany);
            }
        } else {
            String text = raw.toString();
            int read = 0;
            for (int from = 0; from <= text.length(); ) {
                if (++read > MAX_ENTRIES) {
                    throw TokenBucketExceptions.tooManyEntries(header, MAX_ENTRIES);
                }
                int comma = text.indexOf(',', from);
                int to = comma < 0 ? text.length() : comma;
                addKey(distinct, text.substring(from, to).trim(), kept, max, tooMany);
                from = to + 1;
            }
        }
        return distinct;
    }

    /** Distinct keys with their stored forms and limits. */
    private static Candidates keysOf(Set<String> distinct, TokenBucketLimitSource source) {
        List<String> keys = List.copyOf(distinct);
        List<String> stored = new ArrayList<>(keys.size());
        List<Limits> limits = new ArrayList<>(keys.size());
        for (String key : keys) {
            stored.add(BucketKeys.bound(key));
        }
        for (String key : keys) {
            limits.add(source.limitsFor(key));
        }
        return new Candidates(keys, List.copyOf(stored), List.copyOf(limits));
    }

    private static void addKey(Set<String> keys, String key, Predicate<String> kept, int max,
                               Supplier<IllegalArgumentException> tooMany) {
        if (!key.isEmpty() && kept.test(key) && keys.add(key) && keys.size() > max) {
            throw tooMany.get();
        }
    }

    /** The exchange's cost: header {@code CamelTokenBucketCost} or the cost option, from 1 to {@code capacity}. */
    private static long tokensOf(Message message, String name, TokenBucketConfiguration config, long capacity) {
        Object raw = message.getHeader(TokenBucketConstants.COST);
        long tokens;
        if (raw == null) {
            tokens = config.getCost();
        } else if (isWholeNumber(raw)) {
            tokens = ((Number) raw).longValue();
        } else {
            try {
                tokens = Long.parseLong(raw.toString().trim());
            } catch (NumberFormatException e) {
                tokens = 0;
            }
        }
        if (tokens < 1 || tokens > capacity) {
            throw TokenBucketExceptions.badCost(name, capacity, tokens, raw);
        }
        return tokens;
    }

    /**
     * The penalty of header {@code CamelTokenBucketPenalty} in nanoseconds: a whole number of milliseconds, Camel
     * duration text or a {@link java.time.Duration}, from 0 to 365 days.
     */
    private static long penaltyOf(Message message) {
        Object raw = message.getHeader(TokenBucketConstants.PENALTY);
        long millis = TokenBucketOptionText.NOT_A_DURATION;
        if (isWholeNumber(raw)) {
            millis = ((Number) raw).longValue();
        } else if (raw instanceof java.time.Duration d) {
            try {
                millis = d.toMillis();
            } catch (ArithmeticException tooLong) {
                millis = d.isNegative() ? TokenBucketOptionText.NOT_A_DURATION : TokenBucketOptionText.TOO_LONG;
            }
        } else if (raw != null) {
            millis = TokenBucketOptionText.durationMillis(raw.toString());
        }
        if (millis < 0) {
            throw TokenBucketExceptions.badPenalty(raw);
        }
        if (millis > TokenBucketConfiguration.MAX_WAIT_MILLIS) {
            throw TokenBucketExceptions.penaltyTooLong(raw);
        }
        return TimeUnit.MILLISECONDS.toNanos(millis);
    }

    /**
     * Whether a header value is a number that is whole and exact as a {@code long}; any other number (1.5, NaN, a
     * huge BigInteger) is read as its text, so it is refused rather than rounded.
     */
    private static boolean isWholeNumber(Object raw) {
        return raw instanceof Long || raw instanceof Integer || raw instanceof Short || raw instanceof Byte;
    }
}
