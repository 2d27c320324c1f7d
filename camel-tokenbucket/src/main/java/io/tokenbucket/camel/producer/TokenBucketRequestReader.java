package io.tokenbucket.camel.producer;

import static io.tokenbucket.camel.producer.TokenBucketRequest.PREFIX;

import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.NavigableMap;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.camel.TokenBucketOperation;
import io.tokenbucket.camel.syntax.TokenBucketLimitSpec;
import io.tokenbucket.camel.producer.TokenBucketRequest.Acquire;
import io.tokenbucket.camel.producer.TokenBucketRequest.AcquireAny;
import io.tokenbucket.camel.producer.TokenBucketRequest.Candidate;
import io.tokenbucket.camel.producer.TokenBucketRequest.Key;
import io.tokenbucket.camel.producer.TokenBucketRequest.Peek;
import io.tokenbucket.camel.producer.TokenBucketRequest.Penalize;
import io.tokenbucket.camel.producer.TokenBucketRequest.Rate;
import io.tokenbucket.camel.producer.TokenBucketRequest.Refund;
import io.tokenbucket.camel.producer.TokenBucketRequest.ReleaseSlots;
import io.tokenbucket.camel.producer.TokenBucketRequest.Remove;
import io.tokenbucket.camel.producer.TokenBucketRequest.Throttled;
import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketStore;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.NoSuchHeaderException;

/**
 * Reads what one exchange asks of its endpoint ({@link TokenBucketRequest}) from its message's headers, and checks it
 * in full before anything is reserved, so a bad header never takes a waiting place or a token. The precedence is
 * Camel's: header, then option, then an error naming the header ({@link TokenBucketExceptions}); the key lists are
 * read by {@link TokenBucketKeyLists}.
 */
final class TokenBucketRequestReader {

    private TokenBucketRequestReader() {
    }

    /**
     * Reads and checks the request of {@code exchange} (its message's headers) for the endpoint {@code name}, its keys
     * given their limits by {@code limits}.
     *
     * @throws IllegalArgumentException naming the header and its value (at most 64 characters of it) when a header
     *                                  is invalid, or when the limit resolver answers no limits
     * @throws NoSuchHeaderException    when the key is missing or blank and {@code requireKey=true}
     */
    static TokenBucketRequest read(Exchange exchange, String name, TokenBucketConfiguration config,
                                   Function<String, Limits> limits) throws NoSuchHeaderException {
        Message message = exchange.getMessage();
        boolean asks = mayAsk(message);
        TokenBucketOperation operation = asks ? operationOf(message) : TokenBucketOperation.acquire;
        if (operation == TokenBucketOperation.release) {
            return ReleaseSlots.INSTANCE;
        }
        if (operation == TokenBucketOperation.acquire && asks) {
            TokenBucketKeyLists.Candidates candidates = TokenBucketKeyLists.candidates(message, name, config, limits);
            if (candidates != null) {
                return acquireAny(message, name, config, limits, candidates);
            }
        }
        Key key = Key.of(keyOf(exchange, message, name, config), limits);
        return switch (operation) {
            case acquire -> {
                List<Key> allOf = asks || config.getAllOf() != null
                        ? TokenBucketKeyLists.allOf(message, name, config, limits, key.sent()) : List.of();
                yield new Acquire(key, allOf, tokensOf(asks ? message : null, name, config,
                        Math.min(key.limits().capacity(), Key.smallestCapacity(allOf))));
            }
            // a refund of more than the capacity is accepted: it fills the bucket and no more
            case refund -> new Refund(key, TokenBucketKeyLists.allOf(message, name, config, limits, key.sent()),
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
                                         Function<String, Limits> limits,
                                         TokenBucketKeyLists.Candidates candidates) {
        List<Key> allOf = TokenBucketKeyLists.allOf(message, name, config, limits, null);
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
    private static final List<String> ASKING = List.of(TokenBucketConstants.ALL_OF, TokenBucketConstants.CANDIDATES,
            TokenBucketConstants.COST, TokenBucketConstants.OPERATION);

    /**
     * False when {@code message} surely has none of the {@link #ASKING} headers, so the common request looks none of
     * them up: Camel's own headers map is sorted case-insensitively, so the component's headers sit together from
     * {@link TokenBucketRequest#PREFIX} on, and the few usually there (the default key header, results of an earlier
     * step) are passed in one walk. True when it cannot tell (another headers map, or more than a few of the
     * component's headers).
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

    private static String keyOf(Exchange exchange, Message message, String name, TokenBucketConfiguration config)
            throws NoSuchHeaderException {
        String header = config.getKeyHeader();
        String key = message.getHeader(header, String.class);
        if (key == null || key.isBlank()) {
            if (config.isRequireKey()) {
                throw TokenBucketExceptions.noKey(name, header, exchange);
            }
            return TokenBucketRequest.DEFAULT_KEY;
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
        long millis = TokenBucketLimitSpec.NOT_A_DURATION;
        if (isWholeNumber(raw)) {
            millis = ((Number) raw).longValue();
        } else if (raw instanceof java.time.Duration d) {
            try {
                millis = d.toMillis();
            } catch (ArithmeticException tooLong) {
                millis = d.isNegative() ? TokenBucketLimitSpec.NOT_A_DURATION : TokenBucketLimitSpec.TOO_LONG;
            }
        } else if (raw != null) {
            millis = TokenBucketLimitSpec.durationMillis(raw.toString());
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
