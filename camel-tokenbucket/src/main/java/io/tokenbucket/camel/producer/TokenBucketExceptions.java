package io.tokenbucket.camel.producer;

import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.camel.TokenBucketException;
import io.tokenbucket.camel.TokenBucketMode;
import io.tokenbucket.camel.TokenBucketOperation;
import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.camel.TokenBucketStoreException;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.StoreRefusedException;
import org.apache.camel.Exchange;
import org.apache.camel.NoSuchHeaderException;

/**
 * Every exception the {@code tokenbucket:} endpoint gives an exchange, and its message, built in one place so the
 * texts can be read side by side (as Bucket4j's {@code BucketExceptions}); only the worker pool's refusal is built
 * where it is met, by {@link TokenBucketHandOff}. Each message names the endpoint, the refused value and the reason; a
 * value that came from the exchange is shown through {@link #shown}, at most
 * {@value io.tokenbucket.camel.TokenBucketException#MAX_VALUE_IN_MESSAGE} characters of it.
 *
 * <p>Header errors are {@link IllegalArgumentException}s (or {@link NoSuchHeaderException} for a missing key), as
 * Camel's own components report bad input; outcomes are {@link TokenBucketException}s. A rejection is an expected
 * outcome on the hot path, so {@link TokenBucketRejectedException} carries no stack trace.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketExceptions {

    /** The longest wait of any exchange, 365 days, in milliseconds. */
    private static final long LONGEST_WAIT_MILLIS = TimeUnit.NANOSECONDS.toMillis(BucketStore.MAX_WAIT_NANOS);

    private TokenBucketExceptions() {
    }

    /** {@code value} for a message ({@link TokenBucketException#shown}). */
    static String shown(Object value) {
        return TokenBucketException.shown(value);
    }

    /** Header {@code CamelTokenBucketOperation} names no operation. */
    static IllegalArgumentException badOperation(Object raw) {
        return new IllegalArgumentException("Header " + TokenBucketConstants.OPERATION + " must be one of "
                + Arrays.stream(TokenBucketOperation.values()).map(Enum::name)
                        .collect(Collectors.joining(", ")) + ", was '" + shown(raw) + "'");
    }

    /**
     * Operation throttled on a key whose rate does not adapt ({@code adaptiveOn}: the endpoint adapts, but its
     * adaptiveKeys leave this key out).
     */
    static IllegalArgumentException notAdaptive(String endpointName, String key, boolean adaptiveOn) {
        return new IllegalArgumentException("Header " + TokenBucketConstants.OPERATION + " is throttled, but"
                + " tokenbucket:" + endpointName + (adaptiveOn ? " gives key '" + shown(key) + "' a fixed rate:"
                + " its adaptiveKeys do not match it" : " has a fixed rate: set adaptive=true to let throttled"
                + " signals cut it"));
    }

    /** The key header is missing or blank on an endpoint with {@code requireKey=true}. */
    static NoSuchHeaderException noKey(String endpointName, String header, Exchange exchange) {
        return new NoSuchHeaderException("tokenbucket:" + endpointName + " needs a non-blank key in header " + header
                + " (requireKey=true)", exchange, header);
    }

    /** Header {@code CamelTokenBucketCandidates} is present but names no key. */
    static IllegalArgumentException noCandidate(Object raw) {
        return new IllegalArgumentException("Header " + TokenBucketConstants.CANDIDATES + " must name at least one"
                + " key, was '" + shown(raw) + "'");
    }

    /** Header {@code CamelTokenBucketCandidates} names more than {@code maxCandidates} distinct keys. */
    static IllegalArgumentException tooManyCandidates(String endpointName, int max, Object raw) {
        return new IllegalArgumentException("Header " + TokenBucketConstants.CANDIDATES + " names more than"
                + " maxCandidates " + max + " distinct keys on tokenbucket:" + endpointName + ", was '" + shown(raw)
                + "'");
    }

    /**
     * A key list (header or option {@code name}) holds more than {@code max} entries, blank and repeated ones
     * included.
     */
    static IllegalArgumentException tooManyEntries(String name, int max) {
        return new IllegalArgumentException((name.startsWith("Camel") ? "Header " : "Option ") + name + " holds more"
                + " than " + max + " entries (blank and repeated keys included); it is read no further");
    }

    /** Header {@code CamelTokenBucketCandidates} holds a candidate group that cannot be charged, for {@code reason}. */
    static IllegalArgumentException badGroup(String endpointName, Object raw, String reason) {
        return new IllegalArgumentException("Header " + TokenBucketConstants.CANDIDATES + " on tokenbucket:"
                + endpointName + ": " + reason + ", was '" + shown(raw) + "'");
    }

    /** The candidate groups (and all-of keys) of one exchange name more keys than one store step may charge. */
    static IllegalArgumentException tooManyGroupKeys(String endpointName, int count, Object raw) {
        return new IllegalArgumentException("Header " + TokenBucketConstants.CANDIDATES + " on tokenbucket:"
                + endpointName + " names more than " + BucketStore.MAX_KEYS + " keys with its groups and the"
                + " all-of keys (" + count + " so far), more than one store step charges, was '" + shown(raw) + "'");
    }

    /**
     * Header {@code CamelTokenBucketAllOf} (or the {@code allOf} option) names more than {@code maxAllOf} distinct
     * keys.
     *
     * @param endpointName the endpoint, or null when the option is checked before there is one
     * @param source       the header's name, or {@code allOf} for the option
     */
    static IllegalArgumentException tooManyAllOf(String endpointName, String source, int max, Object raw) {
        String where = source.equals("allOf") ? "Option allOf" : "Header " + source;
        return new IllegalArgumentException(where + " names more than maxAllOf " + max + " distinct keys"
                + (endpointName == null ? "" : " on tokenbucket:" + endpointName) + ", was '" + shown(raw) + "'");
    }

    /**
     * Header {@code CamelTokenBucketAllOf} (or the {@code allOf} option) names a key that is also one of the
     * candidates.
     *
     * @param fromOption true when the all-of keys came from the {@code allOf} option, not the header
     */
    static IllegalArgumentException allOfCandidate(String endpointName, String key, boolean fromOption) {
        return new IllegalArgumentException((fromOption ? "Option allOf" : "Header " + TokenBucketConstants.ALL_OF)
                + " names key '" + shown(key)
                + "', which is also a candidate in " + TokenBucketConstants.CANDIDATES + " on tokenbucket:"
                + endpointName + ": a key is either charged always or chosen among others, not both");
    }

    /**
     * The cost is not a whole number from 1 to {@code capacity} ({@link Long#MAX_VALUE}: no upper bound).
     *
     * @param tokens the cost as read (0 when it was not a number)
     * @param raw    the header's value, or null when the cost came from the option
     */
    static IllegalArgumentException badCost(String endpointName, long capacity, long tokens, Object raw) {
        String range = capacity == Long.MAX_VALUE ? "of at least 1" : "from 1 to the capacity " + capacity
                + " of tokenbucket:" + endpointName;
        // no header: the cost option, above the capacity of limits given after the start (a resolver's)
        return new IllegalArgumentException((raw == null ? "Option cost" : "Header " + TokenBucketConstants.COST)
                + " must be a whole number "
                + range + ", was '" + shown(raw == null ? tokens : raw) + "'"
                + (tokens > capacity ? ": such an exchange could never pass" : ""));
    }

    /** Header {@code CamelTokenBucketPenalty} is no duration. */
    static IllegalArgumentException badPenalty(Object raw) {
        return new IllegalArgumentException("Header " + TokenBucketConstants.PENALTY + " must be a duration such as"
                + " 30s or 2m, or milliseconds, for operation penalize, was '" + shown(raw) + "'");
    }

    /** Header {@code CamelTokenBucketPenalty} is longer than 365 days. */
    static IllegalArgumentException penaltyTooLong(Object raw) {
        return new IllegalArgumentException("Header " + TokenBucketConstants.PENALTY + " must be at most 365d ("
                + LONGEST_WAIT_MILLIS + " ms), was '" + shown(raw) + "'");
    }

    /**
     * An acquire as a refusal names it, in plain values: its key and all-of keys as sent, its cost, its key's limits
     * in the user's terms, and its keys with an in-flight limit, each shown with that limit.
     */
    record Refused(String key, List<String> allOf, long tokens, String limits, List<String> slotKeys) {
    }

    /** The endpoint's wait options as a refusal names them: its mode, maxWait (null: unset) and maxWaiting. */
    record Waits(TokenBucketMode mode, Long maxWait, int maxWaiting) {
    }

    /**
     * An acquire that did not get its tokens and consumed none; the message names its key, its all-of keys if any,
     * and the key's limits.
     *
     * @param waitMillis how long the tokens would have taken, in milliseconds rounded up
     * @param full       whether it was refused a wait because every one of the {@code maxWaiting} places was taken
     */
    static TokenBucketRejectedException rejected(String endpointName, Waits waits, Refused acquire, long waitMillis,
                                                 boolean full) {
        String why;
        if (full) {
            why = "would have to wait " + waitMillis + " ms, but maxWaiting " + waits.maxWaiting()
                    + " exchanges are waiting already";
        } else if (waits.mode() != TokenBucketMode.delay) {
            why = "not available at once (mode=" + waits.mode() + "), they would take " + waitMillis + " ms";
        } else if (waits.maxWait() != null && waitMillis <= LONGEST_WAIT_MILLIS) {
            why = "not available within maxWait " + waits.maxWait() + " ms, they would take " + waitMillis + " ms";
        } else {
            why = "would take " + waitMillis + " ms, longer than the longest wait of any exchange (365d, "
                    + LONGEST_WAIT_MILLIS + " ms)";
        }
        String key = acquire.key();
        return new TokenBucketRejectedException(endpointName, key, acquire.tokens(), waitMillis, "tokenbucket:"
                + endpointName + " rejected key '" + shown(key) + "'" + (acquire.allOf().isEmpty() ? ""
                : " with all of " + shown(acquire.allOf())) + ": " + acquire.tokens()
                + " token(s) " + why + " (" + acquire.limits() + ")");
    }

    /**
     * Every in-flight slot of a key the exchange needs was held: at once in reject and check mode or with every
     * waiting place taken ({@code waited} false), or until its maxWait passed ({@code waited} true).
     *
     * @param waitMillis when a slot (and the tokens) may be there, for a retry, in milliseconds rounded up
     */
    static TokenBucketRejectedException noSlot(String endpointName, Waits waits, Refused acquire, boolean waited,
                                               long waitMillis) {
        String why;
        if (waited) {
            why = "no in-flight slot came free within maxWait " + waits.maxWait() + " ms";
        } else if (waits.mode() != TokenBucketMode.delay) {
            why = "no in-flight slot free (mode=" + waits.mode() + ")";
        } else {
            why = "no in-flight slot free, and maxWaiting " + waits.maxWaiting() + " exchanges are waiting already";
        }
        return new TokenBucketRejectedException(endpointName, acquire.key(), acquire.tokens(), waitMillis,
                "tokenbucket:" + endpointName + " rejected key '" + shown(acquire.key()) + "': " + why
                + "; keys with an in-flight limit: " + String.join(", ", acquire.slotKeys()) + "; retry in about "
                + waitMillis + " ms");
    }

    /** An exchange still waiting for an in-flight slot when it had to stop waiting; it had reserved nothing. */
    static TokenBucketException abandonedSlot(String endpointName, String key, String why) {
        return new TokenBucketException(endpointName, key, "tokenbucket:" + endpointName + " key '" + shown(key)
                + "': the exchange was waiting for an in-flight slot when " + why + "; it had reserved nothing");
    }

    /**
     * The store failed or did not answer and the policy is to fail ({@code onStoreError=fail}), or the store refused
     * the call ({@link StoreRefusedException}), which fails under every policy.
     */
    static TokenBucketStoreException storeFailed(String endpointName, String store, UnaryOperator<String> redact,
                                                 long storeTimeoutMillis, Throwable failure) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        if (cause instanceof StoreRefusedException) {
            return new TokenBucketStoreException(endpointName, null, "tokenbucket:" + endpointName
                    + ": the bucket store (" + store + ") refused the call: " + redact.apply(cause.getMessage())
                    + "; the exchange was not admitted (a refusal is not an outage: onStoreError does not apply)",
                    cause);
        }
        String why = cause instanceof TimeoutException
                ? "did not answer within storeTimeout " + storeTimeoutMillis + " ms"
                : "failed: " + cause.getClass().getSimpleName() + ": " + redact.apply(cause.getMessage());
        return new TokenBucketStoreException(endpointName, null, "tokenbucket:" + endpointName
                + ": the bucket store (" + store + ") " + why
                + "; the exchange was not admitted (onStoreError=fail)", cause);
    }

    /**
     * Redis refused the probe of what the endpoint needs at its start (a permission, a script that cannot run): the
     * start fails, since waiting will not mend it.
     */
    public static TokenBucketStoreException storeRefused(String endpointName, String where,
                                                         UnaryOperator<String> redact, StoreRefusedException refused) {
        return new TokenBucketStoreException(endpointName, null, "tokenbucket:" + endpointName + ": " + where
                + " refuses what this endpoint needs: " + redact.apply(refused.getMessage()) + ". A refusal is not an"
                + " outage (onStoreError does not apply): grant the Redis user EVALSHA, EVAL, TIME, GET, SET and DEL"
                + " (with in-flight limits also PUBLISH and SUBSCRIBE) on the keys and channels of keyPrefix", refused);
    }

    /** The endpoint could not open its Redis connection. */
    public static TokenBucketStoreException cannotConnect(String endpointName, String where,
                                                          UnaryOperator<String> redact, RuntimeException e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return new TokenBucketStoreException(endpointName, null, "tokenbucket:" + endpointName
                + " cannot connect to Redis at " + where + ": " + redact.apply(e.getMessage())
                + (root != e ? " (" + redact.apply(root.getMessage()) + ")" : ""), e);
    }

    /** An exchange still waiting for its tokens when it had to stop waiting; its tokens were refunded. */
    static TokenBucketException abandoned(String endpointName, String key, long tokens, String why) {
        return new TokenBucketException(endpointName, key, "tokenbucket:" + endpointName + " key '" + shown(key)
                + "': the exchange was waiting for " + tokens + " token(s) when " + why + "; its tokens were refunded");
    }
}
