package io.tokenbucket.camel.syntax;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;

/**
 * Reads the limit syntax of the {@code limits} and {@code keyLimits} options and of
 * {@link io.tokenbucket.camel.TokenBucketLimitResolver}: a comma-separated list of {@code N/period}, each a limit of
 * {@code N} tokens refilled every {@code period} (Camel duration text: {@code 1s}, {@code 500ms}, {@code 1h}), with an
 * optional {@code :burst} for a capacity other than {@code N}. {@code 10/1s,1000/1h} is 10 per second and 1000 per
 * hour; {@code 1/1s:5} is one per second in bursts of up to 5. One item may be {@code N in flight} (spaces optional):
 * at most {@code N} exchanges of the key between admission and the end of their exchange, with the rate limits or alone
 * ({@code 10/1s,4 in flight}, {@code 4 in flight}).
 *
 * <p>Also reads Camel's duration text ({@link #durationMillis}), for these periods, the duration options and the
 * penalty header. Parsed texts are kept (up to {@value #MAX_CACHED}), so a resolver may answer with the same text on
 * every exchange at no cost.
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketLimitSpec {

    private static final Pattern ITEM = Pattern.compile("\\s*(\\d+)\\s*/\\s*([0-9a-zA-Z ]+?)\\s*(?::\\s*(\\d+)\\s*)?");
    private static final Pattern IN_FLIGHT = Pattern.compile("\\s*(\\d+)\\s*in\\s*flight\\s*",
            Pattern.CASE_INSENSITIVE);
    private static final int MAX_CACHED = 1000;
    private static final Map<String, Limits> PARSED = new ConcurrentHashMap<>();
    /**
     * Camel's duration syntax: days, hours, minutes, seconds, milliseconds, each optional, in that order; besides
     * d, h, m, s and ms, the words Camel's reader also takes ({@code 1hour}, {@code 5min}, {@code 90sec}) and their
     * plurals.
     */
    private static final Pattern DURATION = Pattern.compile("(?:(\\d+)(?:days?|d))?(?:(\\d+)(?:hours?|h))?"
            + "(?:(\\d+)(?:minutes?|mins?|m(?!s)))?(?:(\\d+)(?:seconds?|secs?|s))?"
            + "(?:(\\d+)(?:milliseconds?|millis|ms))?");
    private static final long[] UNIT_MILLIS = {86_400_000L, 3_600_000L, 60_000L, 1000L, 1L};

    /** What {@link #durationMillis} answers for text that is not a duration. */
    public static final long NOT_A_DURATION = Long.MIN_VALUE;

    /** What {@link #durationMillis} answers for a duration too long for a {@code long} of milliseconds. */
    public static final long TOO_LONG = Long.MAX_VALUE;

    private TokenBucketLimitSpec() {
    }

    /**
     * The limits that {@code text} names.
     *
     * @param source where the text comes from, for the message (an option or the resolver)
     * @throws IllegalArgumentException naming the source and the text when it does not read as limits
     */
    public static Limits parse(String text, String source) {
        return parse(text, () -> source);
    }

    /**
     * {@link #parse(String, String)} with the source described only when there is an error to report: the limit
     * resolver's description names the key, which may be long.
     */
    public static Limits parse(String text, Supplier<String> source) {
        Limits cached = PARSED.get(text);
        if (cached != null) {
            return cached;
        }
        List<Limit> limits = new ArrayList<>();
        long inFlight = 0;
        for (String item : text.split(",", -1)) { // -1: a trailing empty item is refused too
            Matcher slots = IN_FLIGHT.matcher(item);
            if (slots.matches()) {
                if (inFlight != 0) {
                    throw new IllegalArgumentException(source.get() + " '" + text + "' names an in-flight limit"
                            + " twice; give one");
                }
                inFlight = inFlight(slots.group(1), text, source);
                continue;
            }
            Matcher m = ITEM.matcher(item);
            long periodMillis;
            if (!m.matches() || (periodMillis = durationMillis(m.group(2))) < 1) {
                throw new IllegalArgumentException(source.get() + " must be limits such as 10/1s or 10/1s,1000/1h or"
                        + " 1/1s:5 (one per second, bursts of 5) or 10/1s,4 in flight, was '" + text + "'");
            }
            long tokens;
            long burst;
            try {
                tokens = Long.parseLong(m.group(1));
                burst = m.group(3) != null ? Long.parseLong(m.group(3)) : tokens;
            } catch (NumberFormatException tooLarge) {
                throw new IllegalArgumentException(source.get() + " '" + text + "': " + m.group(1)
                        + (m.group(3) != null ? " or " + m.group(3) : "") + " is larger than a long holds");
            }
            if (periodMillis == TOO_LONG) {
                throw new IllegalArgumentException(source.get() + " '" + text + "': the period " + m.group(2).trim()
                        + " is longer than a long holds in milliseconds");
            }
            try {
                limits.add(Limit.of(burst, tokens, nanos(periodMillis, "the period " + m.group(2).trim())));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(source.get() + " '" + text + "': " + e.getMessage(), e);
            }
        }
        if (limits.isEmpty() && inFlight == 0) {
            throw new IllegalArgumentException(source.get() + " must be limits such as 10/1s or 10/1s,1000/1h or"
                    + " 1/1s:5 (one per second, bursts of 5) or 10/1s,4 in flight, was '" + text + "'");
        }
        Limits parsed = limits.isEmpty() ? Limits.inFlightOnly(inFlight) : Limits.of(limits).withInFlight(inFlight);
        if (PARSED.size() < MAX_CACHED) {
            PARSED.put(text, parsed);
        }
        return parsed;
    }

    /** The number of an {@code N in flight} item, from 1 to {@link Limits#MAX_IN_FLIGHT}. */
    private static long inFlight(String digits, String text, Supplier<String> source) {
        long n;
        try {
            n = Long.parseLong(digits);
        } catch (NumberFormatException tooLarge) {
            n = Long.MAX_VALUE;
        }
        if (n < 1 || n > Limits.MAX_IN_FLIGHT) {
            throw new IllegalArgumentException(source.get() + " '" + text + "': an in-flight limit must be between 1"
                    + " and " + Limits.MAX_IN_FLIGHT + ", was " + digits);
        }
        return n;
    }

    /**
     * A period of {@code millis} milliseconds in nanoseconds, exactly: a period too long for a {@code long} of
     * nanoseconds (292 years) is refused rather than saturated, which would make the limit faster than written.
     *
     * @throws IllegalArgumentException naming {@code what}
     */
    public static long nanos(long millis, String what) {
        try {
            return Math.multiplyExact(millis, 1_000_000L);
        } catch (ArithmeticException tooLong) {
            throw new IllegalArgumentException(what + " must be at most " + Long.MAX_VALUE / 1_000_000L
                    + " ms (292 years), was " + millis + " ms");
        }
    }

    /**
     * The milliseconds of a Camel duration text ({@code 1s}, {@code 500ms}, {@code 2m}, {@code 1h30m}, {@code 1d},
     * {@code 5min}, ISO-8601 such as {@code PT2S} (a fraction of a millisecond dropped), or a plain number of
     * milliseconds, which may be negative), exactly: {@link #TOO_LONG} when it is longer than
     * a {@code long} holds, {@link #NOT_A_DURATION} when it is not a duration.
     */
    public static long durationMillis(String text) {
        String t = text.trim();
        if (t.startsWith("P") || t.startsWith("p") || t.startsWith("-P") || t.startsWith("-p")) {
            // ISO-8601, as Spring writes durations (so the starter needs no reader of its own); java.time reads it exactly
            try {
                return Duration.parse(t).toMillis();
            } catch (DateTimeParseException e) {
                // java.time reports a number of units too large for a Duration as a parse error caused by overflow
                return e.getCause() instanceof ArithmeticException && !t.startsWith("-") ? TOO_LONG : NOT_A_DURATION;
            } catch (ArithmeticException e) {
                return t.startsWith("-") ? NOT_A_DURATION : TOO_LONG;
            }
        }
        if (t.matches("-?\\d+")) {
            try {
                return Long.parseLong(t);
            } catch (NumberFormatException e) {
                return t.startsWith("-") ? NOT_A_DURATION : TOO_LONG;
            }
        }
        Matcher m = DURATION.matcher(t);
        if (t.isEmpty() || !m.matches()) {
            return NOT_A_DURATION;
        }
        long total = 0;
        for (int unit = 0; unit < UNIT_MILLIS.length; unit++) {
            String digits = m.group(unit + 1);
            if (digits == null) {
                continue;
            }
            try {
                total = Math.addExact(total, Math.multiplyExact(Long.parseLong(digits), UNIT_MILLIS[unit]));
            } catch (ArithmeticException | NumberFormatException tooLong) {
                return TOO_LONG;
            }
        }
        return total;
    }

    /**
     * A key pattern of {@code keyLimits}: a key, or a glob where {@code *} stands for any run of characters.
     * Matched without regular expressions, so a key of any length sent by a client cannot make matching backtrack.
     * Split at its stars once, when the option is parsed, not per exchange.
     */
    public static final class Glob {
        private final String pattern;
        private final String[] pieces;

        Glob(String pattern) {
            this.pattern = pattern;
            this.pieces = pattern.split("\\*", -1);
        }

        /**
         * Whether {@code key} matches the whole pattern: the text before the first {@code *} starts the key, the text
         * after the last ends it, and the pieces between are found in order, each as early as it occurs (which is
         * always right for a glob of stars only, so there is no backtracking: at most key length × piece length
         * steps per piece).
         */
        public boolean matches(String key) {
            if (pieces.length == 1) {
                return key.equals(pattern);
            }
            String first = pieces[0];
            String last = pieces[pieces.length - 1];
            if (key.length() < first.length() + last.length() || !key.startsWith(first) || !key.endsWith(last)) {
                return false;
            }
            int from = first.length();
            int until = key.length() - last.length();
            for (int i = 1; i < pieces.length - 1; i++) {
                int found = key.indexOf(pieces[i], from);
                if (found < 0 || found + pieces[i].length() > until) {
                    return false;
                }
                from = found + pieces[i].length();
            }
            return true;
        }

        @Override
        public String toString() {
            return pattern;
        }
    }

    /** The patterns of a comma-separated list such as the {@code adaptiveKeys} option's, blank entries skipped. */
    public static List<Glob> parseGlobs(String text) {
        return Arrays.stream(text.split(",")).filter(item -> !item.isBlank()).map(item -> new Glob(item.trim()))
                .toList();
    }

    /**
     * The per-key limits of the {@code keyLimits} option: {@code pattern=limits} entries separated by {@code ;},
     * where a pattern is a key or a glob with {@code *} ({@code premium-*=20/1s;p7=10/1s,1000/1h}). The first
     * matching entry wins, so an entry that an earlier one matches whole ({@code a=..;a=..}, {@code p*=..;p7=..}) is
     * refused: its limits would never apply.
     */
    public static List<Map.Entry<Glob, Limits>> parseKeyLimits(String text) {
        List<Map.Entry<Glob, Limits>> entries = new ArrayList<>();
        for (String entry : text.split(";")) {
            if (entry.isBlank()) {
                continue;
            }
            int eq = entry.indexOf('=');
            String glob = eq < 0 ? "" : entry.substring(0, eq).trim();
            if (glob.isEmpty()) {
                throw new IllegalArgumentException("keyLimits must be entries such as premium-*=20/1s;p7=10/1s"
                        + " separated by ';', was '" + text + "'");
            }
            for (Map.Entry<Glob, Limits> earlier : entries) {
                // the pattern read as a key, its stars as characters: an earlier glob that matches it matches every
                // key the pattern does (its pieces hold no star, so they fall within the pattern's starless runs)
                if (earlier.getKey().matches(glob)) {
                    throw new IllegalArgumentException("keyLimits entry '" + glob + "' never applies: entry '"
                            + earlier.getKey() + "' comes first and matches every key it matches, was '" + text + "'");
                }
            }
            entries.add(Map.entry(new Glob(glob), parse(entry.substring(eq + 1).trim(), "keyLimits entry " + glob)));
        }
        return entries;
    }
}
