package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketKeys;
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
 *                     to the capacity, for refund from 1 up; 0 for remove and penalize, which take none
 * @param penaltyNanos for penalize, header {@code CamelTokenBucketPenalty} in nanoseconds (at most 365 days); else 0
 * @param candidates   for acquire, the keys of header {@code CamelTokenBucketCandidates}; null without it
 */
record TokenBucketRequest(TokenBucketOperation operation, String key, String stored, Limits limits, long tokens,
                          long penaltyNanos, Candidates candidates) {

    /** The bucket of exchanges without a key when the endpoint does not require one. */
    static final String DEFAULT_KEY = "";

    /**
     * The distinct candidate keys of one exchange in their order, with their stored forms and limits at the same
     * positions.
     */
    record Candidates(List<String> keys, List<String> stored, List<Limits> limits) {
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
                ? candidatesOf(message, name, config.getMaxCandidates(), limitSource) : null;
        if (candidates != null) {
            long capacity = Long.MAX_VALUE;
            for (Limits limits : candidates.limits()) {
                capacity = Math.min(capacity, limits.capacity());
            }
            return new TokenBucketRequest(operation, null, null, null, tokensOf(message, name, config, capacity), 0,
                    candidates);
        }
        String key = keyOf(exchange, name, config);
        String stored = BucketKeys.bound(key);
        Limits limits = limitSource.limitsFor(key);
        return switch (operation) {
            case acquire, peek -> new TokenBucketRequest(operation, key, stored, limits,
                    tokensOf(message, name, config, limits.capacity()), 0, null);
            // a refund of more than the capacity is accepted: it fills the bucket and no more
            case refund -> new TokenBucketRequest(operation, key, stored, limits,
                    tokensOf(message, name, config, Long.MAX_VALUE), 0, null);
            case remove -> new TokenBucketRequest(operation, key, stored, limits, 0, 0, null);
            case penalize -> new TokenBucketRequest(operation, key, stored, limits, 0, penaltyOf(message), null);
        };
    }

    /** The request as if the exchange had named only candidate {@code index}: the key the store chose. */
    TokenBucketRequest chosen(int index) {
        return new TokenBucketRequest(operation, candidates.keys().get(index), candidates.stored().get(index),
                candidates.limits().get(index), tokens, penaltyNanos, null);
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
     * further than one key past {@code max}.
     */
    private static Candidates candidatesOf(Message message, String name, int max, TokenBucketLimitSource source) {
        Object raw = message.getHeader(TokenBucketConstants.CANDIDATES);
        if (raw == null) {
            return null;
        }
        Set<String> distinct = new LinkedHashSet<>();
        if (raw instanceof Iterable<?> items) {
            for (Object item : items) {
                addCandidate(distinct, item == null ? "" : item.toString().trim(), max, raw, name);
            }
        } else if (raw.getClass().isArray()) {
            for (int i = 0; i < java.lang.reflect.Array.getLength(raw); i++) {
                Object item = java.lang.reflect.Array.get(raw, i);
                addCandidate(distinct, item == null ? "" : item.toString().trim(), max, raw, name);
            }
        } else {
            String text = raw.toString();
            for (int from = 0; from <= text.length(); ) {
                int comma = text.indexOf(',', from);
                int to = comma < 0 ? text.length() : comma;
                addCandidate(distinct, text.substring(from, to).trim(), max, raw, name);
                from = to + 1;
            }
        }
        if (distinct.isEmpty()) {
            throw TokenBucketExceptions.noCandidate(raw);
        }
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

    private static void addCandidate(Set<String> candidates, String key, int max, Object raw, String name) {
        if (!key.isEmpty() && candidates.add(key) && candidates.size() > max) {
            throw TokenBucketExceptions.tooManyCandidates(name, max, raw);
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
