package io.tokenbucket.camel.springboot.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.lettuce.core.RedisClient;
import io.netty.util.Version;
import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelExecutionException;
import org.apache.camel.ProducerTemplate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The starter in a Spring Boot application with store=redis against a real redis-server: on the Lettuce and Netty
 * that Spring Boot manages, with the Redis of spring.data.redis.* (a password holding {@code @ / : % +}).
 */
@ExtendWith(OutputCaptureExtension.class)
class TokenBucketStarterRedisTest {

    private static final String PASSWORD = "p@ss/w:rd%2F+x";

    private static RedisHandle redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.withPassword(PASSWORD);
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @Test
    void lettuceAndNettyAreTheVersionsSpringBootManages() throws IOException {
        String bom = springBootDependencies();
        assertThat(lettuceVersion()).isEqualTo(property(bom, "lettuce.version"));
        assertThat(Version.identify().get("netty-common").artifactVersion()).isEqualTo(property(bom, "netty.version"))
                .startsWith("4.1.");
        assertThat(Version.identify().get("netty-transport").artifactVersion()).isEqualTo(property(bom,
                "netty.version"));
    }

    @Test
    void springDataRedisIsTheRedisOfTheBuckets(CapturedOutput output) {
        try (ConfigurableApplicationContext first = start(); ConfigurableApplicationContext second = start()) {
            ProducerTemplate one = first.getBean(ProducerTemplate.class);
            ProducerTemplate other = second.getBean(ProducerTemplate.class);
            one.sendBody("direct:a", "1");
            one.sendBody("direct:a", "2");
            // the second application shares the bucket: the two tokens are gone in Redis
            assertThatThrownBy(() -> other.sendBody("direct:a", "3"))
                    .isInstanceOf(CamelExecutionException.class)
                    .hasCauseInstanceOf(TokenBucketRejectedException.class);
            assertThat((List<?>) redis.command("KEYS", "tokenbucket:x:*")).hasSize(1);
        }
        assertThat(output.getAll())
                .contains("endpoints with store=redis and no redisUri of their own use redis://***@127.0.0.1:"
                        + redis.port() + " (from spring.data.redis.*)")
                .doesNotContain(PASSWORD).doesNotContain("p@ss").doesNotContain("rd%2F+x");
    }

    @Test
    void aRedisUriOfItsOwnWinsOverSpringDataRedis() {
        try (ConfigurableApplicationContext context = start("camel.component.tokenbucket.redis-uri="
                + "redis://127.0.0.1:1")) {
            ProducerTemplate producer = context.getBean(ProducerTemplate.class);
            assertThatThrownBy(() -> producer.sendBody("direct:a", "1")).hasStackTraceContaining("127.0.0.1:1");
        }
    }

    /** The test application, with these settings as command-line arguments (they win over application.yaml). */
    private static ConfigurableApplicationContext start(String... more) {
        List<String> args = new ArrayList<>(List.of("--camel.component.tokenbucket.store=redis",
                "--camel.component.tokenbucket.capacity=2", "--camel.component.tokenbucket.refill-period=1h",
                "--spring.data.redis.host=" + redis.host(), "--spring.data.redis.port=" + redis.port(),
                "--spring.data.redis.password=" + PASSWORD, "--logging.level.io.tokenbucket=INFO",
                "--camel.main.jmx-enabled=false"));
        for (String setting : more) {
            args.add("--" + setting);
        }
        return new SpringApplicationBuilder(TokenBucketTestApplication.class).run(args.toArray(new String[0]));
    }

    private static String lettuceVersion() throws IOException {
        try (InputStream in = RedisClient.class.getResourceAsStream(
                "/META-INF/maven/io.lettuce/lettuce-core/pom.properties")) {
            Properties properties = new Properties();
            properties.load(in);
            return properties.getProperty("version");
        }
    }

    /** The BOM of the Spring Boot on the class path, from the local Maven repository the build uses. */
    private static String springBootDependencies() throws IOException {
        String version = SpringBootVersion.getVersion();
        Path pom = Path.of(System.getProperty("tokenbucket.maven.repository"),
                "org/springframework/boot/spring-boot-dependencies", version,
                "spring-boot-dependencies-" + version + ".pom");
        return Files.readString(pom);
    }

    private static String property(String pom, String name) {
        Matcher m = Pattern.compile("<" + Pattern.quote(name) + ">([^<]+)</").matcher(pom);
        assertThat(m.find()).as(name + " in spring-boot-dependencies").isTrue();
        return m.group(1);
    }
}
