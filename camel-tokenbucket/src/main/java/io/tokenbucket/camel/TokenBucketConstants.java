package io.tokenbucket.camel;

import org.apache.camel.spi.Metadata;

/** The message headers the {@code tokenbucket:} endpoint reads and writes. */
public final class TokenBucketConstants {

    /** The default header holding the bucket key; another header can be named with the {@code keyHeader} option. */
    @Metadata(label = "producer", description = "The bucket key (for example a proxy id), when the keyHeader option"
            + " is left at its default. Exchanges with the same key share one bucket. Limits (keyLimits,"
            + " limitResolver) are decided on the key as sent, whatever its length; a key longer than 128 characters"
            + " is stored as its SHA-256 hash.", javaType = "String")
    public static final String KEY = "CamelTokenBucketKey";

    @Metadata(label = "producer", description = "The cost of this exchange in tokens, overriding the cost option;"
            + " a whole number from 1 to the capacity (for operation refund: any number from 1; the bucket is filled"
            + " to its capacity at most).", javaType = "Long")
    public static final String COST = "CamelTokenBucketCost";

    @Metadata(label = "producer", description = "Set in check mode: true when the tokens were granted (and"
            + " consumed), false when they were not (nothing consumed).", javaType = "Boolean")
    public static final String ALLOWED = "CamelTokenBucketAllowed";

    @Metadata(label = "producer", description = "Set on every exchange that passes: milliseconds it waited for"
            + " its tokens.", javaType = "Long")
    public static final String WAITED = "CamelTokenBucketWaited";

    @Metadata(label = "producer", description = "Set on every exchange that passes: whole tokens left in the bucket"
            + " after this exchange.", javaType = "Long")
    public static final String REMAINING = "CamelTokenBucketRemaining";

    @Metadata(label = "producer", description = "What to do with the key's bucket: acquire (the default: take"
            + " the tokens), refund (give CamelTokenBucketCost tokens back, never above capacity), remove (drop the"
            + " key's state: it starts full), peek (set CamelTokenBucketRemaining and CamelTokenBucketWaitEstimate,"
            + " consume nothing), penalize (make the key unavailable for CamelTokenBucketPenalty), throttled (the"
            + " target refused, for example with 429 or 503: cut the key's adaptive rate; needs adaptive=true),"
            + " rate (set CamelTokenBucketRate) or release (give back now the in-flight slots the exchange holds on"
            + " this endpoint, otherwise given back when it ends). Only acquire waits or fails on a lack of tokens.",
              javaType = "String", enums = "acquire,refund,remove,peek,penalize,throttled,rate,release")
    public static final String OPERATION = "CamelTokenBucketOperation";

    @Metadata(label = "producer", description = "For operation penalize: how long the key gets no token (Camel"
            + " duration text such as 30s, or milliseconds), for example from an upstream Retry-After. Every"
            + " instance sharing the store backs off the key at once. At most 365d; more, negative or not a duration"
            + " fails the exchange with IllegalArgumentException naming the header.", javaType = "String")
    public static final String PENALTY = "CamelTokenBucketPenalty";

    @Metadata(label = "producer", description = "For acquire: candidate keys (a comma-separated String or a"
            + " Collection); the tokens are reserved on the one whose tokens come soonest, atomically, and its key"
            + " is set in the key header. Duplicates count once; more than maxCandidates distinct keys fail the"
            + " exchange with IllegalArgumentException naming the header. Candidate groups: an entry of a Collection"
            + " or array that is itself a Collection or array is a group, its first key the candidate and the rest"
            + " keys charged with it when it is chosen (a proxy and its (proxy, host) pair): the group whose keys and"
            + " the all-of keys allow soonest is chosen, all its keys charged in the same atomic step, and a refund"
            + " or abandoned wait gives back to all of them. With groups every key must be distinct, a group may add"
            + " at most maxAllOf keys, and all keys together are at most 1024.", javaType = "String")
    public static final String CANDIDATES = "CamelTokenBucketCandidates";

    @Metadata(label = "producer", description = "For acquire and refund: more keys whose buckets are charged too"
            + " (a comma-separated String or a Collection), for example the target host's beside the proxy's key:"
            + " the tokens are taken from the exchange's key (or the chosen candidate) and from every one of these in"
            + " one atomic step, or from none; the exchange waits for the slowest, and a refund, or an exchange"
            + " abandoned while waiting, gives them back to all. Each key has its own limits (limitResolver,"
            + " keyLimits). Replaces the allOf option; empty: none. The exchange's own key counts once; a key that is"
            + " also a candidate, or more than maxAllOf distinct keys, fail the exchange with"
            + " IllegalArgumentException naming the header. Other operations ignore it.", javaType = "String")
    public static final String ALL_OF = "CamelTokenBucketAllOf";

    @Metadata(label = "producer", description = "Set by peek and penalize: milliseconds until the requested"
            + " tokens would be available (0: now).", javaType = "Long")
    public static final String WAIT_ESTIMATE = "CamelTokenBucketWaitEstimate";

    @Metadata(label = "producer", description = "Set by throttled and rate: the key's current rate as a fraction of"
            + " its configured rate, above 0 and at most 1.0 (1.0 without adaptive=true; adaptiveStart on a key"
            + " without rate state).", javaType = "Double")
    public static final String RATE = "CamelTokenBucketRate";

    @Metadata(label = "producer", description = "Set by throttled: true when this signal cut the rate, false when"
            + " it was ignored because the last cut is within adaptiveHold.", javaType = "Boolean")
    public static final String RATE_CUT = "CamelTokenBucketRateCut";

    private TokenBucketConstants() {
    }
}
