package io.tokenbucket.camel.springboot.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Every snippet of the starter's README works as written: each YAML block is the configuration of a Spring Boot
 * application that starts (against a real redis-server where it says {@code store: redis}); each Maven dependency
 * either states a version that is in the build's Maven repository or is managed by a BOM the README names; each
 * start failure the README quotes is what the application prints.
 */
@ExtendWith(OutputCaptureExtension.class)
class TokenBucketStarterReadmeTest {

    private static final Pattern YAML = Pattern.compile("```yaml\n(.*?)```", Pattern.DOTALL);
    private static final Pattern XML = Pattern.compile("```xml\n(.*?)```", Pattern.DOTALL);
    private static final Pattern DEPENDENCY = Pattern.compile("<dependency>(.*?)</dependency>", Pattern.DOTALL);
    /** A quoted failure: {@code `capacity: 0` fails with `...`}, the quote possibly wrapped over lines. */
    private static final Pattern FAILURE = Pattern.compile("`([a-z.-]+): (\\S+)` (?:fails with|ends in) `([^`]+)`");

    private static String readme() throws IOException {
        return Files.readString(Path.of("README.md"));
    }

    @Test
    void everyYamlSnippetStartsAnApplication(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        List<String> blocks = blocks(YAML);
        assertThat(blocks).hasSizeGreaterThanOrEqualTo(2);
        try (RedisHandle redis = RedisServers.standalone()) {
            for (int i = 0; i < blocks.size(); i++) {
                Path yaml = dir.resolve("snippet" + i + ".yaml");
                Files.writeString(yaml, blocks.get(i));
                try (ConfigurableApplicationContext context = new SpringApplicationBuilder(
                        TokenBucketTestApplication.class).run("--spring.config.additional-location=" + yaml.toUri(),
                                "--spring.data.redis.host=" + redis.host(), "--spring.data.redis.port=" + redis.port(),
                                "--camel.main.jmx-enabled=false")) {
                    assertThat(context.getBean(CamelContext.class).isStarted()).as(blocks.get(i)).isTrue();
                }
            }
        }
    }

    /**
     * A dependency without a version must be managed by a BOM the README tells users to import: Spring Boot's or
     * camel-spring-boot-bom; one with a version must be in the Maven repository of this build.
     */
    @Test
    void everyMavenDependencyResolves() throws Exception {
        String readme = readme();
        List<String> dependencies = new ArrayList<>();
        for (String block : blocks(XML)) {
            Matcher m = DEPENDENCY.matcher(block);
            while (m.find()) {
                dependencies.add(m.group(1));
            }
        }
        assertThat(dependencies).hasSizeGreaterThanOrEqualTo(3);
        Path repository = Path.of(System.getProperty("tokenbucket.maven.repository"));
        String boms = Files.readString(bom(repository, "org/springframework/boot/spring-boot-dependencies",
                SpringBootVersion.getVersion())) + Files.readString(bom(repository,
                "org/apache/camel/springboot/camel-spring-boot-bom",
                System.getProperty("tokenbucket.camel-spring-boot.version")));
        assertThat(readme).contains("camel-spring-boot-bom");
        for (String dependency : dependencies) {
            String group = element(dependency, "groupId");
            String artifact = element(dependency, "artifactId");
            String version = element(dependency, "version");
            if (group.equals("io.tokenbucket")) {
                assertThat(version).isEqualTo("x.x.x"); // this project's, as released
                continue;
            }
            if (version == null) {
                assertThat(boms).as(group + ":" + artifact + " managed by a BOM the README names")
                        .contains("<artifactId>" + artifact + "</artifactId>");
            } else {
                Path jar = repository.resolve(group.replace('.', '/')).resolve(artifact).resolve(version)
                        .resolve(artifact + "-" + version + ".jar");
                assertThat(jar).as(group + ":" + artifact + ":" + version).exists();
            }
        }
    }

    @Test
    void everyQuotedStartFailureIsWhatIsPrinted(CapturedOutput output) throws Exception {
        String readme = readme().replaceAll("\\s*\n\\s*", " ");
        Matcher m = FAILURE.matcher(readme);
        int quoted = 0;
        while (m.find()) {
            quoted++;
            String property = m.group(1).startsWith("camel.") ? m.group(1) : "camel.component.tokenbucket."
                    + m.group(1);
            int from = output.getAll().length();
            try (ConfigurableApplicationContext context = new SpringApplicationBuilder(
                    TokenBucketTestApplication.class).run("--" + property + "=" + m.group(2),
                            "--camel.main.jmx-enabled=false")) {
                throw new AssertionError(property + "=" + m.group(2) + " started");
            } catch (RuntimeException expected) {
                // Spring Boot prints its failure analysis; the README quotes it
            }
            String printed = output.getAll().substring(from).replaceAll("\\s*\n\\s*", " ");
            assertThat(printed).as(property + "=" + m.group(2)).contains(m.group(3));
        }
        assertThat(quoted).isGreaterThanOrEqualTo(3);
    }

    private static List<String> blocks(Pattern pattern) throws IOException {
        List<String> blocks = new ArrayList<>();
        Matcher m = pattern.matcher(readme());
        while (m.find()) {
            blocks.add(m.group(1));
        }
        return blocks;
    }

    private static Path bom(Path repository, String path, String version) {
        String artifact = path.substring(path.lastIndexOf('/') + 1);
        return repository.resolve(path).resolve(version).resolve(artifact + "-" + version + ".pom");
    }

    private static String element(String xml, String name) {
        Matcher m = Pattern.compile("<" + name + ">\\s*([^<]+?)\\s*</" + name + ">").matcher(xml);
        return m.find() ? m.group(1) : null;
    }
}
