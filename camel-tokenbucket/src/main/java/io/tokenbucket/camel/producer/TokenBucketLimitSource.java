package io.tokenbucket.camel.producer;

import java.util.List;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.TokenBucketAdaptiveOptions;
import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketException;
import io.tokenbucket.camel.TokenBucketLimitResolver;
import io.tokenbucket.camel.TokenBucketMode;
import io.tokenbucket.camel.TokenBucketStoreType;
import io.tokenbucket.camel.syntax.TokenBucketLimitSpec;
import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.store.BucketStore;
import io.tokenbucket.store.redis.RedisBucketStore;
import org.apache.camel.util.ObjectHelper;

/**
 * Where an endpoint's keys get their limits: the limit resolver's answer, else the first {@code keyLimits} entry
 * that matches, else the endpoint's own limits ({@code limits}, or {@code capacity}, {@code refillAmount} and
 * {@code refillPeriod}). Both options can change at runtime (JMX, or the configuration's setters); the parsed
 * {@code keyLimits} are kept with the text they came from, so a change is seen on each key's next exchange and an
 * unchanged text is parsed once. With {@code adaptive=true} every key's limits carry the endpoint's adaptation,
 * wherever they come from, or, with {@code adaptiveKeys}, the limits of the keys those patterns match (the others
 * keep a fixed rate). Also writes limits and waits in the user's terms, for messages and headers.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketLimitSource {

    private final TokenBucketConfiguration configuration;
    private volatile Limits limits;
    /** {@link #limits} without the adaptation, for keys that adaptiveKeys leaves out. */
    private volatile Limits fixedLimits;
    /** The adaptation the adaptive keys' limits carry (null: a fixed rate), read at validation. */
    private volatile Adaptive adaptive;
    /** The keyLimits option, parsed: each pattern with its limits at a fixed rate and with the adaptation. */
    private volatile Parsed<List<KeyLimit>> keyLimits;
    /** The limit resolver's last answer that passed {@link #requireKept}: the same answer is not checked again. */
    private volatile Limits kept;
    /** The adaptiveKeys option, parsed. */
    private volatile Parsed<List<TokenBucketLimitSpec.Glob>> adaptiveKeys;

    /** An option parsed, kept with the text it came from, so a change at runtime is seen. */
    private record Parsed<T>(String text, T value) {
    }

    private record KeyLimit(TokenBucketLimitSpec.Glob glob, Limits fixed, Limits adapting) {
    }

    /** The limits of {@code configuration}, read when {@link #validate()} is called. */
    public TokenBucketLimitSource(TokenBucketConfiguration configuration) {
        this.configuration = configuration;
    }

    /**
     * Checks every option of the configuration and takes its limits.
     *
     * @throws IllegalArgumentException naming the bad option and its value
     */
    public void validate() {
        Limits validated = check(configuration);
        adaptive = validated.adaptive();
        fixedLimits = validated.withAdaptive(null);
        limits = validated;
    }

    /**
     * Checks every option of {@code c} (but the {@code allOf} keys: {@code TokenBucketKeyLists.allOfOption}) and
     * builds the endpoint's limits from them, in nanosecond ticks, with the
     * adaptation of the {@code adaptive*} options when {@code adaptive=true}.
     *
     * @throws IllegalArgumentException naming the option and its value
     */
    public static Limits check(TokenBucketConfiguration c) {
        // also when limits replace them: a value the user wrote is refused, never silently left unused
        atLeast("capacity", c.getCapacity(), 1, "must be at least 1");
        atLeast("refillAmount", c.getRefillAmount(), 1, "must be at least 1");
        if (c.getRefillPeriod() < 1) {
            throw new IllegalArgumentException("refillPeriod must be at least 1 millisecond, was "
                    + c.getRefillPeriod());
        }
        if (c.getMaxInFlight() < 0 || c.getMaxInFlight() > Limits.MAX_IN_FLIGHT) {
            throw new IllegalArgumentException("maxInFlight must be between 0 (none) and " + Limits.MAX_IN_FLIGHT
                    + ", was " + c.getMaxInFlight());
        }
        String rate = c.getLimits() != null ? "limits '" + c.getLimits() + "'" : "capacity " + c.getCapacity()
                + " with refillAmount " + c.getRefillAmount() + " per refillPeriod " + c.getRefillPeriod() + " ms";
        Limits limits;
        try {
            limits = c.getLimits() != null ? TokenBucketLimitSpec.parse(c.getLimits(), "limits")
                    : c.getMaxInFlight() > 0 && !c.isRateGiven() ? Limits.inFlightOnly(c.getMaxInFlight())
                    : Limits.of(Limit.of(c.getCapacity(), c.getRefillAmount(), TokenBucketLimitSpec.nanos(
                            c.getRefillPeriod(), "refillPeriod")));
        } catch (IllegalArgumentException e) {
            // the limits text names itself; the three options are named here, in milliseconds rather than ticks
            throw c.getLimits() != null ? e : new IllegalArgumentException(rate + ": " + e.getMessage(), e);
        }
        limits = withMaxInFlight(limits, c);
        if (c.getCost() < 1 || c.getCost() > limits.capacity()) {
            throw new IllegalArgumentException("cost must be between 1 and capacity " + limits.capacity()
                    + ", was " + c.getCost());
        }
        if (c.getKeyLimits() != null) {
            TokenBucketLimitSpec.parseKeyLimits(c.getKeyLimits());
        }
        Long maxWait = c.getMaxWait();
        if (maxWait != null && (maxWait < 0 || maxWait > TokenBucketConfiguration.MAX_WAIT_MILLIS)) {
            throw new IllegalArgumentException("maxWait must be between 0 and 365d ("
                    + TokenBucketConfiguration.MAX_WAIT_MILLIS + " ms, the longest wait of any exchange), was "
                    + maxWait + " ms");
        }
        atLeast("maxWaiting", c.getMaxWaiting(), 0, "must not be negative");
        atLeast("maxCandidates", c.getMaxCandidates(), 1, "must be at least 1");
        if (c.getMaxCandidates() > BucketStore.MAX_KEYS) { // more would fail every exchange that named them
            throw new IllegalArgumentException("maxCandidates must be at most " + BucketStore.MAX_KEYS + " (the keys"
                    + " one store step charges), was " + c.getMaxCandidates());
        }
        if (c.getMaxAllOf() < 1 || c.getMaxAllOf() > TokenBucketConfiguration.MAX_ALL_OF) {
            throw new IllegalArgumentException("maxAllOf must be between 1 and " + TokenBucketConfiguration.MAX_ALL_OF
                    + ", was " + c.getMaxAllOf());
        }
        if (c.getStore() == TokenBucketStoreType.redis
                && ObjectHelper.loadClass("io.lettuce.core.AbstractRedisClient",
                        TokenBucketLimitSource.class.getClassLoader()) == null) {
            throw new IllegalArgumentException("store=redis needs Lettuce on the classpath: add the dependency"
                    + " io.lettuce:lettuce-core");
        }
        requireKept(limits, c, rate);
        if (c.getKeyLimits() != null) {
            requireKept(c.getKeyLimits(), c);
        }
        atLeast("metricsMaxKeys", c.getMetricsMaxKeys(), 0, "must not be negative");
        if (c.getInFlightLease() < 1000 || c.getInFlightLease() > TokenBucketConfiguration.MAX_WAIT_MILLIS) {
            throw new IllegalArgumentException("inFlightLease must be between 1s and 365d, was "
                    + c.getInFlightLease() + " ms");
        }
        atLeast("stopTimeout", c.getStopTimeout(), 0, "must not be negative");
        atLeast("storeTimeout", c.getStoreTimeout(), 1, "must be at least 1 millisecond");
        // past it, a deadline of now + timeout no longer fits a long of nanoseconds
        atMost("stopTimeout", c.getStopTimeout());
        atMost("storeTimeout", c.getStoreTimeout());
        if (c.getAdaptiveKeys() != null) {
            if (!c.isAdaptive()) {
                throw new IllegalArgumentException("adaptiveKeys needs adaptive=true, was adaptiveKeys '"
                        + c.getAdaptiveKeys() + "' with adaptive=false");
            }
            if (TokenBucketLimitSpec.parseGlobs(c.getAdaptiveKeys()).isEmpty()) {
                throw new IllegalArgumentException("adaptiveKeys must name at least one key or pattern, was '"
                        + c.getAdaptiveKeys() + "'");
            }
        }
        if (c.getKeyHeader() == null || c.getKeyHeader().isBlank()) {
            throw new IllegalArgumentException("keyHeader must name a header, was '" + c.getKeyHeader() + "'");
        }
        return limits.withAdaptive(adaptation(c));
    }

    /**
     * Refuses limits that the store of {@code c} would not keep as written, naming {@code source}: a rate its clock
     * (nanoseconds here, microseconds in Redis) slows by more than 1 %, or, in Redis, a burst beyond its script; and
     * limits whose capacity is below the cost option, which no exchange of theirs could pass.
     */
    private static void requireKept(Limits limits, TokenBucketConfiguration c, String source) {
        if (c.getCost() > limits.capacity()) {
            throw new IllegalArgumentException(source + ": cost " + c.getCost() + " is more than its capacity "
                    + limits.capacity() + ": no exchange could pass");
        }
        requireRate(limits, c, source);
    }

    /**
     * Refuses limits whose rate the store of {@code c} would not keep (its clock slows it by more than 1 %, or, in
     * Redis, a burst beyond its script), naming {@code source}.
     */
    private static void requireRate(Limits limits, TokenBucketConfiguration c, String source) {
        try {
            if (c.getStore() == TokenBucketStoreType.redis) {
                RedisBucketStore.check(limits);
            } else {
                for (int i = 0; i < limits.size(); i++) {
                    limits.get(i).requireRateAt(1);
                }
            }
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": " + e.getMessage(), e);
        }
    }

    /** {@link #requireKept(Limits, TokenBucketConfiguration, String)} for every entry of a keyLimits text. */
    private static void requireKept(String keyLimits, TokenBucketConfiguration c) {
        for (var entry : TokenBucketLimitSpec.parseKeyLimits(keyLimits)) {
            requireKept(entry.getValue(), c, "keyLimits entry " + entry.getKey());
        }
    }

    /** Refuses a duration option longer than the longest wait of any exchange, 365 days. */
    private static void atMost(String option, long millis) {
        if (millis > TokenBucketConfiguration.MAX_WAIT_MILLIS) {
            throw new IllegalArgumentException(option + " must be at most 365d ("
                    + TokenBucketConfiguration.MAX_WAIT_MILLIS + " ms), was " + millis + " ms");
        }
    }

    private static void atLeast(String option, long value, long min, String rule) {
        if (value < min) {
            throw new IllegalArgumentException(option + " " + rule + ", was " + value);
        }
    }

    /**
     * The adaptation of the {@code adaptive*} options, or null when {@code adaptive=false}.
     *
     * @throws IllegalArgumentException naming the option and its value when one is out of range, adaptive or not
     */
    public static Adaptive adaptation(TokenBucketAdaptiveOptions c) {
        // checked with adaptive=false too: a value the user wrote is refused, never silently left unused
        long floor = ppm("adaptiveFloor", c.getAdaptiveFloor(), 1, Adaptive.PPM - 1, "from 0.000001 to below 1");
        long decrease = ppm("adaptiveDecrease", c.getAdaptiveDecrease(), 1, Adaptive.PPM - 1, "above 0 and below 1");
        long increase = ppm("adaptiveIncrease", c.getAdaptiveIncrease(), 1, Adaptive.PPM, "from 0.000001 to 1");
        if (c.getAdaptiveHold() < 0 || c.getAdaptiveHold() > TimeUnit.NANOSECONDS.toMillis(Adaptive.MAX_HOLD_TICKS)) {
            throw new IllegalArgumentException("adaptiveHold must be between 0 and 1h (3600000 ms), was "
                    + c.getAdaptiveHold() + " ms");
        }
        if (c.getAdaptiveMemory() < 0
                || c.getAdaptiveMemory() > TimeUnit.NANOSECONDS.toMillis(Adaptive.MAX_MEMORY_TICKS)) {
            throw new IllegalArgumentException("adaptiveMemory must be between 0 and 1d (86400000 ms), was "
                    + c.getAdaptiveMemory() + " ms");
        }
        long start = ppm("adaptiveStart", c.getAdaptiveStart(), 1, Adaptive.PPM, "from 0.000001 to 1");
        if (!c.isAdaptive()) {
            return null;
        }
        // each option works set alone: a start below the floor (the default 0.1, or one set) lowers the floor to it,
        // as a key must be able to go back to where it started
        floor = Math.min(floor, start);
        return Adaptive.of(floor, decrease, increase, TimeUnit.MILLISECONDS.toNanos(c.getAdaptiveHold()),
                TimeUnit.MILLISECONDS.toNanos(c.getAdaptiveMemory())).withStart(start);
    }

    /** A fraction as whole parts per million, rounded, in {@code [min, max]}; NaN and infinities refused. */
    private static long ppm(String name, double value, long min, long max, String range) {
        double scaled = value * Adaptive.PPM;
        if (Double.isNaN(scaled) || scaled < min - 0.5 || scaled >= max + 0.5) {
            throw new IllegalArgumentException(name + " must be " + range + ", was " + value);
        }
        return Math.max(min, Math.min(max, Math.round(scaled)));
    }

    /**
     * The longest wait {@code c} accepts, in nanoseconds, as a store takes it: 0 outside delay mode, the longest
     * wait of any exchange (365 days) when maxWait is unset.
     */
    static long maxWaitNanos(TokenBucketConfiguration c) {
        if (c.getMode() != TokenBucketMode.delay) {
            return 0;
        }
        return c.getMaxWait() == null ? BucketStore.MAX_WAIT_NANOS : TimeUnit.MILLISECONDS.toNanos(c.getMaxWait());
    }

    /** The wait options of {@code c} as a refusal's message names them. */
    static TokenBucketExceptions.Waits waits(TokenBucketConfiguration c) {
        return new TokenBucketExceptions.Waits(c.getMode(), c.getMaxWait(), c.getMaxWaiting());
    }

    /** {@code limits} with the {@code maxInFlight} option's in-flight limit, unless they name one of their own. */
    private static Limits withMaxInFlight(Limits limits, TokenBucketConfiguration c) {
        return limits.inFlight() == 0 && c.getMaxInFlight() > 0 ? limits.withInFlight(c.getMaxInFlight()) : limits;
    }

    /**
     * Whether the endpoint's options give keys an in-flight limit: maxInFlight, its limits or one of its keyLimits
     * (a limit resolver's answers are not known before its keys come).
     */
    public boolean limitsInFlight() {
        if (configuration.getMaxInFlight() > 0 || (limits != null && limits.inFlight() > 0)) {
            return true;
        }
        String text = configuration.getKeyLimits();
        return text != null && TokenBucketLimitSpec.parseKeyLimits(text).stream()
                .anyMatch(e -> e.getValue().inFlight() > 0);
    }

    /** The endpoint's own limits in nanosecond ticks; null before {@link #validate()}. */
    public Limits limits() {
        return limits;
    }

    /**
     * The limits of {@code key}, the key as the exchange sent it (never its stored, possibly hashed, form): the
     * limit resolver's answer, else the first keyLimits entry that matches, else the endpoint's.
     *
     * @throws IllegalArgumentException naming the key when the resolver's answer is not limits, or limits the store
     *                                  would not keep as written (as {@link #check} refuses them in options)
     */
    public Limits limitsFor(String key) {
        boolean adapts = adapts(key);
        TokenBucketLimitResolver resolver = configuration.getLimitResolver();
        if (resolver != null) {
            Limits own = resolver.resolve(key);
            if (own != null) {
                if (own != kept) { // as an option's limits are: the store would serve a slowed rate silently
                    requireRate(own, configuration, "the limits the limitResolver gave key '"
                            + TokenBucketException.shown(key) + "' (" + describe(own) + ")");
                    kept = own;
                }
                return withMaxInFlight(own, configuration).withAdaptive(adapts ? adaptive : null);
            }
        }
        String text = configuration.getKeyLimits();
        if (text == null) {
            return adapts ? limits : fixedLimits;
        }
        Parsed<List<KeyLimit>> parsed = keyLimits;
        if (parsed == null || !parsed.text().equals(text)) {
            parsed = new Parsed<>(text, TokenBucketLimitSpec.parseKeyLimits(text).stream()
                    .map(e -> keyLimit(e.getKey(), withMaxInFlight(e.getValue(), configuration))).toList());
            keyLimits = parsed;
        }
        for (KeyLimit entry : parsed.value()) {
            if (entry.glob().matches(key)) {
                return adapts ? entry.adapting() : entry.fixed();
            }
        }
        return adapts ? limits : fixedLimits;
    }

    private KeyLimit keyLimit(TokenBucketLimitSpec.Glob glob, Limits fixed) {
        return new KeyLimit(glob, fixed, fixed.withAdaptive(adaptive));
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
        Parsed<List<TokenBucketLimitSpec.Glob>> parsed = adaptiveKeys;
        if (parsed == null || !parsed.text().equals(text)) {
            parsed = new Parsed<>(text, TokenBucketLimitSpec.parseGlobs(text));
            adaptiveKeys = parsed;
        }
        for (TokenBucketLimitSpec.Glob glob : parsed.value()) { // a loop: asked for every key of every exchange
            if (glob.matches(key)) {
                return true;
            }
        }
        return false;
    }

    /** Replaces the endpoint's limits, in the syntax of the {@code limits} option; a bad text changes nothing. */
    public void update(String text) {
        Limits parsed = withMaxInFlight(TokenBucketLimitSpec.parse(text, "limits"), configuration);
        requireKept(parsed, configuration, "limits '" + text + "'");
        configuration.setLimits(text);
        fixedLimits = parsed;
        limits = parsed.withAdaptive(adaptive);
    }

    /** Replaces the per-key limits, in the syntax of the {@code keyLimits} option; a bad text changes nothing. */
    public void updateKeyLimits(String text) {
        requireKept(text, configuration);
        configuration.setKeyLimits(text);
    }

    /** The endpoint's limits in the user's terms ({@link #describe(Limits)}), empty before validation. */
    public String describe() {
        Limits current = limits;
        return current == null ? "" : describe(current);
    }

    /** Limits in the user's terms, for messages: {@code capacity 5, refill 5 per 1000 ms}, joined by "; ". */
    public static String describe(Limits limits) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < limits.size(); i++) {
            Limit limit = limits.get(i);
            text.append(i == 0 ? "" : "; ").append("capacity ").append(limit.capacity()).append(", refill ")
                    .append(limit.refillAmount()).append(" per ")
                    .append(TimeUnit.NANOSECONDS.toMillis(limit.refillPeriod())).append(" ms");
        }
        if (limits.inFlight() > 0) {
            text.append(limits.size() == 0 ? "" : "; ").append(limits.inFlight()).append(" in flight");
        }
        return text.toString();
    }

    /** Nanoseconds as whole milliseconds, rounded up, never negative and never wrapping: waits as users see them. */
    public static long ceilMillis(long nanos) {
        return nanos <= 0 ? 0 : nanos / 1_000_000 + (nanos % 1_000_000 == 0 ? 0 : 1);
    }
}
