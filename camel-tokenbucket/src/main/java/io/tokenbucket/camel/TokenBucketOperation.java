package io.tokenbucket.camel;

/** What an exchange does with its key's bucket, chosen by header {@link TokenBucketConstants#OPERATION}. */
public enum TokenBucketOperation {

    /** Take the tokens (the default): wait, fail or mark as the endpoint's mode says. */
    acquire,

    /** Give {@code CamelTokenBucketCost} tokens back, never above capacity ("reserve an estimate, reconcile"). */
    refund,

    /** Drop the key's state: if the key comes back, its bucket starts full. */
    remove,

    /** Report the tokens remaining and the wait for the requested tokens, consuming nothing. */
    peek,

    /** Make the key unavailable for {@code CamelTokenBucketPenalty}, then let it refill from empty. */
    penalize,

    /**
     * The target refused (say a 429 or 503): cut the key's adaptive rate (needs {@code adaptive=true}), unless a
     * cut is still holding; sets {@code CamelTokenBucketRate} and {@code CamelTokenBucketRateCut}.
     */
    throttled,

    /** Report the key's current rate as header {@code CamelTokenBucketRate} (1.0 at the configured rate). */
    rate,

    /**
     * Give back now the in-flight slots this exchange took on this endpoint, which are otherwise given back when the
     * exchange ends: for a route that acquires in a loop, or goes on long after the limited step. Needs no key; an
     * exchange that holds none passes unchanged.
     */
    release
}
