package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.NavigableMap;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketKeys;
import io.tokenbucket.store.BucketStore;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.NoSuchHeaderException;

/**
 * What one exchange asks of its endpoint: one type per operation (header {@code CamelTokenBucketOperation}, default
 * {@code acquire}), each holding what that operation needs and nothing else. Read from the exchange's headers and
 * checked in full before anything is reserved, so a bad header never takes a waiting place or a token. The
 * precedence is Camel's: header, then option, then an error naming the header ({@link TokenBucketExceptions}).
 *
 * <p>Every key is resolved once, as the request is read ({@link Key}): limits are decided on the key as sent, and
 * only the form the store keeps ({@link BucketKeys#bound}) is bounded. Costs are in tokens: from 1 to the smallest
 * capacity of the keys charged, for a refund from 1 up.
 */
sealed interface TokenBucketRequest {

    /** The bucket of exchanges without a key when the endpoint does not require one. */
    String DEFAULT_KEY = "";

    /**
     * A key resolved: as the exchange sent it (what limits and messages use), as the store keeps it, and its limits.
     */
    record Key(String sent, String stored, Limits limits) {

        /** {@code sent}, bounded for the store, with its limits from {@code source}. */
        static Key of(String sent, TokenBucketLimitSource source) {
            return new Key(sent, BucketKeys.bound(sent), source.limitsFor(sent));
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
            for (Key key : keys) {
                capacity = Math.min(capacity, key.limits().capacity());
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
        boolean asks = mayAsk(message);
        TokenBucketOperation operation = asks ? operationOf(message) : TokenBucketOperation.acquire;
        if (operation == TokenBucketOperation.release) {
            return ReleaseSlots.INSTANCE;
        }
        if (operation == TokenBucketOperation.acquire && asks) {
            TokenBucketKeyLists.Candidates candidates = TokenBucketKeyLists.candidates(message, name, config,
                    limitSource);
            if (candidates != null) {
                return acquireAny(message, name, config, limitSource, candidates);
            }
        }
        Key key = Key.of(keyOf(exchange, name, config), limitSource);
        return switch (operation) {
            case acquire -> {
                List<Key> allOf = asks || config.getAllOf() != null
                        ? TokenBucketKeyLists.allOf(message, name, config, limitSource, key.sent()) : List.of();
                yield new Acquire(key, allOf, tokensOf(asks ? message : null, name, config,
                        Math.min(key.limits().capacity(), Key.smallestCapacity(allOf))));
            }
            // a refund of more than the capacity is accepted: it fills the bucket and no more
            case refund -> new Refund(key, TokenBucketKeyLists.allOf(message, name, config, limitSource, key.sent()),
                    tokensOf(message, name, config, Long.MAX_VALUE));
            case peek -> new Peek(key, tokensOf(message, name, config, key.limits().capacity()));
            case penalize -> new Penalize(key, penaltyOf(message));
            case remove -> new Remove(key);
            case throttled -> new Throttled(key);
            case rate -> new Rate(key);
            case release -> ReleaseSlots.INSTANCE;
        };
    }

    /**
     * The acquire of an exchange that names candidates: checked against its all-of keys (none may be a candidate or
     * in a group; with groups, all their keys within {@link BucketStore#MAX_KEYS}), its cost within every capacity.
     */
    private static AcquireAny acquireAny(Message message, String name, TokenBucketConfiguration config,
                                         TokenBucketLimitSource limitSource,
                                         TokenBucketKeyLists.Candidates candidates) {
        List<Key> allOf = TokenBucketKeyLists.allOf(message, name, config, limitSource, null);
        long capacity = Key.smallestCapacity(allOf);
        Set<String> grouped = new HashSet<>();
        for (Candidate candidate : candidates.list()) {
            grouped.add(candidate.key().sent());
            capacity = Math.min(capacity, candidate.key().limits().capacity());
            for (Key with : candidate.with()) {
                grouped.add(with.sent());
                capacity = Math.min(capacity, with.limits().capacity());
            }
        }
        for (Key key : allOf) {
            if (grouped.contains(key.sent())) {
                throw TokenBucketExceptions.allOfCandidate(name, key.sent(),
                        message.getHeader(TokenBucketConstants.ALL_OF) == null);
            }
        }
        if (candidates.groups() && !allOf.isEmpty() && grouped.size() + allOf.size() > BucketStore.MAX_KEYS) {
            throw TokenBucketExceptions.tooManyGroupKeys(name, grouped.size() + allOf.size(),
                    message.getHeader(TokenBucketConstants.CANDIDATES));
        }
        return new AcquireAny(candidates.list(), allOf, tokensOf(message, name, config, capacity));
    }

    /** The headers that make a request more than an acquire of one key at the cost option; each starts with PREFIX. */
    List<String> ASKING = List.of(TokenBucketConstants.ALL_OF, TokenBucketConstants.CANDIDATES,
            TokenBucketConstants.COST, TokenBucketConstants.OPERATION);

    /** The prefix of every header of this component ({@link TokenBucketConstants}). */
    String PREFIX = "CamelTokenBucket";

    /**
     * False when {@code message} surely has none of the {@link #ASKING} headers, so the common request looks none of
     * them up: Camel's own headers map is sorted case-insensitively, so the component's headers sit together from
     * {@link #PREFIX} on, and the few usually there (the default key header, results of an earlier step) are passed in
     * one walk. True when it cannot tell (another headers map, or more than a few of the component's headers).
     */
    private static boolean mayAsk(Message message) {
        if (!(message.getHeaders() instanceof NavigableMap<String, Object> sorted)
                || sorted.comparator() != String.CASE_INSENSITIVE_ORDER) {
            return true;
        }
        String next = sorted.ceilingKey(PREFIX);
        for (int seen = 0; next != null && next.regionMatches(true, 0, PREFIX, 0, PREFIX.length()); seen++) {
            if (seen == ASKING.size()) {
                return true; // many of them: the lookups themselves cost less than this walk
            }
            for (String asking : ASKING) {
                if (asking.equalsIgnoreCase(next)) {
                    return true;
                }
            }
            next = sorted.higherKey(next);
        }
        return false;
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
     * The exchange's cost: header {@code CamelTokenBucketCost} (of {@code message}; none when it is null) or the cost
     * option, from 1 to {@code capacity}.
     */
    private static long tokensOf(Message message, String name, TokenBucketConfiguration config, long capacity) {
        Object raw = message == null ? null : message.getHeader(TokenBucketConstants.COST);
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
