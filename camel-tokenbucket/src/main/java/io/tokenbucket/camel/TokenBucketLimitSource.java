package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;

/**
 * Where an endpoint's keys get their limits: the limit resolver's answer, else the first {@code keyLimits} entry
 * that matches, else the endpoint's own limits ({@code limits}, or {@code capacity}, {@code refillAmount} and
 * {@code refillPeriod}). Both options can change at runtime (JMX, or the configuration's setters); the parsed
 * {@code keyLimits} are kept with the text they came from, so a change is seen on each key's next exchange and an
 * unchanged text is parsed once. With {@code adaptive=true} every key's limits carry the endpoint's adaptation,
 * wherever they come from, or, with {@code adaptiveKeys}, the limits of the keys those patterns match (the others
 * keep a fixed rate). Also writes limits and waits in the user's terms, for messages and headers.
 */
final class TokenBucketLimitSource {

    private final TokenBucketConfiguration configuration;
    private volatile Limits limits;
    /** {@link #limits} without the adaptation, for keys that adaptiveKeys leaves out. */
    private volatile Limits fixedLimits;
    /** The adaptation the adaptive keys' limits carry (null: a fixed rate), read at validation. */
    private volatile Adaptive adaptive;
    private volatile KeyLimits keyLimits;
    private volatile AdaptiveKeys adaptiveKeys;

    /**
     * The parsed keyLimits option, kept with the text it came from so a change at runtime is seen: each pattern with
     * its limits at a fixed rate and with the adaptation.
     */
    private record KeyLimits(String text, List<KeyLimit> entries) {
    }

    private record KeyLimit(TokenBucketLimitSpec.Glob glob, Limits fixed, Limits adapting) {
    }

    /** The parsed adaptiveKeys option, kept with its text. */
    private record AdaptiveKeys(String text, List<TokenBucketLimitSpec.Glob> globs) {
    }

    /** The limits of {@code configuration}, read when {@link #validate()} is called. */
    TokenBucketLimitSource(TokenBucketConfiguration configuration) {
        this.configuration = configuration;
    }

    /**
     * Checks every option of the configuration and takes its limits.
     *
     * @throws IllegalArgumentException naming the bad option and its value
     */
    void validate() {
        Limits validated = configuration.validate();
        adaptive = validated.adaptive();
        fixedLimits = validated.withAdaptive(null);
        limits = validated;
    }

    /** Whether {@link #validate()} has succeeded. */
    boolean isValidated() {
        return limits != null;
    }

    /** The endpoint's own limits in nanosecond ticks; null before {@link #validate()}. */
    Limits limits() {
        return limits;
    }

    /**
     * The limits of {@code key}, the key as the exchange sent it (never its stored, possibly hashed, form): the
     * limit resolver's answer, else the first keyLimits entry that matches, else the endpoint's.
     *
     * @throws IllegalArgumentException when the resolver's answer is not limits, naming the key
     */
    Limits limitsFor(String key) {
        boolean adapts = adapts(key);
        TokenBucketLimitResolver resolver = configuration.getLimitResolver();
        if (resolver != null) {
            String text = resolver.limitsFor(key);
            if (text != null) {
                return TokenBucketLimitSpec.parse(text, () -> TokenBucketExceptions.resolverAnswer(key))
                        .withAdaptive(adapts ? adaptive : null);
            }
        }
        String text = configuration.getKeyLimits();
        if (text == null) {
            return adapts ? limits : fixedLimits;
        }
        KeyLimits parsed = keyLimits;
        if (parsed == null || !parsed.text().equals(text)) {
            parsed = new KeyLimits(text, TokenBucketLimitSpec.parseKeyLimits(text).stream()
                    .map(e -> new KeyLimit(e.getKey(), e.getValue(), e.getValue().withAdaptive(adaptive))).toList());
            keyLimits = parsed;
        }
        for (KeyLimit entry : parsed.entries()) {
            if (entry.glob().matches(key)) {
                return adapts ? entry.adapting() : entry.fixed();
            }
        }
        return adapts ? limits : fixedLimits;
    }

    /** Whether {@code key}'s rate adapts: adaptive=true, and adaptiveKeys unset or matching the key. */
    private boolean adapts(String key) {
        if (adaptive == null) {
            return false;
        }
        String text = configuration.getAdaptiveKeys();
        if (text == null) {
            return true;
        }
        AdaptiveKeys parsed = adaptiveKeys;
        if (parsed == null || !parsed.text().equals(text)) {
            parsed = new AdaptiveKeys(text, TokenBucketLimitSpec.parseGlobs(text));
            adaptiveKeys = parsed;
        }
        for (TokenBucketLimitSpec.Glob glob : parsed.globs()) {
            if (glob.matches(key)) {
                return true;
            }
        }
        return false;
    }

    /** Replaces the endpoint's limits, in the syntax of the {@code limits} option; a bad text changes nothing. */
    void update(String text) {
        Limits parsed = TokenBucketLimitSpec.parse(text, "limits");
        configuration.setLimits(text);
        fixedLimits = parsed;
        limits = parsed.withAdaptive(adaptive);
    }

    /** Replaces the per-key limits, in the syntax of the {@code keyLimits} option; a bad text changes nothing. */
    void updateKeyLimits(String text) {
        TokenBucketLimitSpec.parseKeyLimits(text);
        configuration.setKeyLimits(text);
    }

    /** The endpoint's limits in the user's terms ({@link #describe(Limits)}), empty before validation. */
    String describe() {
        Limits current = limits;
        return current == null ? "" : describe(current);
    }

    /** Limits in the user's terms, for messages: {@code capacity 5, refill 5 per 1000 ms}, joined by "; ". */
    static String describe(Limits limits) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < limits.size(); i++) {
            Limit limit = limits.get(i);
            text.append(i == 0 ? "" : "; ").append("capacity ").append(limit.capacity()).append(", refill ")
                    .append(limit.refillAmount()).append(" per ")
                    .append(TimeUnit.NANOSECONDS.toMillis(limit.refillPeriod())).append(" ms");
        }
        return text.toString();
    }

    /** Nanoseconds as whole milliseconds, rounded up, never negative and never wrapping: waits as users see them. */
    static long ceilMillis(long nanos) {
        return nanos <= 0 ? 0 : nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1);
    }
}
