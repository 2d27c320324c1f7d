package io.tokenbucket.camel;

import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import org.apache.camel.util.TimeUtils;

/**
 * Checks the text of the numeric options of an endpoint URI before Camel binds them, because Camel's binding
 * quietly turns text it cannot read ({@code capacity=abc}, {@code maxWait=5x}) into 0, and a {@code maxWait}
 * of 0 would silently mean "never wait". Values that are not text (numbers, durations from the Java DSL) are
 * left to Camel.
 */
final class TokenBucketOptionText {

    private static final Set<String> WHOLE_NUMBERS = Set.of("capacity", "refillTokens", "tokens", "metricsMaxKeys");
    private static final Set<String> DURATIONS = Set.of("refillPeriod", "maxWait", "storeTimeout");
    private static final Pattern WHOLE_NUMBER = Pattern.compile("\\s*[-+]?\\d+\\s*");
    private static final Pattern ZERO_DURATION = Pattern.compile("\\s*0+\\s*[a-zA-Z]*\\s*");

    /** What {@link #durationMillis} answers for text that is not a duration. */
    static final long NOT_A_DURATION = Long.MIN_VALUE;

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
            if (WHOLE_NUMBERS.contains(option.getKey()) && !WHOLE_NUMBER.matcher(text).matches()) {
                throw new IllegalArgumentException(option.getKey() + " must be a whole number, was '" + text + "'");
            }
            if (DURATIONS.contains(option.getKey()) && durationMillis(text) == NOT_A_DURATION) {
                throw new IllegalArgumentException(option.getKey() + " must be a duration such as 1s, 500ms, 2m or"
                        + " 1h, or a number of milliseconds, was '" + text + "'");
            }
        }
    }

    /**
     * The milliseconds of a Camel duration text ({@code 1s}, {@code 500ms}, {@code 2m}, {@code 1h}, or a plain
     * number of milliseconds), or {@link #NOT_A_DURATION} when it is not one.
     */
    static long durationMillis(String text) {
        try {
            long millis = TimeUtils.toMilliSeconds(text.trim());
            // TimeUtils answers 0 for text it cannot read: only a written zero may give 0
            return millis != 0 || ZERO_DURATION.matcher(text).matches() ? millis : NOT_A_DURATION;
        } catch (RuntimeException e) {
            return NOT_A_DURATION;
        }
    }
}
