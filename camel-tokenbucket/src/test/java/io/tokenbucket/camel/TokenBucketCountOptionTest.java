package io.tokenbucket.camel;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.tokenbucket.camel.syntax.TokenBucketOptionText;
import org.apache.camel.CamelContext;
import org.apache.camel.ResolveEndpointFailedException;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.main.Main;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.UriParam;
import org.apache.camel.support.PropertyBindingSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every option that counts something refuses text that is no whole number, and a negative number, naming the option
 * and the value, wherever it is given: in an endpoint URI, and as a component property, bound as Camel Main binds
 * {@code camel.component.tokenbucket.*}. Camel itself would read such text as a duration and bind 0 (which is "none"
 * for maxInFlight). Durations stay durations; the numbers inside the limits text are checked too.
 */
class TokenBucketCountOptionTest extends TokenBucketTestSupport {

    /** The endpoint's count options, as the annotations have them: numeric options that are not durations. */
    private static final List<String> COUNTS = List.of("capacity", "refillAmount", "cost", "maxInFlight", "maxWaiting",
            "maxCandidates", "maxAllOf", "metricsMaxKeys");
    private static final List<String> INTS = List.of("maxWaiting", "maxCandidates", "maxAllOf", "metricsMaxKeys");

    /** Every numeric field of {@code type} and its superclasses that Camel's tooling makes an option. */
    private static Map<String, Boolean> numericOptions(Class<?> type) {
        Map<String, Boolean> isDuration = new HashMap<>();
        for (Class<?> c = type; c != Object.class; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                UriParam uri = f.getAnnotation(UriParam.class);
                Metadata meta = f.getAnnotation(Metadata.class);
                String javaType = uri != null ? uri.javaType() : meta != null ? meta.javaType() : null;
                if (javaType != null && List.of(long.class, int.class, Long.class, Integer.class)
                        .contains(f.getType())) {
                    isDuration.put(f.getName(), javaType.equals("java.time.Duration"));
                }
            }
        }
        return isDuration;
    }

    @Test
    void everyNumericOptionIsReadEitherAsACountOrAsADuration() {
        Map<String, Boolean> options = numericOptions(TokenBucketConfiguration.class);
        options.putAll(numericOptions(TokenBucketComponent.class));
        options.forEach((name, duration) -> {
            assertThat(TokenBucketOptionText.isDuration(name)).as(name + " is a duration").isEqualTo(duration);
            assertThat(TokenBucketOptionText.isCount(name)).as(name + " is a count").isEqualTo(!duration);
        });
        List<String> counts = options.entrySet().stream().filter(e -> !e.getValue()).map(Map.Entry::getKey).toList();
        assertThat(counts).as("the table of this test").containsExactlyInAnyOrderElementsOf(
                Stream.concat(COUNTS.stream(), Stream.of("timerSpinMicros")).toList());
    }

    /** Each count option with each text that is no whole number, and the reason the refusal must give. */
    static Stream<Arguments> notWholeNumbers() {
        List<Arguments> cases = new ArrayList<>();
        for (String option : COUNTS) {
            for (String text : List.of("abc", "1.5", "", "5s", "1e3", "-", "0x10")) {
                cases.add(Arguments.of(option, text, option + " must be a whole number, was '" + text + "'"));
            }
            boolean isInt = INTS.contains(option);
            String tooLarge = isInt ? "2147483648" : "9223372036854775808";
            cases.add(Arguments.of(option, tooLarge, option + " must be a whole number of at most "
                    + (isInt ? Integer.MAX_VALUE : Long.MAX_VALUE) + ", was '" + tooLarge + "'"));
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0}={1}")
    @MethodSource("notWholeNumbers")
    void textThatIsNoWholeNumberFailsEndpointCreation(String option, String text, String reason) {
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:c?" + option + "=" + text))
                .isInstanceOf(ResolveEndpointFailedException.class)
                .satisfies(e -> assertThat(messages(e)).contains(reason));
    }

    @ParameterizedTest(name = "camel.component.tokenbucket.{0}={1}")
    @MethodSource("notWholeNumbers")
    void textThatIsNoWholeNumberFailsAsAComponentProperty(String option, String text, String reason) throws Exception {
        try (CamelContext camel = new DefaultCamelContext()) {
            TokenBucketComponent component = camel.getComponent("tokenbucket", TokenBucketComponent.class);
            long before = valueOf(component.getConfiguration(), option);
            assertThatThrownBy(() -> bindComponent(camel, component, option, text))
                    .satisfies(e -> assertThat(messages(e)).contains(reason));
            assertThat(valueOf(component.getConfiguration(), option)).as("left as it was").isEqualTo(before);
        }
    }

    /** Binds a component property as Camel Main does: through the component's configurer, names in any case. */
    private static void bindComponent(CamelContext camel, TokenBucketComponent component, String option, Object value) {
        Map<String, Object> properties = new HashMap<>(Map.of(option, value));
        PropertyBindingSupport.build().withCamelContext(camel).withIgnoreCase(true).withRemoveParameters(true)
                .withConfigurer(component.getComponentPropertyConfigurer()).withTarget(component)
                .withProperties(properties).bind();
        assertThat(properties).as(option + " left unbound").isEmpty();
    }

    private static long valueOf(TokenBucketConfiguration c, String option) {
        return switch (option) {
            case "capacity" -> c.getCapacity();
            case "refillAmount" -> c.getRefillAmount();
            case "cost" -> c.getCost();
            case "maxInFlight" -> c.getMaxInFlight();
            case "maxWaiting" -> c.getMaxWaiting();
            case "maxCandidates" -> c.getMaxCandidates();
            case "maxAllOf" -> c.getMaxAllOf();
            case "metricsMaxKeys" -> c.getMetricsMaxKeys();
            case "inFlightLease" -> c.getInFlightLease();
            case "refillPeriod" -> c.getRefillPeriod();
            default -> throw new IllegalArgumentException(option);
        };
    }

    /** A negative count, a count at the limits of its type, and 0 where 0 means nothing: each refused. */
    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "capacity=-1                     | capacity must be at least 1, was -1",
            "refillAmount=-1                 | refillAmount must be at least 1, was -1",
            "cost=-1                         | cost must be between 1 and capacity 1, was -1",
            "maxInFlight=-1                  | maxInFlight must be between 0 (none) and 1000000000, was -1",
            "maxWaiting=-1                   | maxWaiting must not be negative, was -1",
            "maxCandidates=-1                | maxCandidates must be at least 1, was -1",
            "maxAllOf=-1                     | maxAllOf must be between 1 and 1000, was -1",
            "metricsMaxKeys=-1               | metricsMaxKeys must not be negative, was -1",
            "capacity=-9223372036854775809   | capacity must be a whole number of at least -9223372036854775808",
            "maxWaiting=-2147483649          | maxWaiting must be a whole number of at least -2147483648",
            "capacity=0                      | capacity must be at least 1, was 0",
            "refillAmount=0                  | refillAmount must be at least 1, was 0",
            "cost=0                          | cost must be between 1 and capacity 1, was 0",
            "maxCandidates=0                 | maxCandidates must be at least 1, was 0",
            "maxAllOf=0                      | maxAllOf must be between 1 and 1000, was 0",
            "capacity=9223372036854775807    | capacity 9223372036854775807 with a refill of 9223372036854775807",
            "cost=9223372036854775807        | cost must be between 1 and capacity 1, was 9223372036854775807",
            "maxInFlight=9223372036854775807 | maxInFlight must be between 0 (none) and 1000000000, was 9223372036854775807",
            "maxAllOf=2147483647             | maxAllOf must be between 1 and 1000, was 2147483647",
            // limits replace capacity and refillAmount, but a bad value given beside them is not silently unused
            "limits=5/1s&capacity=-1         | capacity must be at least 1, was -1",
    })
    void aNegativeOrMeaninglessCountFailsEndpointCreation(String query, String reason) {
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:c?" + query))
                .isInstanceOf(ResolveEndpointFailedException.class)
                .satisfies(e -> assertThat(messages(e)).contains(reason));
    }

    @ParameterizedTest(name = "camel.component.tokenbucket.{0}=-1")
    @CsvSource({"capacity", "refillAmount", "cost", "maxInFlight", "maxWaiting", "maxCandidates", "maxAllOf",
            "metricsMaxKeys"})
    void aNegativeCountGivenToTheComponentFailsEndpointCreationNamingIt(String option) throws Exception {
        try (CamelContext camel = new DefaultCamelContext()) {
            TokenBucketComponent component = camel.getComponent("tokenbucket", TokenBucketComponent.class);
            bindComponent(camel, component, option, "-1");
            assertThatThrownBy(() -> camel.getEndpoint("tokenbucket:c"))
                    .isInstanceOf(ResolveEndpointFailedException.class)
                    .satisfies(e -> assertThat(messages(e)).contains(option + " must", "was -1"));
        }
    }

    /**
     * 0 where it means something (no in-flight limit, no waiting, no per-key meters), and the largest values taken (a
     * refill of 10^9 per second is one token per nanosecond, the finest the ticks hold; a faster one is refused).
     */
    @ParameterizedTest(name = "{0}={1}")
    @CsvSource({"maxInFlight, 0", "maxWaiting, 0", "metricsMaxKeys, 0", "maxInFlight, 1000000000",
            "refillAmount, 1000000000",
            "maxWaiting, 2147483647", "maxCandidates, 1024", "metricsMaxKeys, 2147483647", "maxAllOf, 1000",
            "capacity, 007", "maxInFlight, 4"})
    void wholeNumbersInRangeBindAsWritten(String option, String text) throws Exception {
        long expected = Long.parseLong(text);
        TokenBucketEndpoint endpoint = context.getEndpoint("tokenbucket:ok?" + option + "=" + text,
                TokenBucketEndpoint.class);
        assertThat(valueOf(endpoint.getConfiguration(), option)).isEqualTo(expected);
        try (CamelContext camel = new DefaultCamelContext()) {
            TokenBucketComponent component = camel.getComponent("tokenbucket", TokenBucketComponent.class);
            bindComponent(camel, component, option, text);
            assertThat(valueOf(component.getConfiguration(), option)).isEqualTo(expected);
            // dashed, as in application.properties
            bindComponent(camel, component, option.replaceAll("([A-Z])", "-$1").toLowerCase(), "1");
            assertThat(valueOf(component.getConfiguration(), option)).isEqualTo(1);
        }
    }

    @Test
    void durationsStayDurationsAndAreReadExactlyAsComponentPropertiesToo() throws Exception {
        assertThat(context.getEndpoint("tokenbucket:d?inFlightLease=2minutes", TokenBucketEndpoint.class)
                .getConfiguration().getInFlightLease()).isEqualTo(120_000);
        try (CamelContext camel = new DefaultCamelContext()) {
            TokenBucketComponent component = camel.getComponent("tokenbucket", TokenBucketComponent.class);
            bindComponent(camel, component, "refillPeriod", "3hours"); // Camel's own reader takes it for an error
            bindComponent(camel, component, "in-flight-lease", "2minutes");
            assertThat(component.getConfiguration().getRefillPeriod()).isEqualTo(10_800_000);
            assertThat(component.getConfiguration().getInFlightLease()).isEqualTo(120_000);
            assertThatThrownBy(() -> bindComponent(camel, component, "refillPeriod", "soon"))
                    .satisfies(e -> assertThat(messages(e)).contains("refillPeriod must be a duration", "'soon'"));
            // microseconds of spinning: a count, so 5s is no 5000
            assertThatThrownBy(() -> bindComponent(camel, component, "timerSpinMicros", "5s"))
                    .satisfies(e -> assertThat(messages(e)).contains("timerSpinMicros must be a whole number,"
                            + " was '5s'"));
            bindComponent(camel, component, "timerSpinMicros", "0");
            assertThat(component.getTimerSpinMicros()).isZero();
        }
    }

    /** Text that is still a placeholder, if one reaches the component unresolved, is no number either. */
    @Test
    void anUnresolvedPlaceholderIsRefusedNotReadAsZero() throws Exception {
        assertThatThrownBy(() -> TokenBucketOptionText.bind("maxInFlight", "{{tb.inflight}}"))
                .hasMessage("maxInFlight must be a whole number, was '{{tb.inflight}}'");
        // Camel resolves placeholders first, and fails on one it cannot resolve, naming it
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:p?maxInFlight={{tb.inflight}}"))
                .satisfies(e -> assertThat(messages(e)).contains("tb.inflight"));
        try (CamelContext camel = new DefaultCamelContext()) {
            TokenBucketComponent component = camel.getComponent("tokenbucket", TokenBucketComponent.class);
            assertThatThrownBy(() -> bindComponent(camel, component, "maxInFlight", "{{tb.inflight}}"))
                    .satisfies(e -> assertThat(messages(e)).contains("tb.inflight"));
            assertThat(component.getConfiguration().getMaxInFlight()).isZero();
        }
    }

    /** The counts inside the limits syntax (limits, keyLimits): each refused with the option and the text. */
    @ParameterizedTest(name = "{0}={1}")
    @CsvSource(delimiter = '|', value = {
            "limits    | abc/1s",
            "limits    | 1.5/1s",
            "limits    | /1s",
            "limits    | -1/1s",
            "limits    | 0/1s",
            "limits    | 5/1s:0",
            "limits    | 5/1s:abc",
            "limits    | 5/1s:1.5",
            "limits    | 9223372036854775808/1s",
            "limits    | 5/1s:9223372036854775808",
            "limits    | 0 in flight",
            "limits    | abc in flight",
            "limits    | 1.5 in flight",
            "limits    | 9223372036854775808 in flight",
            "limits    | 5/1s,1000000001 in flight",
            "keyLimits | k=1.5/1s",
            "keyLimits | k=0 in flight",
            "keyLimits | k=5/1s:-1",
    })
    void aCountInsideTheLimitsTextIsChecked(String option, String text) {
        assertThatThrownBy(() -> context.getEndpoint("tokenbucket:l?" + option + "=" + text.replace(" ", "%20")))
                .isInstanceOf(ResolveEndpointFailedException.class)
                .satisfies(e -> assertThat(messages(e)).contains(option, text.substring(text.indexOf('=') + 1)));
    }

    @Test
    void asACamelMainComponentProperty() {
        Main main = new Main();
        main.configure().withJmxEnabled(false);
        main.configure().addRoutesBuilder(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:a").to("tokenbucket:a");
            }
        });
        main.addInitialProperty("camel.component.tokenbucket.max-in-flight", "abc");
        try {
            assertThatThrownBy(main::start).hasStackTraceContaining("maxInFlight must be a whole number, was 'abc'");
        } finally {
            main.stop();
        }
    }

    /**
     * An option named twice among Camel Main's properties, in spellings that differ in case or dashes, is refused as
     * in an endpoint URI: Main would bind one of the two silently (the later line, or the spelling it sees last),
     * naming both keys and neither value.
     */
    @ParameterizedTest
    @CsvSource({"maxWait, max-wait, 5s", "max-wait, maxwait, 5s", "redisUri, redis-uri, redis://u:Secret-Pa55@h:1"})
    void anOptionNamedTwiceAsACamelMainPropertyIsRefused(String one, String other, String value) {
        Main main = new Main();
        main.configure().withJmxEnabled(false);
        main.addInitialProperty("camel.component.tokenbucket." + one, value);
        main.addInitialProperty("camel.component.tokenbucket." + other, value.replace('5', '7'));
        try {
            assertThatThrownBy(main::start).hasStackTraceContaining("camel.component.tokenbucket." + one)
                    .hasStackTraceContaining("camel.component.tokenbucket." + other)
                    .hasStackTraceContaining("give it once")
                    .satisfies(e -> assertThat(messagesOf(e)).doesNotContain("Secret").doesNotContain("Pa55")
                            .doesNotContain("Pa57"));
        } finally {
            main.stop();
        }
    }

    private static String messagesOf(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append(" | ");
        }
        return all.toString();
    }
}
