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

    private static final Set<String> WHOLE_NUMBERS = Set.of("capacity", "refillTokens", "tokens");
    private static final Set<String> DURATIONS = Set.of("refillPeriod", "maxWait", "storeTimeout");
    private static final Pattern WHOLE_NUMBER = Pattern.compile("\\s*[-+]?\\d+\\s*");
    private static final Pattern ZERO_DURATION = Pattern.compile("\\s*0+\\s*[a-zA-Z]*\\s*");

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
            if (DURATIONS.contains(option.getKey()) && !isDuration(text)) {
                throw new IllegalArgumentException(option.getKey() + " must be a duration such as 1s, 500ms, 2m or"
                        + " 1h, or a number of milliseconds, was '" + text + "'");
            }
        }
    }

    private static boolean isDuration(String text) {
        try {
            // TimeUtils answers 0 for text it cannot read: only a written zero may give 0
            return TimeUtils.toMilliSeconds(text) != 0 || ZERO_DURATION.matcher(text).matches();
        } catch (RuntimeException e) {
            return false;
        }
    }
}
