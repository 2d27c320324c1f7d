package io.tokenbucket.camel;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks the text of the numeric options of an endpoint URI before Camel binds them, because Camel's binding
 * quietly turns text it cannot read ({@code capacity=abc}, {@code maxWait=5x}) into 0, and a {@code maxWait}
 * of 0 would silently mean "never wait"; and reads Camel duration text exactly, because Camel's own reader
 * ({@code TimeUtils}) wraps around on large values ({@code 200000000000000d} becomes a negative or small number).
 * A duration's text is replaced by its milliseconds, so Camel binds the number and never reads the text again.
 * Values that are not text (numbers, durations from the Java DSL) are left to Camel.
 */
final class TokenBucketOptionText {

    private static final Set<String> WHOLE_NUMBERS = Set.of("capacity", "refillAmount", "cost");
    private static final Set<String> INT_NUMBERS = Set.of("metricsMaxKeys", "maxWaiting", "maxCandidates",
            "maxAllOf");
    private static final Set<String> DURATIONS = Set.of("refillPeriod", "maxWait", "storeTimeout", "adaptiveHold",
            "adaptiveMemory", "stopTimeout");
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

    /**
     * @throws IllegalArgumentException naming the option and the text when a numeric option's text is not a
     *                                  whole number, or a duration option's text is not a Camel duration
     */
    static void check(Map<String, Object> parameters) {
        for (Map.Entry<String, Object> option : parameters.entrySet()) {
            if (!(option.getValue() instanceof String text)) {
                continue;
            }
            boolean isInt = INT_NUMBERS.contains(option.getKey());
            if (isInt || WHOLE_NUMBERS.contains(option.getKey())) {
                if (!WHOLE_NUMBER.matcher(text).matches()) {
                    throw new IllegalArgumentException(option.getKey() + " must be a whole number, was '" + text
                            + "'");
                }
                try {
                    long value = Long.parseLong(text.trim());
                    if (isInt) {
                        Math.toIntExact(value);
                    }
                } catch (NumberFormatException | ArithmeticException tooLarge) {
                    throw new IllegalArgumentException(option.getKey() + " must be a whole number of at most "
                            + (isInt ? Integer.MAX_VALUE : Long.MAX_VALUE) + ", was '" + text + "'");
                }
            }
            if (DURATIONS.contains(option.getKey())) {
                option.setValue(durationOption(option.getKey(), text));
            }
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
