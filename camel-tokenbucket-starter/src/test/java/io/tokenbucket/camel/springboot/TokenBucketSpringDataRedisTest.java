package io.tokenbucket.camel.springboot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.PrintWriter;
import java.io.StringWriter;

import io.lettuce.core.RedisURI;
import io.tokenbucket.camel.TokenBucketComponent;
import io.tokenbucket.camel.TokenBucketRejectedException;
import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.spring.boot.CamelAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Which Redis the endpoints get by default: the component's own redis-uri or redis-client, else Spring Boot's
 * RedisConnectionDetails, else spring.data.redis.*, else the component's default. The text written is read back
 * with Lettuce, as the component reads it.
 */
class TokenBucketSpringDataRedisTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(CamelAutoConfiguration.class, TokenBucketComponentConverter.class,
                    TokenBucketEnumConverter.class, TokenBucketComponentAutoConfiguration.class))
            .withPropertyValues("camel.main.jmx-enabled=false");

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "spring.data.redis.host=redis.internal,spring.data.redis.port=6380 | redis://redis.internal:6380",
            "spring.data.redis.database=3 | redis://localhost:6379/3",
            "spring.data.redis.ssl.enabled=true,spring.data.redis.host=r.example | rediss://r.example:6379",
            "spring.data.redis.password=a@b/c:d%e+f g | redis://:a%40b%2Fc%3Ad%25e%2Bf%20g@localhost:6379",
            "spring.data.redis.username=app,spring.data.redis.password=s3cret | redis://app:s3cret@localhost:6379",
            "spring.data.redis.url=rediss://u:p%40ss@r.example:7000/2 | rediss://u:p%40ss@r.example:7000/2",
            "spring.data.redis.cluster.nodes=h1:7000;h2:7001,spring.data.redis.password=pw"
                    + " | redis-cluster://:pw@h1:7000,h2:7001",
            "spring.data.redis.sentinel.master=main,spring.data.redis.sentinel.nodes=s1:26379;s2:26380"
                    + " | redis-sentinel://s1:26379,s2:26380#main",
    })
    void springDataRedisBecomesTheEndpointsRedis(String settings, String expected) {
        runner.withPropertyValues(settings.replace(';', ',').split(",(?=spring)")).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(redisUri(context)).isEqualTo(expected);
        });
    }

    @Test
    void aPasswordReachesLettuceAsWritten() {
        String password = "a@b/c:d%e+f g%41";
        runner.withPropertyValues("spring.data.redis.username=app", "spring.data.redis.password=" + password)
                .run(context -> {
                    RedisURI read = RedisURI.create(redisUri(context));
                    var credentials = read.getCredentialsProvider().resolveCredentials().block();
                    assertThat(credentials.getUsername()).isEqualTo("app");
                    assertThat(new String(credentials.getPassword())).isEqualTo(password);
                });
    }

    /**
     * An application whose Spring Data Redis cannot be written as a redisUri (Sentinel credentials) but whose
     * tokenbucket endpoints keep their buckets in memory: the component must still be created, and its endpoints
     * throttle; only a component whose default store is redis refuses it, naming the property.
     */
    @Test
    void aSpringDataRedisTheComponentCannotUseFailsOnlyAComponentThatStoresInRedis() {
        String[] sentinel = {"spring.data.redis.sentinel.master=main", "spring.data.redis.sentinel.nodes=s1:26379",
                "spring.data.redis.sentinel.password=sentinel-secret"};
        runner.withPropertyValues(sentinel).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(redisUri(context)).isNull();
            ProducerTemplate template = context.getBean(CamelContext.class).createProducerTemplate();
            template.sendBody("tokenbucket:local?mode=reject", "1");
            assertThatThrownBy(() -> template.sendBody("tokenbucket:local?mode=reject", "2"))
                    .hasCauseInstanceOf(TokenBucketRejectedException.class);
        });
        runner.withPropertyValues(sentinel).withPropertyValues("camel.component.tokenbucket.store=redis")
                .run(context -> assertThatThrownBy(() -> redisUri(context))
                        .hasStackTraceContaining("spring.data.redis.sentinel.username and .password")
                        .satisfies(e -> assertThat(e).hasStackTraceContaining("redis-client")));
    }

    /**
     * A spring.data.redis.url that is no URL, mostly a password not percent-encoded, fails the start naming the
     * property and saying how to write it, and nothing of the URL (the password) reaches the failure or the log.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"redis://:SE@CRET@h:6379", "redis://:SE%zCRET@h:6379", "redis://:SE CRET@h:6379",
            "redis://u:SE/CRET@h:6379", "redis://u:SE#CRET@h:6379", "redis://u:SE?CRET@h:6379"})
    void aUrlThatIsNoUrlFailsNamingThePropertyWithoutItsPassword(String url) {
        runner.withPropertyValues("spring.data.redis.url=" + url, "camel.component.tokenbucket.store=redis")
                .run(context -> {
                    Throwable failure = catchThrowable(() -> redisUri(context));
                    assertThat(failure).hasStackTraceContaining("spring.data.redis.url")
                            .hasStackTraceContaining("percent-encoded");
                    StringWriter trace = new StringWriter();
                    failure.printStackTrace(new PrintWriter(trace));
                    assertThat(trace.toString()).doesNotContain("CRET");
                });
    }

    @Test
    void theComponentsOwnRedisUriWins() {
        runner.withPropertyValues("spring.data.redis.host=redis.internal",
                "camel.component.tokenbucket.redis-uri=redis://mine:6379").run(context ->
                        assertThat(redisUri(context)).isEqualTo("redis://mine:6379"));
    }

    @Test
    void noSpringDataRedisLeavesTheComponentsDefault() {
        runner.run(context -> assertThat(redisUri(context)).isNull());
    }

    @Test
    void springBootsConnectionDetailsWinOverTheProperties() {
        runner.withUserConfiguration(Details.class).withPropertyValues("spring.data.redis.host=ignored")
                .run(context -> assertThat(redisUri(context)).isEqualTo("redis://:pw@details.example:6390/1"));
    }

    private static String redisUri(AssertableApplicationContext context) {
        return context.getBean(CamelContext.class).getComponent("tokenbucket", TokenBucketComponent.class)
                .getConfiguration().getRedisUri();
    }

    @Configuration(proxyBeanMethods = false)
    static class Details {

        @Bean
        RedisConnectionDetails redisConnectionDetails() {
            return new RedisConnectionDetails() {
                @Override
                public String getPassword() {
                    return "pw";
                }

                @Override
                public Standalone getStandalone() {
                    return Standalone.of("details.example", 6390, 1);
                }
            };
        }
    }
}
