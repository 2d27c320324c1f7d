package io.tokenbucket.camel.springboot.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.ProducerTemplate;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.actuate.health.CompositeHealth;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * With spring-boot-starter-actuator and the settings the component's docs give Spring users: a Redis outage makes
 * the application not ready ({@code /actuator/health/readiness} OUT_OF_SERVICE, HTTP 503) and leaves it live
 * ({@code /actuator/health/liveness} UP), so an orchestrator stops sending it traffic and does not restart it; the
 * health endpoint says why.
 */
@ExtendWith(OutputCaptureExtension.class)
class TokenBucketStarterHealthTest {

    @Test
    void aRedisOutageIsNotReadyButLive(CapturedOutput output) {
        try (RedisHandle redis = RedisServers.standalone();
             ConfigurableApplicationContext context = new SpringApplicationBuilder(TokenBucketTestApplication.class)
                     .run("--camel.component.tokenbucket.store=redis", "--logging.level.io.tokenbucket=INFO",
                             "--spring.data.redis.host=" + redis.host(), "--spring.data.redis.port=" + redis.port(),
                             "--camel.health.producers-enabled=true",
                             "--management.endpoint.health.probes.enabled=true",
                             "--management.endpoint.health.group.readiness.include=readinessState,camelReadinessState",
                             "--management.endpoint.health.group.liveness.include=livenessState,camelLivenessState",
                             "--management.endpoint.health.show-details=always",
                             "--camel.main.jmx-enabled=false")) {
            context.getBean(ProducerTemplate.class).sendBody("direct:a", "through Redis");
            HealthEndpoint health = context.getBean(HealthEndpoint.class);
            assertThat(health.healthForPath("readiness").getStatus()).isEqualTo(Status.UP);

            redis.stop();
            // the component's probe keeps its answer for a second: poll until it asks Redis again
            Awaitility.await().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
                    assertThat(health.healthForPath("readiness").getStatus()).isEqualTo(Status.OUT_OF_SERVICE));
            assertThat(health.healthForPath("liveness").getStatus()).isEqualTo(Status.UP);
            String camelHealth = ((CompositeHealth) health.health()).getComponents().get("camelHealth").toString();
            assertThat(camelHealth).contains("tokenbucket-x=DOWN", "store=redis at redis://127.0.0.1:" + redis.port());
            // probe again: still DOWN, and the log says so once per endpoint, each in one line
            for (int i = 0; i < 3; i++) {
                assertThat(health.healthForPath("readiness").getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
            }
            // each DOWN endpoint's details: one line of reason, no stack trace
            Object details = ((CompositeHealth) health.health()).getComponents().get("camelHealth");
            String text = details.toString();
            assertThat(text).contains("redis at redis://127.0.0.1:" + redis.port() + ": ")
                    .doesNotContain("\tat ", "Exception:", "stackTrace", "\n");
            assertThat(text.length()).as(text).isLessThan(3000);

            redis.start();
            Awaitility.await().atMost(Duration.ofSeconds(20)).untilAsserted(() ->
                    assertThat(health.healthForPath("readiness").getStatus()).isEqualTo(Status.UP));
        }
        String log = output.getAll();
        assertThat(log).doesNotContain("\tat ");
        for (String name : new String[] {"x", "y"}) {
            assertThat(count(log, "tokenbucket:" + name + " is DOWN: redis at redis://127.0.0.1:")).as(name).isOne();
            assertThat(count(log, "tokenbucket:" + name + " is UP again")).as(name).isOne();
        }
    }

    private static int count(String text, String part) {
        int n = 0;
        for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
            n++;
        }
        return n;
    }
}
