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
    rate
}
