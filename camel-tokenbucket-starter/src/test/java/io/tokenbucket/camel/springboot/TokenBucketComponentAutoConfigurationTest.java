package io.tokenbucket.camel.springboot;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import io.tokenbucket.camel.TokenBucketComponent;
import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketLimitResolver;
import io.tokenbucket.camel.TokenBucketMode;
import io.tokenbucket.camel.TokenBucketStoreErrorPolicy;
import io.tokenbucket.camel.TokenBucketStoreType;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.ComponentCustomizer;
import org.apache.camel.spring.boot.CamelAutoConfiguration;
import org.apache.camel.spring.boot.util.CamelPropertiesHelper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Each option of camel.component.tokenbucket.* reaches the component; durations, bean references, switches. */
class TokenBucketComponentAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(CamelAutoConfiguration.class,
                    TokenBucketComponentConverter.class, TokenBucketComponentAutoConfiguration.class))
            .withPropertyValues("camel.main.jmx-enabled=false");

    @Test
    void everyOptionReachesTheComponent() {
        runner.withUserConfiguration(Beans.class)
                .withPropertyValues(
                        "camel.component.tokenbucket.capacity=10",
                        "camel.component.tokenbucket.refill-amount=3",
                        "camel.component.tokenbucket.refill-period=1m30s",
                        "camel.component.tokenbucket.key-header=proxyId",
                        "camel.component.tokenbucket.require-key=true",
                        "camel.component.tokenbucket.cost=2",
                        "camel.component.tokenbucket.mode=check",
                        "camel.component.tokenbucket.max-wait=500ms",
                        "camel.component.tokenbucket.store=redis",
                        "camel.component.tokenbucket.limits=10/1s,1000/1h",
                        "camel.component.tokenbucket.key-limits=premium-*=20/1s;p7=10/1s",
                        "camel.component.tokenbucket.limit-resolver=#bean:resolver",
                        "camel.component.tokenbucket.redis-uri=redis://redis.example:6380/2",
                        "camel.component.tokenbucket.key-prefix=tb:",
                        "camel.component.tokenbucket.on-store-error=local",
                        "camel.component.tokenbucket.store-timeout=PT3S",
                        "camel.component.tokenbucket.metrics-per-key=true",
                        "camel.component.tokenbucket.metrics-max-keys=7",
                        "camel.component.tokenbucket.lazy-start-producer=true",
                        "camel.component.tokenbucket.autowired-enabled=false",
                        "camel.component.tokenbucket.worker-pool=#pool")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    TokenBucketComponent component = component(context);
                    TokenBucketConfiguration configuration = component.getConfiguration();
                    assertThat(configuration.getCapacity()).isEqualTo(10);
                    assertThat(configuration.getRefillAmount()).isEqualTo(3);
                    assertThat(configuration.getRefillPeriod()).isEqualTo(90_000);
                    assertThat(configuration.getKeyHeader()).isEqualTo("proxyId");
                    assertThat(configuration.isRequireKey()).isTrue();
                    assertThat(configuration.getCost()).isEqualTo(2);
                    assertThat(configuration.getMode()).isEqualTo(TokenBucketMode.check);
                    assertThat(configuration.getMaxWait()).isEqualTo(500);
                    assertThat(configuration.getStore()).isEqualTo(TokenBucketStoreType.redis);
                    assertThat(configuration.getLimits()).isEqualTo("10/1s,1000/1h");
                    assertThat(configuration.getKeyLimits()).isEqualTo("premium-*=20/1s;p7=10/1s");
                    assertThat(configuration.getLimitResolver()).isSameAs(context.getBean("resolver"));
                    assertThat(configuration.getRedisUri()).isEqualTo("redis://redis.example:6380/2");
                    assertThat(configuration.getKeyPrefix()).isEqualTo("tb:");
                    assertThat(configuration.getOnStoreError()).isEqualTo(TokenBucketStoreErrorPolicy.local);
                    assertThat(configuration.getStoreTimeout()).isEqualTo(3000);
                    assertThat(configuration.isMetricsPerKey()).isTrue();
                    assertThat(configuration.getMetricsMaxKeys()).isEqualTo(7);
                    assertThat(component.isLazyStartProducer()).isTrue();
                    assertThat(component.isAutowiredEnabled()).isFalse();
                    assertThat(component.getWorkerPool()).isSameAs(context.getBean("pool"));
                });
    }

    /**
     * meter-registry and redis-client: the component's configurer names MeterRegistry and AbstractRedisClient,
     * so Camel can set them only where Micrometer and Lettuce are (not in these tests); the starter hands Camel
     * the bean reference as given, which Camel resolves in its registry (the Spring context).
     */
    @Test
    void objectOptionsOfOptionalDependenciesGoToCamelAsBeanReferences() {
        runner.withPropertyValues("camel.component.tokenbucket.meter-registry=#bean:registry",
                "camel.component.tokenbucket.redis-client=#client").run(context -> {
                    assertThat(context).hasNotFailed();
                    TokenBucketComponentConfiguration properties =
                            context.getBean(TokenBucketComponentConfiguration.class);
                    assertThat(properties.componentOptions(context.getBean(CamelContext.class)))
                            .containsEntry("meterRegistry", "#bean:registry")
                            .containsEntry("redisClient", "#client");
                });
    }

    @ParameterizedTest
    @CsvSource({"#pool", "#bean:pool"})
    void camelResolvesABeanReferenceInTheSpringContext(String reference) {
        runner.withUserConfiguration(Beans.class).run(context -> {
            TokenBucketComponent component = new TokenBucketComponent();
            component.setCamelContext(context.getBean(CamelContext.class));
            CamelPropertiesHelper.setCamelProperties(component.getCamelContext(), component,
                    new HashMap<>(Map.of("workerPool", reference)), true);
            assertThat(component.getWorkerPool()).isSameAs(context.getBean("pool"));
        });
    }

    @Test
    void nothingGivenLeavesTheComponentsDefaults() {
        runner.run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(TokenBucketComponentAutoConfiguration.class);
            TokenBucketComponent component = component(context);
            TokenBucketConfiguration defaults = new TokenBucketConfiguration();
            TokenBucketConfiguration configuration = component.getConfiguration();
            assertThat(configuration).usingRecursiveComparison().isEqualTo(defaults);
            assertThat(component.isLazyStartProducer()).isFalse();
            assertThat(component.isAutowiredEnabled()).isTrue();
            assertThat(component.getWorkerPool()).isNull();
            assertThat(component.getMeterRegistry()).isNull();
        });
    }

    @ParameterizedTest(name = "refill-period={0} is {1} ms")
    @CsvSource({
            "2s, 2000",
            "500ms, 500",
            "2500, 2500",
            "2m, 120000",
            "1h, 3600000",
            "1m30s, 90000",
            "PT2S, 2000",
            "PT0.25S, 250",
            "5min, 300000",
            "1hour, 3600000",
    })
    void durationsAreReadAsTheComponentReadsThem(String text, long millis) {
        runner.withPropertyValues("camel.component.tokenbucket.refill-period=" + text,
                "camel.component.tokenbucket.store-timeout=" + text,
                "camel.component.tokenbucket.max-wait=" + text).run(context -> {
                    TokenBucketConfiguration configuration = component(context).getConfiguration();
                    assertThat(configuration.getRefillPeriod()).isEqualTo(millis);
                    assertThat(configuration.getStoreTimeout()).isEqualTo(millis);
                    assertThat(configuration.getMaxWait()).isEqualTo(millis);
                });
    }

    @Test
    void aZeroMaxWaitIsZero() {
        runner.withPropertyValues("camel.component.tokenbucket.max-wait=0s").run(context ->
                assertThat(component(context).getConfiguration().getMaxWait()).isZero());
    }

    @ParameterizedTest(name = "{0}={1} fails naming the property")
    @CsvSource({"refill-period, 5x", "max-wait, soon", "store-timeout, 1 second please", "refill-period, PT",
            "max-wait, 3x4h"})
    void textThatIsNoDurationFailsTheStartNamingTheProperty(String property, String text) {
        runner.withPropertyValues("camel.component.tokenbucket." + property + "=" + text).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasStackTraceContaining("camel.component.tokenbucket." + property)
                    .hasStackTraceContaining("must be a duration")
                    .hasStackTraceContaining("'" + text + "'");
        });
    }

    @ParameterizedTest(name = "{0}={1} fails naming the property")
    @CsvSource({"max-wait, 200000000000000d", "refill-period, 99999999999999999999", "store-timeout, PT9999999999999999H"})
    void aDurationTooLongForALongFailsTheStartInsteadOfWrappingAround(String property, String text) {
        // Camel's TimeUtils would multiply 200000000000000d into a small or negative number of milliseconds
        runner.withPropertyValues("camel.component.tokenbucket." + property + "=" + text).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasStackTraceContaining("camel.component.tokenbucket." + property)
                    .hasStackTraceContaining("'" + text + "'");
        });
    }

    @Test
    void enabledFalseLeavesTheComponentAlone() {
        runner.withPropertyValues("camel.component.tokenbucket.enabled=false",
                "camel.component.tokenbucket.capacity=7").run(context -> {
                    assertThat(context).hasNotFailed()
                            .doesNotHaveBean(TokenBucketComponentAutoConfiguration.class)
                            .doesNotHaveBean(ComponentCustomizer.class);
                    assertThat(component(context).getConfiguration().getCapacity()).isEqualTo(1);
                });
    }

    @Test
    void enabledTrueIsTheDefault() {
        runner.withPropertyValues("camel.component.tokenbucket.enabled=true",
                "camel.component.tokenbucket.capacity=7").run(context ->
                        assertThat(component(context).getConfiguration().getCapacity()).isEqualTo(7));
    }

    @Test
    void customizerEnabledFalseLeavesTheComponentAlone() {
        runner.withPropertyValues("camel.component.tokenbucket.customizer.enabled=false",
                "camel.component.tokenbucket.capacity=7").run(context ->
                        assertThat(component(context).getConfiguration().getCapacity()).isEqualTo(1));
    }

    @Test
    void aConfigurationBeanKeepsItsValuesUnlessAPropertyIsGiven() {
        runner.withUserConfiguration(Beans.class)
                .withPropertyValues("camel.component.tokenbucket.configuration=#bean:defaults",
                        "camel.component.tokenbucket.mode=reject")
                .run(context -> {
                    TokenBucketConfiguration bean = context.getBean("defaults", TokenBucketConfiguration.class);
                    TokenBucketConfiguration configuration = component(context).getConfiguration();
                    assertThat(configuration.getCapacity()).isEqualTo(5);
                    assertThat(configuration.getKeyHeader()).isEqualTo("apiKey");
                    assertThat(configuration.getMode()).isEqualTo(TokenBucketMode.reject);
                    // the component has a copy: the application's bean is unchanged
                    assertThat(configuration).isNotSameAs(bean);
                    assertThat(bean.getMode()).isEqualTo(TokenBucketMode.delay);
                });
    }

    private static TokenBucketComponent component(AssertableApplicationContext context) {
        return context.getBean(CamelContext.class).getComponent("tokenbucket", TokenBucketComponent.class);
    }

    @Configuration(proxyBeanMethods = false)
    static class Beans {

        @Bean
        TokenBucketLimitResolver resolver() {
            return TokenBucketLimitResolver.text(key -> key.startsWith("premium-") ? "20/1s" : null);
        }

        @Bean(destroyMethod = "shutdown")
        ExecutorService pool() {
            return Executors.newSingleThreadExecutor();
        }

        @Bean
        TokenBucketConfiguration defaults() {
            TokenBucketConfiguration configuration = new TokenBucketConfiguration();
            configuration.setCapacity(5);
            configuration.setKeyHeader("apiKey");
            return configuration;
        }
    }
}
