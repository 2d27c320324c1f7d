package io.tokenbucket.camel.syntax;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
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
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketOptionText {

    /** Options that count something ({@code long}): tokens, exchanges, microseconds of spinning. */
    private static final Set<String> LONG_COUNTS = Set.of("capacity", "refillAmount", "cost", "maxInFlight",
            "timerSpinMicros");
    /** Options that count something and are {@code int}s. */
    private static final Set<String> INT_COUNTS = Set.of("maxWaiting", "maxCandidates", "maxAllOf", "metricsMaxKeys");
    /** Options that are durations, in milliseconds. */
    private static final Set<String> DURATIONS = Set.of("refillPeriod", "maxWait", "storeTimeout", "adaptiveHold",
            "adaptiveMemory", "stopTimeout", "inFlightLease", "maxLateness");
    /** Every numeric option by its name in lower case and without dashes, as configurers may be asked for it. */
    private static final Map<String, String> NUMERIC = numericByLooseName();
    private static final Pattern WHOLE_NUMBER = Pattern.compile("\\s*[-+]?\\d+\\s*");


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
    public static boolean isCount(String name) {
        return LONG_COUNTS.contains(name) || INT_COUNTS.contains(name);
    }

    /** Whether option {@code name} is a duration in milliseconds. */
    public static boolean isDuration(String name) {
        return DURATIONS.contains(name);
    }

    /**
     * Reads the text of every numeric option of an endpoint URI's {@code parameters} as {@link #bind} does, and
     * puts the number read in its place. An option given twice is refused: Camel would bind one of two spellings
     * that differ in case or dashes ({@code capacity=5&Capacity=9}) and drop the other, and pass the values of one
     * spelling repeated as a list, which a text option takes as the text {@code [a, b]}.
     *
     * @throws IllegalArgumentException naming the option and the text, as {@link #bind} does, or an option given
     *                                  twice (and its values, but those of {@code redisUri}, which may hold a password)
     */
    public static void check(Map<String, Object> parameters) {
        refuseTwice(parameters.keySet(), "");
        parameters.forEach((name, value) -> {
            if (value instanceof Collection<?> values) {
                throw new IllegalArgumentException(name + " is given " + values.size() + " times"
                        + (name.replace("-", "").equalsIgnoreCase("redisuri") ? "" : " (" + values + ")")
                        + "; give it once");
            }
        });
        parameters.replaceAll(TokenBucketOptionText::bind);
    }

    /**
     * Refuses an option among {@code names} given in two spellings that differ in case or dashes
     * ({@code maxWait}, {@code max-wait}), of which Camel would bind one and drop the other silently; the message
     * names both, each after {@code prefix}, and no value.
     *
     * @throws IllegalArgumentException naming the two spellings
     */
    public static void refuseTwice(Iterable<String> names, String prefix) {
        Map<String, String> seen = new HashMap<>();
        for (String name : names) {
            String earlier = seen.putIfAbsent(name.replace("-", "").toLowerCase(Locale.ROOT), name);
            if (earlier != null) {
                throw new IllegalArgumentException(prefix + name + " is given twice, as " + prefix + earlier + " and "
                        + prefix + name + "; give it once");
            }
        }
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
    public static Object bind(String name, Object value) {
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
    public static PropertyConfigurer reading(PropertyConfigurer configurer) {
        return configurer == null || configurer instanceof Reading ? configurer : new Reading(configurer);
    }

    /** A configurer that binds what {@link #bind} reads, and otherwise answers as the one it wraps. */
    public static final class Reading implements GeneratedPropertyConfigurer, PropertyConfigurerGetter {
        private final PropertyConfigurer generated;

        private Reading(PropertyConfigurer generated) {
            this.generated = generated;
        }

        /** The configurer this one wraps. */
        public PropertyConfigurer generated() {
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
     * The milliseconds of the duration text of option {@code name}, as {@link TokenBucketLimitSpec#durationMillis}
     * reads it.
     *
     * @throws IllegalArgumentException naming the option and the text when it is no duration, or longer than a
     *                                  {@code long} holds in milliseconds
     */
    public static long durationOption(String name, String text) {
        long millis = TokenBucketLimitSpec.durationMillis(text);
        if (millis == TokenBucketLimitSpec.NOT_A_DURATION) {
            throw new IllegalArgumentException(name + " must be a duration such as 1s, 500ms, 2m or 1h, or a number"
                    + " of milliseconds, was '" + text + "'");
        }
        if (millis == TokenBucketLimitSpec.TOO_LONG) {
            throw new IllegalArgumentException(name + " is longer than any duration a long holds in milliseconds,"
                    + " was '" + text + "'");
        }
        return millis;
    }

}
