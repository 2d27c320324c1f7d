package io.tokenbucket.camel;

import org.apache.camel.spi.Metadata;

/** The message headers the {@code tokenbucket:} endpoint reads and writes. */
public final class TokenBucketConstants {

    /** The default header holding the bucket key; another header can be named with the {@code keyHeader} option. */
    @Metadata(label = "producer", description = "The bucket key, when keyHeader is left at its default. Exchanges"
            + " with the same key share a bucket; a key over 128 characters is stored as its SHA-256 hash.",
              javaType = "String")
    public static final String KEY = "CamelTokenBucketKey";

    @Metadata(label = "producer", description = "This exchange's cost in tokens, overriding the cost option: from 1"
            + " to the capacity (for refund: any number from 1).", javaType = "Long")
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

    @Metadata(label = "producer", description = "What to do with the key's bucket: acquire (the default: take the"
            + " tokens), refund (give CamelTokenBucketCost tokens back), remove (forget the key's state), peek (set"
            + " CamelTokenBucketRemaining and CamelTokenBucketWaitEstimate, consume nothing), penalize (no token for"
            + " CamelTokenBucketPenalty), throttled (the target refused: cut the adaptive rate), rate (set"
            + " CamelTokenBucketRate) or release (give the exchange's in-flight slots back now). Only acquire waits"
            + " or fails.",
              javaType = "String", enums = "acquire,refund,remove,peek,penalize,throttled,rate,release")
    public static final String OPERATION = "CamelTokenBucketOperation";

    @Metadata(label = "producer", description = "For penalize: how long the key gets no token on every instance"
            + " sharing the store (Camel duration text such as 30s, or milliseconds), at most 365d.",
              javaType = "String")
    public static final String PENALTY = "CamelTokenBucketPenalty";

    @Metadata(label = "producer", description = "For acquire: candidate keys (separated by commas, or a Collection);"
            + " the one whose tokens come soonest is charged and set in the key header. An entry that is itself a"
            + " Collection is a group: its first key the candidate, the rest charged with it. At most maxCandidates.",
              javaType = "String")
    public static final String CANDIDATES = "CamelTokenBucketCandidates";

    @Metadata(label = "producer", description = "For acquire and refund: more keys charged with the exchange's key"
            + " (separated by commas, or a Collection), all in one atomic step or none; the exchange waits for the"
            + " slowest. Replaces the allOf option; at most maxAllOf.", javaType = "String")
    public static final String ALL_OF = "CamelTokenBucketAllOf";

    @Metadata(label = "producer", description = "Set by peek and penalize: milliseconds until the requested"
            + " tokens would be available (0: now); with every in-flight slot held, at least when one may be free.",
              javaType = "Long")
    public static final String WAIT_ESTIMATE = "CamelTokenBucketWaitEstimate";

    @Metadata(label = "producer", description = "Set by throttled and rate: the key's current rate as a fraction of"
            + " its configured rate (1.0 without adaptive).", javaType = "Double")
    public static final String RATE = "CamelTokenBucketRate";

    @Metadata(label = "producer", description = "Set by throttled: true when this signal cut the rate, false when it"
            + " came within adaptiveHold of the last cut.", javaType = "Boolean")
    public static final String RATE_CUT = "CamelTokenBucketRateCut";

    private TokenBucketConstants() {
    }
}
