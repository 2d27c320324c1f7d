package io.tokenbucket.camel.springboot;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;

import io.tokenbucket.camel.TokenBucketMode;
import org.apache.camel.CamelContext;
import org.apache.camel.spring.boot.CamelAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** The generated properties class: a property not given is null and not handed to the component. */
class TokenBucketComponentConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(CamelAutoConfiguration.class,
                    TokenBucketComponentConverter.class, TokenBucketComponentAutoConfiguration.class))
            .withPropertyValues("camel.main.jmx-enabled=false");

    @Test
    void nothingGivenHandsTheComponentNothing() {
        runner.run(context -> {
            TokenBucketComponentConfiguration properties = context.getBean(TokenBucketComponentConfiguration.class);
            assertThat(properties.getCapacity()).isNull();
            assertThat(properties.getMode()).isNull();
            assertThat(properties.getRedisUri()).isNull();
            assertThat(properties.componentOptions(context.getBean(CamelContext.class))).isEmpty();
        });
    }

    @Test
    void onlyTheOptionsGivenAreHandedToTheComponentDurationsInMilliseconds() {
        runner.withPropertyValues("camel.component.tokenbucket.capacity=3",
                "camel.component.tokenbucket.mode=reject",
                "camel.component.tokenbucket.refill-period=1m30s",
                "camel.component.tokenbucket.store-timeout=PT0.25S",
                "camel.component.tokenbucket.customizer.enabled=true",
                "camel.component.tokenbucket.enabled=true").run(context -> {
                    TokenBucketComponentConfiguration properties =
                            context.getBean(TokenBucketComponentConfiguration.class);
                    // the text as given stays readable; the component gets milliseconds
                    assertThat(properties.getRefillPeriod()).isEqualTo("1m30s");
                    assertThat(properties.componentOptions(context.getBean(CamelContext.class)))
                            .containsOnly(Map.entry("capacity", 3L),
                                    Map.entry("mode", TokenBucketMode.reject),
                                    Map.entry("refillPeriod", 90_000L),
                                    Map.entry("storeTimeout", 250L));
                });
    }
}
