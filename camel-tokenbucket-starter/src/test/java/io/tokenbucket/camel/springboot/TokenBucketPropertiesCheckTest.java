package io.tokenbucket.camel.springboot;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.tokenbucket.camel.TokenBucketComponent;
import io.tokenbucket.camel.TokenBucketMode;
import io.tokenbucket.camel.TokenBucketStoreErrorPolicy;
import io.tokenbucket.camel.TokenBucketStoreType;
import org.apache.camel.CamelContext;
import org.apache.camel.spring.boot.CamelAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.source.InvalidConfigurationPropertyValueException;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * camel.component.tokenbucket.* is checked when the application starts: an unknown property, a value outside an
 * option's closed set and a value the component refuses each fail the start, naming the property and the value.
 */
class TokenBucketPropertiesCheckTest {

    private static final String PREFIX = "camel.component.tokenbucket.";

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(CamelAutoConfiguration.class, TokenBucketComponentConverter.class,
                    TokenBucketEnumConverter.class, TokenBucketComponentAutoConfiguration.class))
            .withPropertyValues("camel.main.jmx-enabled=false");

    @Test
    void aMisspelledPropertyFailsTheStartNamingIt() {
        runner.withPropertyValues(PREFIX + "capcity=3").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining(PREFIX + "capcity")
                    .hasStackTraceContaining("were left unbound");
        });
    }

    /**
     * The same typo as an environment variable fails the same way (Spring Boot never reports environment variables
     * as unbound), naming the variable and not quoting its value; the right names bind.
     */
    @ParameterizedTest
    @CsvSource({"CAMEL_COMPONENT_TOKENBUCKET_CAPCITY, camel.component.tokenbucket.capcity",
            "CAMEL_COMPONENT_TOKENBUCKET_REFILL_PERIODS, camel.component.tokenbucket.refill.periods",
            "CAMEL_COMPONENT_TOKENBUCKET_CAPACITY_MAX, camel.component.tokenbucket.capacity.max",
            "CAMEL_COMPONENT_TOKENBUCKET_REDISURL, camel.component.tokenbucket.redisurl"})
    void aMisspelledEnvironmentVariableFailsTheStartNamingIt(String variable, String read) {
        runner.withInitializer(context -> environment(context, Map.of(variable, "s3cret-value")))
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).rootCause()
                            .isInstanceOf(InvalidConfigurationPropertyValueException.class)
                            .hasMessageContaining("Property " + variable + " ")
                            .hasMessageContaining("read as " + read + ", which is no property")
                            .hasMessageContaining("CAMEL_COMPONENT_TOKENBUCKET_REFILLPERIOD,");
                    assertThat(context.getStartupFailure()).hasStackTraceContaining(variable)
                            .satisfies(e -> assertThat(stackTrace(e)).doesNotContain("s3cret"));
                });
    }

    @Test
    void environmentVariablesThatNamePropertiesBind() {
        runner.withInitializer(context -> environment(context, Map.of("CAMEL_COMPONENT_TOKENBUCKET_CAPACITY", "4",
                "CAMEL_COMPONENT_TOKENBUCKET_REFILL_PERIOD", "3s", "CAMEL_COMPONENT_TOKENBUCKET_KEYHEADER", "Who",
                "CAMEL_COMPONENT_TOKENBUCKET_ENABLED", "true",
                "CAMEL_COMPONENT_TOKENBUCKET_CUSTOMIZER_ENABLED", "true", "CAMEL_COMPONENT_ENABLED", "true",
                "CAMEL_COMPONENT_OTHER_CAPCITY", "1", "PATH", "/usr/bin")))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    TokenBucketComponent component = component(context.getBean(CamelContext.class));
                    assertThat(component.getConfiguration().getCapacity()).isEqualTo(4);
                    assertThat(component.getConfiguration().getRefillPeriod()).isEqualTo(3000);
                    assertThat(component.getConfiguration().getKeyHeader()).isEqualTo("Who");
                });
    }

    /** The context's environment variables are {@code variables}, as Spring Boot reads the real ones. */
    private static void environment(ConfigurableApplicationContext context, Map<String, Object> variables) {
        context.getEnvironment().getPropertySources().replace(
                StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, new SystemEnvironmentPropertySource(
                        StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, variables));
    }

    private static String stackTrace(Throwable e) {
        java.io.StringWriter text = new java.io.StringWriter();
        e.printStackTrace(new java.io.PrintWriter(text));
        return text.toString();
    }

    /** A redis-uri Lettuce cannot read fails the start naming the property, its password never shown. */
    @Test
    void aRedisUriThatDoesNotParseFailsTheStartNamingIt() {
        // an unencoded / ends the authority: the @ then follows the host part
        runner.withPropertyValues(PREFIX + "redis-uri=redis://:s3cr/et@127.0.0.1:6379").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause()
                    .isInstanceOf(InvalidConfigurationPropertyValueException.class)
                    .hasMessageContaining("Property " + PREFIX + "redis-uri with value 'a Redis URI that does not parse")
                    .hasMessageContaining("percent-encoded");
            assertThat(stackTrace(context.getStartupFailure())).doesNotContain("s3cr");
        });
        runner.withPropertyValues(PREFIX + "redis-uri=redis://:s3cr%2Fet@127.0.0.1:6379").run(context ->
                assertThat(context).hasNotFailed());
    }

    @Test
    void camelSpringBootsOwnKeysAreAccepted() {
        runner.withPropertyValues(PREFIX + "enabled=true", PREFIX + "customizer.enabled=true",
                PREFIX + "autowired-enabled=true", PREFIX + "lazy-start-producer=true", PREFIX + "capacity=3")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    TokenBucketComponent component = component(context.getBean(CamelContext.class));
                    assertThat(component.getConfiguration().getCapacity()).isEqualTo(3);
                    assertThat(component.isLazyStartProducer()).isTrue();
                });
    }

    /** The component only produces: like Camel's own producer-only starters, it has no bridge-error-handler. */
    @Test
    void bridgeErrorHandlerIsNoOptionOfAProducerOnlyComponent() {
        runner.withPropertyValues(PREFIX + "bridge-error-handler=true").run(context ->
                assertThat(context.getStartupFailure()).hasStackTraceContaining(PREFIX + "bridge-error-handler"));
    }

    @Test
    void aModeOutsideItsValuesFailsListingThem() {
        runner.withPropertyValues(PREFIX + "mode=delayed").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining(PREFIX + "mode")
                    .hasStackTraceContaining("must be one of delay, reject, check, was 'delayed'");
        });
    }

    @Test
    void closedSetsAreReadAsSpringBootReadsEnums() {
        runner.withPropertyValues(PREFIX + "mode=REJECT", PREFIX + "store=Redis", PREFIX + "on-store-error=ALLOW")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    TokenBucketComponentConfiguration properties =
                            context.getBean(TokenBucketComponentConfiguration.class);
                    assertThat(properties.getMode()).isEqualTo(TokenBucketMode.reject);
                    assertThat(properties.getStore()).isEqualTo(TokenBucketStoreType.redis);
                    assertThat(properties.getOnStoreError()).isEqualTo(TokenBucketStoreErrorPolicy.allow);
                });
    }

    @ParameterizedTest(name = "{0}={1}: {2}")
    @CsvSource(delimiter = '|', value = {
            "capacity         | 0       | capacity must be at least 1, was 0",
            "refill-amount    | 0       | refillAmount must be at least 1, was 0",
            "refill-period    | 0s      | refillPeriod must be at least 1 millisecond, was 0",
            "cost             | 2       | cost must be between 1 and capacity 1, was 2",
            "max-wait         | 400d    | maxWait must be between 0 and 365d",
            "max-waiting      | -1      | maxWaiting must not be negative, was -1",
            "max-candidates   | 0       | maxCandidates must be at least 1, was 0",
            "metrics-max-keys | -1      | metricsMaxKeys must not be negative, was -1",
            "store-timeout    | 0       | storeTimeout must be at least 1 millisecond, was 0",
            "limits           | 10/soon | limits",
            "key-limits       | p7      | keyLimits",
    })
    void aValueTheComponentRefusesFailsTheStartNamingThePropertyAndTheValue(String property, String value,
            String reason) {
        runner.withPropertyValues(PREFIX + property + "=" + value).run(context -> {
            assertThat(context).hasFailed();
            InvalidConfigurationPropertyValueException failure = invalidValue(context.getStartupFailure());
            assertThat(failure.getName()).isEqualTo(PREFIX + property);
            assertThat(failure.getValue()).hasToString(value);
            assertThat(failure.getReason()).startsWith(reason);
            assertThat(failure.getMessage()).contains(PREFIX + property, "'" + value + "'");
        });
    }

    /**
     * Every count property refuses text that is no whole number (a word, a fraction, nothing, a number too large for
     * it) and a negative number, naming the property and the value: none is read as 0 or left at its default.
     */
    @ParameterizedTest(name = "{0}=''{1}''")
    @MethodSource("badCounts")
    void aCountThatIsNoWholeNumberOrNegativeFailsTheStartNamingThePropertyAndTheValue(String property, String value) {
        runner.withPropertyValues(PREFIX + property + "=" + value).run(context -> {
            assertThat(context).as(property + "=" + value).hasFailed();
            // Spring Boot leaves a blank value unbound, and says so
            assertThat(context.getStartupFailure()).hasStackTraceContaining(PREFIX + property)
                    .hasStackTraceContaining(value.isEmpty() ? "were left unbound" : value);
        });
    }

    /**
     * A blank environment variable, which Spring Boot never reports as unbound, fails the start too: left unbound it
     * would leave the option at its default without a word (for max-in-flight, no in-flight limit).
     */
    @ParameterizedTest
    @CsvSource({"CAMEL_COMPONENT_TOKENBUCKET_MAXINFLIGHT, max-in-flight, maxInFlight",
            "CAMEL_COMPONENT_TOKENBUCKET_MAX_WAITING, max-waiting, maxWaiting",
            "CAMEL_COMPONENT_TOKENBUCKET_CAPACITY, capacity, capacity"})
    void aBlankCountInAnEnvironmentVariableFailsTheStart(String variable, String property, String option) {
        runner.withInitializer(context -> environment(context, Map.of(variable, ""))).run(context -> {
            InvalidConfigurationPropertyValueException failure = invalidValue(context.getStartupFailure());
            assertThat(failure.getName()).isEqualTo(PREFIX + property);
            assertThat(failure.getReason()).isEqualTo(option + " must be a whole number, was ''");
        });
    }

    static Stream<Arguments> badCounts() {
        List<Arguments> cases = new ArrayList<>();
        for (String property : List.of("capacity", "refill-amount", "cost", "max-in-flight", "max-waiting",
                "max-candidates", "max-all-of", "metrics-max-keys", "timer-spin-micros")) {
            boolean isInt = property.startsWith("max-") && !property.equals("max-in-flight")
                    || property.equals("metrics-max-keys");
            for (String value : List.of("abc", "1.5", "", "-1", "5s", isInt ? "2147483648" : "9223372036854775808")) {
                cases.add(Arguments.of(property, value));
            }
        }
        return cases.stream();
    }

    @Test
    void aCostAboveTheCapacityGivenIsRefusedAtTheStart() {
        runner.withPropertyValues(PREFIX + "capacity=3", PREFIX + "cost=4").run(context ->
                assertThat(invalidValue(context.getStartupFailure()).getReason())
                        .isEqualTo("cost must be between 1 and capacity 3, was 4"));
    }

    @Test
    void aBlankKeyHeaderIsRefusedAtTheStart() {
        runner.withPropertyValues(PREFIX + "key-header= ").run(context ->
                assertThat(invalidValue(context.getStartupFailure()).getName()).isEqualTo(PREFIX + "key-header"));
    }

    @Test
    void validValuesStart() {
        runner.withPropertyValues(PREFIX + "capacity=5", PREFIX + "cost=5", PREFIX + "limits=10/1s,1000/1h",
                PREFIX + "key-limits=p7=5/1s", PREFIX + "max-wait=365d", PREFIX + "max-waiting=0")
                .run(context -> assertThat(context).hasNotFailed());
    }

    private static InvalidConfigurationPropertyValueException invalidValue(Throwable failure) {
        Throwable cause = failure;
        while (cause != null && !(cause instanceof InvalidConfigurationPropertyValueException)) {
            cause = cause.getCause();
        }
        assertThat(cause).as("the start failure's causes").isNotNull();
        return (InvalidConfigurationPropertyValueException) cause;
    }

    private static TokenBucketComponent component(CamelContext camelContext) {
        return camelContext.getComponent("tokenbucket", TokenBucketComponent.class);
    }
}
