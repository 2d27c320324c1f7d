package io.tokenbucket.camel.springboot;

import java.util.LinkedHashMap;
import java.util.Map;

import io.tokenbucket.camel.TokenBucketConfiguration;
import org.apache.camel.CamelContext;
import org.apache.camel.spring.boot.util.CamelPropertiesHelper;
import org.apache.camel.util.StringHelper;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;

/**
 * Checks {@code camel.component.tokenbucket.*} when the application starts, with the component's own checks
 * ({@link TokenBucketConfiguration#validate()}: limits, cost, durations, bounds), so that {@code capacity: 0} fails
 * the start naming {@code camel.component.tokenbucket.capacity} and its value instead of failing later when a
 * route creates its endpoint.
 *
 * <p>The options are applied to a copy of the endpoints' defaults exactly as the component's customizer applies
 * them, then validated. Bean references ({@code #bean:name}) are left to Camel, which resolves them when it
 * configures the component.
 */
final class TokenBucketPropertiesValidator {

    private static final String PREFIX = TokenBucketComponentConfigurationSupport.PREFIX;
    /** The prefix itself, as a property name for a failure no one option is to blame for. */
    private static final String ALL = PREFIX.substring(0, PREFIX.length() - 1);

    private TokenBucketPropertiesValidator() {
    }

    /**
     * @throws InvalidConfigurationPropertyValueException naming the property, its value and the component's reason,
     *                                                    which Spring Boot reports as a failed start
     */
    static void validate(TokenBucketComponentConfiguration properties, CamelContext camelContext) {
        Map<String, Object> options;
        try {
            options = new LinkedHashMap<>(properties.componentOptions(camelContext));
        } catch (IllegalArgumentException e) {
            // a duration that is no duration: its message names the property already
            throw new InvalidConfigurationPropertyValueException(ALL, null,
                    e.getMessage());
        }
        options.values().removeIf(value -> value instanceof String text && text.startsWith("#"));
        TokenBucketConfiguration checked = properties.getConfiguration() != null
                ? properties.getConfiguration().copy() : new TokenBucketConfiguration();
        // the component's own options (lazyStartProducer, workerPool...) are not the endpoints': left unset here
        CamelPropertiesHelper.setCamelProperties(camelContext, checked, options, false);
        try {
            checked.validate();
        } catch (IllegalArgumentException e) {
            String option = leadingName(e.getMessage());
            BeanWrapperImpl given = new BeanWrapperImpl(properties);
            if (option.isEmpty() || !given.isReadableProperty(option)) {
                throw new InvalidConfigurationPropertyValueException(ALL, null,
                        e.getMessage());
            }
            throw new InvalidConfigurationPropertyValueException(PREFIX + StringHelper.camelCaseToDash(option),
                    given.getPropertyValue(option), e.getMessage());
        }
    }

    /** The option a message of the component's checks starts with ({@code capacity must be at least 1...}). */
    private static String leadingName(String message) {
        int end = 0;
        while (message != null && end < message.length() && Character.isJavaIdentifierPart(message.charAt(end))) {
            end++;
        }
        return message == null ? "" : message.substring(0, end);
    }
}
