package io.tokenbucket.camel.springboot;

import io.tokenbucket.camel.TokenBucketComponent;
import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketStoreType;
import org.apache.camel.CamelContext;
import org.apache.camel.Component;
import org.apache.camel.spi.ComponentCustomizer;
import org.apache.camel.spring.boot.CamelAutoConfiguration;
import org.apache.camel.spring.boot.ComponentConfigurationProperties;
import org.apache.camel.spring.boot.util.CamelPropertiesHelper;
import org.apache.camel.spring.boot.util.ConditionalOnCamelContextAndAutoConfigurationBeans;
import org.apache.camel.spring.boot.util.ConditionalOnHierarchicalProperties;
import org.apache.camel.spring.boot.util.HierarchicalPropertiesEvaluator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Lazy;
import org.springframework.util.ClassUtils;

/**
 * Configures the {@code tokenbucket} component from {@code camel.component.tokenbucket.*}: a
 * {@link ComponentCustomizer} that Camel applies when it creates the component. Off with
 * {@code camel.component.tokenbucket.enabled=false} (or {@code camel.component.enabled=false} for every
 * component); the customizer alone off with {@code camel.component.tokenbucket.customizer.enabled=false}.
 *
 * <p>The properties are checked when the application starts ({@link TokenBucketPropertiesValidator}); an unknown
 * one under the prefix fails the binding. When neither {@code redis-uri} nor {@code redis-client} is set and Camel's
 * registry holds no single Lettuce client, the endpoints' Redis is the application's: Spring Boot's
 * {@code RedisConnectionDetails} or {@code spring.data.redis.*} ({@link TokenBucketSpringDataRedis}), logged at
 * INFO without credentials.
 */
@AutoConfiguration(after = {CamelAutoConfiguration.class, TokenBucketComponentConverter.class})
@Conditional(ConditionalOnCamelContextAndAutoConfigurationBeans.class)
@EnableConfigurationProperties({ComponentConfigurationProperties.class, TokenBucketComponentConfiguration.class})
@ConditionalOnHierarchicalProperties({"camel.component", "camel.component.tokenbucket"})
public class TokenBucketComponentAutoConfiguration {

    private static final Logger LOG = LoggerFactory.getLogger(TokenBucketComponentAutoConfiguration.class);
    private static final String LETTUCE = "io.lettuce.core.AbstractRedisClient";

    private final ApplicationContext applicationContext;
    private final CamelContext camelContext;
    private final TokenBucketComponentConfiguration configuration;

    public TokenBucketComponentAutoConfiguration(ApplicationContext applicationContext, CamelContext camelContext,
            TokenBucketComponentConfiguration configuration) {
        this.applicationContext = applicationContext;
        this.camelContext = camelContext;
        this.configuration = configuration;
        TokenBucketPropertiesValidator.validate(configuration, camelContext, applicationContext.getEnvironment());
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
                useTheApplicationsRedis(component.getConfiguration());
            }

            @Override
            public boolean isEnabled(String name, Component target) {
                return HierarchicalPropertiesEvaluator.evaluate(applicationContext,
                        "camel.component.customizer", "camel.component.tokenbucket.customizer")
                        && target instanceof TokenBucketComponent;
            }
        };
    }

    /**
     * Sets the application's Redis as the endpoints' default when the component is given none of its own, and
     * logs which Redis the endpoints use when that is the application's or the component's default store is redis.
     * An application's Redis that cannot be passed on (Sentinel credentials) fails the component only when its
     * default store is redis; otherwise it is logged at WARN and the endpoints keep the component's default.
     */
    private void useTheApplicationsRedis(TokenBucketConfiguration defaults) {
        ClassLoader loader = getClass().getClassLoader();
        if (!ClassUtils.isPresent(LETTUCE, loader)) {
            return;
        }
        String where;
        if (defaults.getRedisUri() != null) {
            where = TokenBucketSpringDataRedis.describe(defaults.getRedisUri())
                    + " (from camel.component.tokenbucket.redis-uri)";
        } else if (defaults.getRedisClient() != null) {
            where = "the Lettuce client of camel.component.tokenbucket.redis-client";
        } else if (camelContext.getRegistry().findByType(ClassUtils.resolveClassName(LETTUCE, loader)).size() == 1) {
            where = "the application's Lettuce client (the only one in the registry)";
        } else {
            TokenBucketSpringDataRedis.Found redis;
            try {
                redis = TokenBucketSpringDataRedis.find(applicationContext);
            } catch (RuntimeException e) {
                // the application's Redis may be there for other uses: it only has to suit the component when
                // the component keeps its buckets there by default
                if (defaults.getStore() == TokenBucketStoreType.redis) {
                    throw e;
                }
                // only our own message is logged: another (a URI that does not parse) may quote a password
                LOG.warn("tokenbucket: the application's Redis is not used by endpoints with store=redis and no"
                        + " redisUri of their own, which use {}: {}", TokenBucketConfiguration.DEFAULT_REDIS_URI,
                        e instanceof IllegalStateException ? e.getMessage()
                                : "spring.data.redis.* cannot be read (" + e.getClass().getSimpleName() + ")");
                return;
            }
            if (redis != null) {
                // set on the configuration, not through Camel's property binding, which would resolve
                // placeholders and bean references in a password
                defaults.setRedisUri(redis.redisUri());
                LOG.info("tokenbucket: endpoints with store=redis and no redisUri of their own use {} (from {})",
                        TokenBucketSpringDataRedis.describe(redis.redisUri()), redis.source());
                return;
            }
            where = TokenBucketConfiguration.DEFAULT_REDIS_URI + " (the component's default: no spring.data.redis.*"
                    + " nor camel.component.tokenbucket.redis-uri is set)";
        }
        if (defaults.getStore() == TokenBucketStoreType.redis) {
            LOG.info("tokenbucket: endpoints with store=redis and no redisUri of their own use {}", where);
        }
    }
}
