package io.tokenbucket.camel;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.camel.CamelContext;
import org.apache.camel.spi.GeneratedPropertyConfigurer;
import org.apache.camel.spi.PropertyConfigurer;
import org.apache.camel.spi.PropertyConfigurerGetter;

/**
 * Reads the text of the numeric options, whether it comes in an endpoint URI or as a component property
 * ({@code camel.component.tokenbucket.maxInFlight}), before Camel binds it. Camel reads text given to a {@code long}
 * or {@code int} option as a duration, and its reader answers 0 for text that is none ({@code abc}, {@code 1.5},
 * the empty text, {@code +5}): a {@code maxInFlight} of 0 would silently mean "no in-flight limit", a
 * {@code maxWaiting} of 0 "no exchange waits". Its duration reader also wraps around on large values
 * ({@code 200000000000000d} becomes a negative or small number). So the text of a count is read here as a whole
 * number, and of a duration as a Camel duration, exactly; the number read is bound instead of the text, so Camel
 * never reads it. Ranges (at least 1, at most the capacity...) are checked with the rest of the configuration, by
 * {@code TokenBucketLimitSource}. Values that are not text (numbers, durations from the Java DSL) are left to Camel.
 */
final class TokenBucketOptionText {

    /** Options that count something ({@code long}): tokens, exchanges, microseconds of spinning. */
    private static final Set<String> LONG_COUNTS = Set.of("capacity", "refillAmount", "cost", "maxInFlight",
            "timerSpinMicros");
    /** Options that count something and are {@code int}s. */
    private static final Set<String> INT_COUNTS = Set.of("maxWaiting", "maxCandidates", "maxAllOf", "metricsMaxKeys");
    /** Options that are durations, in milliseconds. */
    private static final Set<String> DURATIONS = Set.of("refillPeriod", "maxWait", "storeTimeout", "adaptiveHold",
            "adaptiveMemory", "stopTimeout", "inFlightLease");
    /** Every numeric option by its name in lower case and without dashes, as configurers may be asked for it. */
    private static final Map<String, String> NUMERIC = numericByLooseName();
    private static final Pattern WHOLE_NUMBER = Pattern.compile("\\s*[-+]?\\d+\\s*");
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
    static final long NOT_A_DURATION = Long.MIN_VALUE;

    /** What {@link #durationMillis} answers for a duration too long for a {@code long} of milliseconds. */
    static final long TOO_LONG = Long.MAX_VALUE;

    private TokenBucketOptionText() {
    }

    private static Map<String, String> numericByLooseName() {
        Map<String, String> names = new HashMap<>();
        for (Set<String> set : List.of(LONG_COUNTS, INT_COUNTS, DURATIONS)) {
            set.forEach(name -> names.put(name.toLowerCase(Locale.ROOT), name));
        }
        return Map.copyOf(names);
    }

    /** Whether option {@code name} counts something (a whole number that is no duration). */
    static boolean isCount(String name) {
        return LONG_COUNTS.contains(name) || INT_COUNTS.contains(name);
    }

    /** Whether option {@code name} is a duration in milliseconds. */
    static boolean isDuration(String name) {
        return DURATIONS.contains(name);
    }

    /**
     * Reads the text of every numeric option of an endpoint URI's {@code parameters} as {@link #bind} does, and
     * puts the number read in its place.
     *
     * @throws IllegalArgumentException naming the option and the text, as {@link #bind} does
     */
    static void check(Map<String, Object> parameters) {
        parameters.replaceAll(TokenBucketOptionText::bind);
    }

    /**
     * What Camel should bind for option {@code name} given {@code value}: the whole number that the text of a count
     * option names (a {@code Long}, or an {@code Integer} for an {@code int} option), the milliseconds of the text of
     * a duration option, and any other value as it is. {@code name} may be in any case, with dashes
     * ({@code max-in-flight}), as Camel Main and configurers that ignore case pass it.
     *
     * @throws IllegalArgumentException naming the option and the text when a count's text is not a whole number (a
     *                                  blank, a fraction, a word, an unresolved {@code {{placeholder}}}) or too
     *                                  large for the option's type, or a duration's text is no Camel duration
     */
    static Object bind(String name, Object value) {
        if (!(value instanceof String text) || name == null) {
            return value;
        }
        String option = NUMERIC.get(name.replace("-", "").toLowerCase(Locale.ROOT));
        if (option == null) {
            return value;
        }
        if (DURATIONS.contains(option)) {
            return durationOption(option, text);
        }
        if (!WHOLE_NUMBER.matcher(text).matches()) {
            throw new IllegalArgumentException(option + " must be a whole number, was '" + text + "'");
        }
        boolean isInt = INT_COUNTS.contains(option);
        try {
            long number = Long.parseLong(text.trim());
            if (isInt) { // not a conditional expression: it would promote the Integer to a Long
                return Integer.valueOf(Math.toIntExact(number));
            }
            return Long.valueOf(number);
        } catch (NumberFormatException | ArithmeticException tooLarge) {
            boolean negative = text.trim().startsWith("-");
            throw new IllegalArgumentException(option + " must be a whole number of at " + (negative ? "least "
                    + (isInt ? Integer.MIN_VALUE : Long.MIN_VALUE) : "most " + (isInt ? Integer.MAX_VALUE
                    : Long.MAX_VALUE)) + ", was '" + text + "'");
        }
    }

    /**
     * {@code configurer} (Camel's generated configurer of the component or its endpoints) with every value read by
     * {@link #bind} first: the options given as component properties are read as those of an endpoint URI.
     */
    static PropertyConfigurer reading(PropertyConfigurer configurer) {
        return configurer == null || configurer instanceof Reading ? configurer : new Reading(configurer);
    }

    /** A configurer that binds what {@link #bind} reads, and otherwise answers as the one it wraps. */
    static final class Reading implements GeneratedPropertyConfigurer, PropertyConfigurerGetter {
        private final PropertyConfigurer generated;

        private Reading(PropertyConfigurer generated) {
            this.generated = generated;
        }

        /** The configurer this one wraps. */
        PropertyConfigurer generated() {
            return generated;
        }

        @Override
        public boolean configure(CamelContext camelContext, Object target, String name, Object value,
                                 boolean ignoreCase) {
            return generated.configure(camelContext, target, name, bind(name, value), ignoreCase);
        }

        @Override
        public Class<?> getOptionType(String name, boolean ignoreCase) {
            return generated instanceof PropertyConfigurerGetter g ? g.getOptionType(name, ignoreCase) : null;
        }

        @Override
        public Object getCollectionValueType(Object target, String name, boolean ignoreCase) {
            return generated instanceof PropertyConfigurerGetter g
                    ? g.getCollectionValueType(target, name, ignoreCase) : null;
        }

        @Override
        public String[] getAutowiredNames() {
            return generated instanceof PropertyConfigurerGetter g ? g.getAutowiredNames() : null;
        }

        @Override
        public Object getOptionValue(Object target, String name, boolean ignoreCase) {
            return generated instanceof PropertyConfigurerGetter g ? g.getOptionValue(target, name, ignoreCase) : null;
        }
    }

    /**
     * The milliseconds of the duration text of option {@code name}, as {@link #durationMillis} reads it.
     *
     * @throws IllegalArgumentException naming the option and the text when it is no duration, or longer than a
     *                                  {@code long} holds in milliseconds
     */
    static long durationOption(String name, String text) {
        long millis = durationMillis(text);
        if (millis == NOT_A_DURATION) {
            throw new IllegalArgumentException(name + " must be a duration such as 1s, 500ms, 2m or 1h, or a number"
                    + " of milliseconds, was '" + text + "'");
        }
        if (millis == TOO_LONG) {
            throw new IllegalArgumentException(name + " is longer than any duration a long holds in milliseconds,"
                    + " was '" + text + "'");
        }
        return millis;
    }

    /**
     * The milliseconds of a Camel duration text ({@code 1s}, {@code 500ms}, {@code 2m}, {@code 1h30m}, {@code 1d},
     * {@code 5min}, ISO-8601 such as {@code PT2S} (a fraction of a millisecond dropped), or a plain number of
     * milliseconds, which may be negative), exactly: {@link #TOO_LONG} when it is longer than
     * a {@code long} holds, {@link #NOT_A_DURATION} when it is not a duration.
     */
    static long durationMillis(String text) {
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
}
