package io.tokenbucket.camel;

import io.tokenbucket.camel.syntax.TokenBucketLimitSpec;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;

/**
 * Gives a bucket key its own limits, for example a premium proxy 20 per second while the others get 5. Bind
 * an implementation in the registry and name it with the endpoint option {@code limitResolver=#myResolver}.
 *
 * <p>It is asked on every exchange, so its answer may change at runtime; the key's next exchange uses the new
 * limits and keeps its state (see {@link #resolve}). Keep it fast: a map lookup of limits made beforehand, with
 * {@link #parse} ({@code 20/1s}) or {@link Limits#of(Limit...)}, not I/O. A resolver that keeps its limits as text
 * (read from a properties or YAML file) implements {@link Text}, or wraps a function with {@link #text}.
 */
@FunctionalInterface
public interface TokenBucketLimitResolver {

    /**
     * The limits of {@code key}, or null for the endpoint's own limits ({@code keyLimits}, else the endpoint's).
     *
     * <p>A bucket's state is, per limit (by position), the time until that limit is full again, and it carries
     * over a change of limits: a bucket that was full stays full, and one that would have been full in two
     * seconds is full in two seconds under the new limits too, holding what the new limits allow then. With
     * {@code adaptive=true} the endpoint's adaptation is added to the answer; the answer's own is ignored. An answer
     * the store would not keep as written (a rate its clock slows by more than 1 %, as the {@code limits} option is
     * refused for) fails the exchange with an {@link IllegalArgumentException} naming the key and the limits.
     *
     * @param key the bucket key as the exchange sent it (never its stored form, which is hashed past 128
     *            characters)
     */
    Limits resolve(String key);

    /**
     * The limits that {@code text} names, in the syntax of the {@code limits} option: a comma-separated list of
     * {@code N/period} ({@code 20/1s}, {@code 10/1s,1000/1h}), each with an optional {@code :burst}
     * ({@code 1/1s:5}).
     *
     * @throws IllegalArgumentException naming the text when it does not read as limits
     */
    static Limits parse(String text) {
        return TokenBucketLimitSpec.parse(text, "limits");
    }

    /**
     * A resolver that answers in the syntax of the {@code limits} option, for a lambda or method reference:
     * {@code TokenBucketLimitResolver.text(fileLimits::get)}.
     */
    static TokenBucketLimitResolver text(Text resolver) {
        return resolver;
    }

    /**
     * A resolver that answers in the syntax of the {@code limits} option, for limits kept as text; each distinct
     * answer is parsed once (up to 1,000 texts are remembered), so the same text on every exchange costs a lookup.
     */
    @FunctionalInterface
    interface Text extends TokenBucketLimitResolver {

        /**
         * The limits of {@code key} in the syntax of the {@code limits} option ({@code 20/1s}, {@code 10/1s,1000/1h},
         * {@code 1/1s:5} for a burst of 5), or null for the endpoint's own limits; see
         * {@link TokenBucketLimitResolver#resolve}.
         *
         * @param key the bucket key as the exchange sent it
         */
        String limitsFor(String key);

        /**
         * {@link #limitsFor} parsed.
         *
         * @throws IllegalArgumentException naming the key and the text when the answer does not read as limits
         */
        @Override
        default Limits resolve(String key) {
            String text = limitsFor(key);
            return text == null ? null : TokenBucketLimitSpec.parse(text,
                    () -> "the limits the limitResolver gave key '" + TokenBucketException.shown(key) + "'");
        }
    }
}
