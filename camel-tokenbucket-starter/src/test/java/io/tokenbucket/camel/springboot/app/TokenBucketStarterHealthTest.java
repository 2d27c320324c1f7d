package io.tokenbucket.camel.springboot.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import io.tokenbucket.store.redis.RedisHandle;
import io.tokenbucket.store.redis.RedisServers;
import org.apache.camel.ProducerTemplate;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.health.CompositeHealth;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * With spring-boot-starter-actuator and the settings the component's docs give Spring users: a Redis outage makes
 * the application not ready ({@code /actuator/health/readiness} OUT_OF_SERVICE, HTTP 503) and leaves it live
 * ({@code /actuator/health/liveness} UP), so an orchestrator stops sending it traffic and does not restart it; the
 * health endpoint says why.
 */
class TokenBucketStarterHealthTest {

    @Test
    void aRedisOutageIsNotReadyButLive() {
        try (RedisHandle redis = RedisServers.standalone();
             ConfigurableApplicationContext context = new SpringApplicationBuilder(TokenBucketTestApplication.class)
                     .run("--camel.component.tokenbucket.store=redis",
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
        }
    }
}
