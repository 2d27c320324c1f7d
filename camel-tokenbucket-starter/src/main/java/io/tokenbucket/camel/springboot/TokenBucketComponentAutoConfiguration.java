package io.tokenbucket.camel.springboot;

import io.tokenbucket.camel.TokenBucketComponent;
import org.apache.camel.CamelContext;
import org.apache.camel.Component;
import org.apache.camel.spi.ComponentCustomizer;
import org.apache.camel.spring.boot.CamelAutoConfiguration;
import org.apache.camel.spring.boot.ComponentConfigurationProperties;
import org.apache.camel.spring.boot.util.CamelPropertiesHelper;
import org.apache.camel.spring.boot.util.ConditionalOnCamelContextAndAutoConfigurationBeans;
import org.apache.camel.spring.boot.util.ConditionalOnHierarchicalProperties;
import org.apache.camel.spring.boot.util.HierarchicalPropertiesEvaluator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Lazy;

/**
 * Configures the {@code tokenbucket} component from {@code camel.component.tokenbucket.*}: a
 * {@link ComponentCustomizer} that Camel applies when it creates the component. Off with
 * {@code camel.component.tokenbucket.enabled=false} (or {@code camel.component.enabled=false} for every
 * component); the customizer alone off with {@code camel.component.tokenbucket.customizer.enabled=false}.
 *
 * <p>The properties are checked when the application starts ({@link TokenBucketPropertiesValidator}); an unknown
 * one under the prefix fails the binding.
 */
@AutoConfiguration(after = {CamelAutoConfiguration.class, TokenBucketComponentConverter.class})
@Conditional(ConditionalOnCamelContextAndAutoConfigurationBeans.class)
@EnableConfigurationProperties({ComponentConfigurationProperties.class, TokenBucketComponentConfiguration.class})
@ConditionalOnHierarchicalProperties({"camel.component", "camel.component.tokenbucket"})
public class TokenBucketComponentAutoConfiguration {

    private final ApplicationContext applicationContext;
    private final CamelContext camelContext;
    private final TokenBucketComponentConfiguration configuration;

    public TokenBucketComponentAutoConfiguration(ApplicationContext applicationContext, CamelContext camelContext,
            TokenBucketComponentConfiguration configuration) {
        this.applicationContext = applicationContext;
        this.camelContext = camelContext;
        this.configuration = configuration;
        TokenBucketPropertiesValidator.validate(configuration, camelContext);
    }

    @Lazy
    @Bean
    public ComponentCustomizer configureTokenBucketComponent() {
        return new ComponentCustomizer() {
            @Override
            public void configure(String name, Component target) {
                TokenBucketComponent component = (TokenBucketComponent) target;
                if (configuration.getConfiguration() != null) {
                    // a copy: the options below must not change the application's bean
                    component.setConfiguration(configuration.getConfiguration().copy());
                }
                // as CamelPropertiesHelper.copyProperties does, with durations in milliseconds; fails on an
                // option the component does not take
                CamelPropertiesHelper.setCamelProperties(camelContext, component,
                        configuration.componentOptions(camelContext), true);
            }

            @Override
            public boolean isEnabled(String name, Component target) {
                return HierarchicalPropertiesEvaluator.evaluate(applicationContext,
                        "camel.component.customizer", "camel.component.tokenbucket.customizer")
                        && target instanceof TokenBucketComponent;
            }
        };
    }
}
