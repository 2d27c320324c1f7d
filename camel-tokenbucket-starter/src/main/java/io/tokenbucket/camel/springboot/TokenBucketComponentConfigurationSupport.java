package io.tokenbucket.camel.springboot;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

import io.tokenbucket.camel.TokenBucketComponent;
import org.apache.camel.CamelContext;
import org.apache.camel.spring.boot.ComponentConfigurationPropertiesCommon;
import org.apache.camel.spring.boot.util.CamelPropertiesHelper;
import org.apache.camel.util.StringHelper;

/**
 * How the properties of {@code camel.component.tokenbucket.*} reach the component: the hand-written half of
 * {@link TokenBucketComponentConfiguration}, which is generated at build time from the component's metadata
 * ({@code src/build/java/TokenBucketStarterGenerator.java}) and holds one property per component option.
 *
 * <p>A property not given in the application's configuration is {@code null}: the component keeps its own default
 * (the one the Spring Boot metadata lists), or the value of the {@code configuration} bean when one is given, on
 * which the properties given are applied. Durations are text, read as the component reads its URI options (Camel
 * duration text: {@code 1s}, {@code 500ms}, {@code 2m}, {@code 1h}, {@code 1m30s}, or a number of milliseconds),
 * and ISO-8601 ({@code PT2S}) as Spring writes durations; text that is neither fails the binding, naming the
 * property. Objects are bean references ({@code "#bean:name"} or {@code "#name"}).
 */
public abstract class TokenBucketComponentConfigurationSupport extends ComponentConfigurationPropertiesCommon {

    /** The prefix of every property, as in {@code @ConfigurationProperties}. */
    static final String PREFIX = "camel.component.tokenbucket.";

    /** Properties that are Camel Spring Boot's switches or the configuration bean, not options set by name. */
    private static final Set<String> NOT_OPTIONS = Set.of("enabled", "customizer", "configuration");

    private final Set<String> durations;

    /** @param durations the Camel names of the options whose text is a duration ({@code refillPeriod}) */
    protected TokenBucketComponentConfigurationSupport(Set<String> durations) {
        this.durations = Set.copyOf(durations);
    }

    /**
     * The component options to set, by Camel option name: every option given in the application's configuration
     * (the others are {@code null} here), durations in milliseconds, secrets ({@link TokenBucketSecret}) as their
     * text. The configuration bean is not in the map.
     */
    Map<String, Object> componentOptions(CamelContext camelContext) {
        Map<String, Object> options = new LinkedHashMap<>(
                CamelPropertiesHelper.getNonNullProperties(camelContext, this));
        options.keySet().removeAll(NOT_OPTIONS);
        // the component takes a secret's text; only the configuration bean holds it masked
        options.replaceAll((name, value) -> value instanceof TokenBucketSecret secret ? secret.reveal() : value);
        for (String duration : durations) {
            options.computeIfPresent(duration, (name, text) -> durationMillis(name, (String) text));
        }
        return options;
    }

    /**
     * The text of duration option {@code option}, once checked: for the generated setters, so that text that is no
     * duration fails the binding instead of the component's start.
     *
     * @throws IllegalArgumentException as {@link #durationMillis} does
     */
    protected static String duration(String option, String text) {
        durationMillis(option, text);
        return text;
    }

    /**
     * The milliseconds of a duration, read by the component's one reader
     * ({@link TokenBucketComponent#durationMillis}: {@code 1s}, {@code 500ms}, {@code 1m30s}, {@code 5min},
     * ISO-8601 as Spring writes durations ({@code PT2S}), a plain number of milliseconds; exactly, never wrapped
     * around).
     *
     * @param option the Camel option name ({@code refillPeriod})
     * @throws IllegalArgumentException naming the property ({@code camel.component.tokenbucket.refill-period})
     *                                  and the text when it is no duration
     */
    static long durationMillis(String option, String text) {
        return TokenBucketComponent.durationMillis(PREFIX + StringHelper.camelCaseToDash(option),
                text == null ? "" : text.trim());
    }
}
