package io.tokenbucket.camel;

/**
 * Gives a bucket key its own limits, for example a premium proxy 20 per second while the others get 5. Bind
 * an implementation in the registry and name it with the endpoint option {@code limitResolver=#myResolver}.
 *
 * <p>It is asked on every exchange, so its answer may change at runtime; the key's next exchange uses the new
 * limits and keeps its state (see {@link #limitsFor}). Keep it fast: a map lookup, not I/O.
 */
@FunctionalInterface
public interface TokenBucketLimitResolver {

    /**
     * The limits of {@code key} in the syntax of the {@code limits} option ({@code 20/1s}, {@code 10/1s,1000/1h},
     * {@code 1/1s:5} for a burst of 5), or null for the endpoint's own limits.
     *
     * <p>A bucket's state is, per limit (by position), the time until that limit is full again, and it carries
     * over a change of limits: a bucket that was full stays full, and one that would have been full in two
     * seconds is full in two seconds under the new limits too, holding what the new limits allow then.
     *
     * @param key the bucket key (hashed when it was longer than 128 characters)
     */
    String limitsFor(String key);
}
