package io.tokenbucket.camel.springboot.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import io.tokenbucket.camel.TokenBucketStoreException;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelExecutionException;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.util.json.JsonArray;
import org.apache.camel.util.json.JsonObject;
import org.apache.camel.util.json.Jsoner;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.logging.LoggingSystem;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * No page, log line, MBean attribute or exception of a Spring Boot application shows the Redis password of
 * {@code camel.component.tokenbucket.redis-uri}: with camel-console on the class path, the README's actuator
 * settings (health with details, the {@code camel} dev consoles) and every other actuator endpoint but the heap dump
 * exposed over a real web server, every page is read (each dev console, each metric, env, configprops, loggers...),
 * before and during a Redis outage, with a password holding {@code @ / : % +}.
 */
@ExtendWith(OutputCaptureExtension.class)
class TokenBucketStarterSecretTest {

    private static final String PASSWORD = "Zq@7/pa:ss%2F+w0rd";

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void thePasswordIsOnNoPage(CapturedOutput output) throws Exception {
        try (RedisHandle redis = RedisServers.withPassword(PASSWORD)) {
            String redisUri = "redis://:" + URLEncoder.encode(PASSWORD, StandardCharsets.UTF_8) + "@127.0.0.1:"
                    + redis.port();
            Map<String, Object> settings = new LinkedHashMap<>();
            settings.put("server.port", "0");
            settings.put("server.address", "127.0.0.1");
            settings.put("camel.component.tokenbucket.store", "redis");
            settings.put("camel.main.name", "secret-test");
            settings.put("camel.main.dev-console-enabled", "true");
            settings.put("camel.main.jmx-enabled", "true");
            settings.put("camel.health.producers-enabled", "true");
            settings.put("management.endpoint.health.probes.enabled", "true");
            settings.put("management.endpoint.health.group.readiness.include", "readinessState,camelReadinessState");
            settings.put("management.endpoint.health.group.liveness.include", "livenessState,camelLivenessState");
            settings.put("management.endpoint.health.show-details", "always");
            settings.put("management.endpoints.web.exposure.include", "*");
            settings.put("management.endpoints.web.exposure.exclude", "heapdump");
            settings.put("logging.level.io.tokenbucket", "DEBUG");
            settings.put("logging.level.org.apache.camel", "DEBUG");
            // the secret on the command line, which Spring also keeps as a bean (springApplicationArguments)
            try (ConfigurableApplicationContext context = new SpringApplicationBuilder(
                    TokenBucketTestApplication.class).properties(settings)
                    .run("--spring.main.web-application-type=servlet",
                            "--camel.component.tokenbucket.redis-uri=" + redisUri)) {
                int port = ((WebServerApplicationContext) context).getWebServer().getPort();
                ProducerTemplate producer = context.getBean(ProducerTemplate.class);
                producer.sendBody("direct:a", "through Redis");

                Map<String, String> pages = readEveryPage(port);
                // the pages hold what they should: the bean console lists the configuration bean, masked
                assertThat(get(port, "/actuator/camel/bean").statusCode()).isEqualTo(200);
                assertThat(pages.get("/actuator/camel/bean")).contains("\"name\":\"redisUri\"")
                        .contains("TokenBucketSecret").contains("***@127.0.0.1:" + redis.port());
                assertThat(pages.get("/actuator/camel/tokenbucket")).contains("\"name\":\"x\"")
                        .contains("***@127.0.0.1:" + redis.port());
                assertThat(pages).containsKeys("/actuator/env", "/actuator/configprops", "/actuator/metrics",
                        "/actuator/loggers", "/actuator/camel/bean-model");
                assertThat(pages.keySet().stream().filter(p -> p.startsWith("/actuator/metrics/"))).hasSizeGreaterThan(10);
                pages.forEach((page, body) -> assertNoSecret(page, body));
                assertNoSecret("MBean attributes", camelMBeanAttributes());

                redis.stop();
                Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
                        assertThat(get(port, "/actuator/health/readiness").statusCode()).isEqualTo(503));
                assertThatThrownBy(() -> producer.sendBody("direct:a", "Redis is down"))
                        .isInstanceOf(CamelExecutionException.class)
                        .hasCauseInstanceOf(TokenBucketStoreException.class)
                        .satisfies(e -> assertNoSecret("exception", stackTrace(e)));
                Map<String, String> outage = readEveryPage(port);
                assertThat(outage.get("/actuator/health")).contains("DOWN", "tokenbucket-x");
                outage.forEach((page, body) -> assertNoSecret(page + " (Redis down)", body));
                assertNoSecret("MBean attributes (Redis down)", camelMBeanAttributes());
            }
        }
        assertThat(output.getAll()).contains("tokenbucket");
        assertNoSecret("the log", output.getAll());
    }

    /** The log levels this test raised outlive its application: back to the configuration's for the next tests. */
    @AfterEach
    void resetLogLevels() {
        LoggingSystem logging = LoggingSystem.get(getClass().getClassLoader());
        logging.setLogLevel("io.tokenbucket", null);
        logging.setLogLevel("org.apache.camel", null);
    }

    /**
     * Every page under {@code /actuator} that a GET answers: each link of the discovery page, each dev console of
     * {@code camel}, each metric, and the readiness and liveness groups.
     */
    private Map<String, String> readEveryPage(int port) throws Exception {
        Map<String, String> pages = new LinkedHashMap<>();
        JsonObject links = (JsonObject) ((JsonObject) Jsoner.deserialize(body(port, "/actuator"))).get("_links");
        for (Map.Entry<String, Object> link : links.entrySet()) {
            JsonObject l = (JsonObject) link.getValue();
            if (Boolean.TRUE.equals(l.get("templated"))) {
                continue;
            }
            String path = URI.create(l.getString("href")).getPath();
            pages.put(path, body(port, path));
        }
        for (String id : ((JsonObject) Jsoner.deserialize(pages.get("/actuator/camel"))).keySet()) {
            // a console that fails answers 500 with Spring's error page: read and checked like any other
            pages.put("/actuator/camel/" + id, get(port, "/actuator/camel/" + id).body());
        }
        JsonArray names = (JsonArray) ((JsonObject) Jsoner.deserialize(pages.get("/actuator/metrics"))).get("names");
        for (Object name : names) {
            pages.put("/actuator/metrics/" + name, body(port, "/actuator/metrics/" + name));
        }
        for (String path : List.of("/actuator/health/readiness", "/actuator/health/liveness",
                "/actuator/env/camel.component.tokenbucket.redis-uri",
                "/actuator/configprops/camel.component.tokenbucket")) {
            pages.put(path, get(port, path).body());
        }
        return pages;
    }

    private String body(int port, String path) throws IOException, InterruptedException {
        HttpResponse<String> response = get(port, path);
        // a DOWN health answers 503 with its page; every other page must be there
        assertThat(response.statusCode()).as(path).isIn(200, 503);
        return response.body();
    }

    private HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(30)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Every readable attribute of every MBean of Camel, as text. */
    private static String camelMBeanAttributes() throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        List<String> values = new ArrayList<>();
        for (ObjectName name : server.queryNames(new ObjectName("org.apache.camel:*"), null)) {
            for (MBeanAttributeInfo attribute : server.getMBeanInfo(name).getAttributes()) {
                if (!attribute.isReadable()) {
                    continue;
                }
                try {
                    values.add(name + " " + attribute.getName() + "=" + server.getAttribute(name, attribute.getName()));
                } catch (Exception notReadableNow) {
                    values.add(name + " " + attribute.getName() + " failed: " + stackTrace(notReadableNow));
                }
            }
        }
        assertThat(values).anyMatch(v -> v.contains("tokenbucket://x") && v.contains("StoreDescription="));
        return String.join("\n", values);
    }

    private static String stackTrace(Throwable e) {
        java.io.StringWriter text = new java.io.StringWriter();
        e.printStackTrace(new java.io.PrintWriter(text));
        return text.toString();
    }

    /** Neither the password, nor its percent-encoded forms, nor a telling part of it. */
    private static void assertNoSecret(String where, String text) {
        String encoded = URLEncoder.encode(PASSWORD, StandardCharsets.UTF_8);
        assertThat(text).as(where).doesNotContain(PASSWORD).doesNotContain(encoded)
                .doesNotContain(encoded.replace("+", "%20")).doesNotContain("Zq@7").doesNotContain("Zq%407")
                .doesNotContain("w0rd");
    }
}
