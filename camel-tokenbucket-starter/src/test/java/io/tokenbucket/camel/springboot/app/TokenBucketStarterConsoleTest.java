package io.tokenbucket.camel.springboot.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.util.Set;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.camel.ProducerTemplate;
import org.apache.camel.spring.boot.actuate.console.CamelDevConsoleEndpoint;
import org.junit.jupiter.api.Test;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The dev console and JMX in a Spring Boot application, with camel-console and camel-management added as the
 * component's docs say (their starters are not published for 4.18.0): the tokenbucket console is served by the
 * actuator endpoint {@code camel} ({@code /actuator/camel/tokenbucket}) and the endpoint's MBean shows its counters.
 */
class TokenBucketStarterConsoleTest {

    @Test
    void theDevConsoleAndTheMBeanShowTheEndpoint() throws Exception {
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(TokenBucketTestApplication.class)
                .run("--camel.main.dev-console-enabled=true", "--camel.main.jmx-enabled=true",
                        "--camel.main.name=console-test",
                        "--management.endpoints.web.exposure.include=health,camel")) {
            context.getBean(ProducerTemplate.class).sendBody("direct:a", "one");

            CamelDevConsoleEndpoint console = context.getBean(CamelDevConsoleEndpoint.class);
            assertThat(console.getConsoleById("tokenbucket").toJson()).contains("\"name\":\"x\"", "\"admitted\":1");

            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            Set<ObjectName> names = server.queryNames(
                    new ObjectName("org.apache.camel:context=console-test,type=endpoints,*"), null);
            ObjectName endpoint = names.stream().filter(n -> n.toString().contains("tokenbucket://x"))
                    .findFirst().orElseThrow(() -> new AssertionError("no tokenbucket MBean in " + names));
            assertThat(server.getAttribute(endpoint, "AdmittedCount")).isEqualTo(1L);
        }
    }
}
