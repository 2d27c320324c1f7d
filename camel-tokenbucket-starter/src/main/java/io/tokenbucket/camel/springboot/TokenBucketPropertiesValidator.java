package io.tokenbucket.camel.springboot;

import java.beans.PropertyDescriptor;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import io.tokenbucket.camel.TokenBucketComponent;
import io.tokenbucket.camel.TokenBucketConfiguration;
import org.apache.camel.CamelContext;
import org.apache.camel.spring.boot.util.CamelPropertiesHelper;
import org.apache.camel.util.StringHelper;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.origin.Origin;
import org.springframework.boot.origin.PropertySourceOrigin;
import org.springframework.boot.origin.SystemEnvironmentOrigin;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * Checks {@code camel.component.tokenbucket.*} when the application starts, with the component's own checks
 * ({@link TokenBucketComponent#checkOptions}: limits, cost, durations, bounds), so that {@code capacity: 0} fails
 * the start naming {@code camel.component.tokenbucket.capacity} and its value instead of failing later when a
 * route creates its endpoint.
 *
 * <p>The options are applied to a copy of the endpoints' defaults exactly as the component's customizer applies
 * them, then validated. Bean references ({@code #bean:name}) are left to Camel, which resolves them when it
 * configures the component.
 *
 * <p>An unknown property fails the binding itself ({@code ignoreUnknownFields = false}), except in the environment
 * variables: Spring Boot never reports those as unbound (an environment variable's name maps to several property
 * names). They are checked here by the same rule: a variable whose relaxed name falls under the prefix
 * ({@code CAMEL_COMPONENT_TOKENBUCKET_CAPCITY} is {@code camel.component.tokenbucket.capcity}) and that no property
 * reads fails the start, naming the variable, never quoting its value (it may be a secret).
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
    static void validate(TokenBucketComponentConfiguration properties, CamelContext camelContext,
            Environment environment) {
        checkEnvironmentVariables(environment);
        checkBlankNumbers(properties, environment);
        checkRedisUri(properties.getRedisUri());
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
            TokenBucketComponent.checkOptions(checked);
            if (properties.getTimerSpinMicros() != null) { // a component option, not one of its endpoints'
                new TokenBucketComponent().setTimerSpinMicros(properties.getTimerSpinMicros());
            }
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

    /**
     * A number property given as blank text ({@code camel.component.tokenbucket.max-in-flight=}) fails the start,
     * naming it, as the component refuses a blank count: Spring Boot binds blank text as no value, which would leave
     * the option at its default without a word (for {@code max-in-flight}, no in-flight limit).
     *
     * @throws InvalidConfigurationPropertyValueException naming the property and the component's reason
     */
    private static void checkBlankNumbers(TokenBucketComponentConfiguration properties, Environment environment) {
        BeanWrapperImpl given = new BeanWrapperImpl(properties);
        for (PropertyDescriptor property : given.getPropertyDescriptors()) {
            Class<?> type = property.getPropertyType();
            if ((type != Long.class && type != Integer.class) || property.getReadMethod() == null
                    || given.getPropertyValue(property.getName()) != null) {
                continue;
            }
            String name = PREFIX + StringHelper.camelCaseToDash(property.getName());
            for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
                ConfigurationProperty found = source.getConfigurationProperty(ConfigurationPropertyName.of(name));
                if (found != null && found.getValue() instanceof CharSequence text) {
                    try {
                        TokenBucketComponent.readOption(property.getName(), text.toString());
                    } catch (IllegalArgumentException e) {
                        throw new InvalidConfigurationPropertyValueException(name, text, e.getMessage());
                    }
                    break;
                }
            }
        }
    }

    /**
     * A {@code redis-uri} that Lettuce cannot read fails the start here, naming the property, rather than when a
     * route opens its endpoint. The value shown is what the component shows of a Redis URI, from Lettuce's parse:
     * of a text that does not parse, only its length, and of one that does, no credentials (the component's
     * description of a URI that parsed always holds its scheme's {@code ://}).
     *
     * @throws InvalidConfigurationPropertyValueException naming {@code camel.component.tokenbucket.redis-uri}
     */
    private static void checkRedisUri(TokenBucketSecret redisUri) {
        if (redisUri == null) {
            return;
        }
        String shown = redisUri.toString();
        if (!shown.contains("://")) {
            throw new InvalidConfigurationPropertyValueException(PREFIX + "redis-uri", shown, "it is no Redis URI"
                    + " Lettuce can read: redis[s]://[[user]:password@]host[:port][/database], or redis-sentinel://,"
                    + " redis-cluster://host:port,host:port; a user or password holding / ? # must be"
                    + " percent-encoded (/ as %2F, ? as %3F, # as %23)");
        }
    }

    /**
     * @throws InvalidConfigurationPropertyValueException naming the first environment variable under the prefix that
     *                                                    no property reads
     */
    static void checkEnvironmentVariables(Environment environment) {
        if (!(environment instanceof ConfigurableEnvironment configurable)) {
            return;
        }
        ConfigurationPropertyName prefix = ConfigurationPropertyName.of(ALL);
        for (PropertySource<?> source : configurable.getPropertySources()) {
            if (!(source instanceof SystemEnvironmentPropertySource)
                    || !(ConfigurationPropertySource.from(source) instanceof IterableConfigurationPropertySource names)) {
                continue;
            }
            // the variables that some property reads, found as Spring Boot finds them (REFILLPERIOD and REFILL_PERIOD
            // are both refill-period)
            Set<String> read = new HashSet<>();
            for (String property : PROPERTIES) {
                ConfigurationProperty found = names.getConfigurationProperty(ConfigurationPropertyName.of(property));
                if (found != null) {
                    read.add(variable(found));
                }
            }
            names.stream().filter(prefix::isAncestorOf).map(names::getConfigurationProperty)
                    .filter(p -> !read.contains(variable(p))).findFirst().ifPresent(unread -> {
                        throw new InvalidConfigurationPropertyValueException(variable(unread), "(not shown)",
                                "this environment variable is read as " + unread.getName() + ", which is no property"
                                + " of the tokenbucket component: as in application.yaml, an unknown property fails"
                                + " the start. The properties, as environment variables, are " + String.join(", ",
                                        PROPERTIES.stream().map(TokenBucketPropertiesValidator::asVariable).toList()));
                    });
        }
    }

    /** The environment variable a property came from. */
    private static String variable(ConfigurationProperty property) {
        Origin origin = property.getOrigin();
        return origin instanceof SystemEnvironmentOrigin env ? env.getProperty()
                : origin instanceof PropertySourceOrigin named ? named.getPropertyName()
                : property.getName().toString();
    }

    /** {@code camel.component.tokenbucket.refill-period} as an environment variable: dashes dropped. */
    private static String asVariable(String property) {
        return property.replace("-", "").replace('.', '_').toUpperCase(Locale.ROOT);
    }

    /** Every property under the prefix, dashed: the configuration class's, and Camel Spring Boot's switches. */
    private static final List<String> PROPERTIES = properties();

    private static List<String> properties() {
        Set<String> names = new TreeSet<>();
        for (PropertyDescriptor property : new BeanWrapperImpl(TokenBucketComponentConfiguration.class)
                .getPropertyDescriptors()) {
            if (property.getWriteMethod() != null) {
                names.add(PREFIX + StringHelper.camelCaseToDash(property.getName()));
            }
        }
        names.add(PREFIX + "customizer.enabled");
        return List.copyOf(names);
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
