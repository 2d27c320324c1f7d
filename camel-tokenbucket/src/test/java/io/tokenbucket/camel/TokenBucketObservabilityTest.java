package io.tokenbucket.camel;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.Set;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.console.DevConsole;
import org.apache.camel.health.HealthCheck;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.support.PluginHelper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The endpoint in Camel's tools: JMX attributes and operations, the dev console, the health check. */
class TokenBucketObservabilityTest extends TokenBucketRedisTestSupport {

    @Override
    protected boolean useJmx() {
        return true;
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:jmx").to("tokenbucket:jmx?capacity=2&refillPeriod=1h&mode=reject");
                from("direct:redis").to("tokenbucket:hc?store=redis&redisUri=" + redis.uri() + "&storeTimeout=300ms");
            }
        };
    }

    private void sendJmx(String key) {
        template.request("direct:jmx", e -> e.getMessage().setHeader(TokenBucketConstants.KEY, key));
    }

    @Test
    void jmxShowsLimitsAndCountersAndOperatesOnKeys() throws Exception {
        sendJmx("k1");
        sendJmx("k1");
        sendJmx("k1");
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        Set<ObjectName> names = jmx.queryNames(new ObjectName("org.apache.camel:type=endpoints,*"), null);
        ObjectName name = names.stream().filter(n -> n.toString().contains("tokenbucket://jmx")).findFirst()
                .orElseThrow(() -> new AssertionError("no tokenbucket endpoint MBean in " + names));
        assertThat(jmx.getAttribute(name, "AdmittedCount")).isEqualTo(2L);
        assertThat(jmx.getAttribute(name, "RejectedCount")).isEqualTo(1L);
        assertThat(jmx.getAttribute(name, "LimitsDescription")).isEqualTo("capacity 2, refill 2 per 3600000 ms");
        assertThat(jmx.getAttribute(name, "LocalKeys")).isEqualTo(1);
        String[] sig = { String.class.getName() };
        assertThat((String) jmx.invoke(name, "peekKey", new Object[] { "k1" }, sig)).startsWith("remaining=0, ");
        jmx.invoke(name, "removeKey", new Object[] { "k1" }, sig);
        assertThat((String) jmx.invoke(name, "peekKey", new Object[] { "k1" }, sig)).isEqualTo("remaining=2, waitMillis=0");
        jmx.invoke(name, "updateLimits", new Object[] { "5/1h" }, sig);
        assertThat(jmx.getAttribute(name, "LimitsDescription")).isEqualTo("capacity 5, refill 5 per 3600000 ms");
        for (int i = 0; i < 5; i++) {
            sendJmx("k2");
        }
        assertThat(jmx.getAttribute(name, "AdmittedCount")).isEqualTo(7L);
    }

    @Test
    void theDevConsoleListsEndpointsAndTheirBusiestKeys() {
        sendJmx("busy");
        sendJmx("busy");
        sendJmx("calm");
        DevConsole console = PluginHelper.getDevConsoleResolver(context).resolveDevConsole("tokenbucket");
        assertThat(console).isNotNull();
        String text = (String) console.call(DevConsole.MediaType.TEXT);
        assertThat(text).contains("tokenbucket:jmx").contains("admitted: 3").contains("busy key busy:")
                .contains("tokenbucket:hc").contains("redis at redis://127.0.0.1");
        @SuppressWarnings("unchecked")
        Map<String, Object> json = (Map<String, Object>) console.call(DevConsole.MediaType.JSON);
        assertThat(json.get("endpoints").toString()).contains("busiestKeys").contains("key=busy");
    }

    @Test
    void theHealthCheckFollowsRedis() {
        // Camel leaves producer health checks off unless asked (camel.health.producersEnabled=true in Main)
        HealthCheckHelper.getHealthCheckRepository(context, "producers").setEnabled(true);
        assertThat(template.request("direct:redis", e -> { }).getException()).isNull();
        assertThat(readiness()).isEqualTo(HealthCheck.State.UP);
        redis.stop();
        try {
            await().atMost(java.time.Duration.ofSeconds(10)).until(() -> readiness() == HealthCheck.State.DOWN);
        } finally {
            redis.start();
        }
        await().atMost(java.time.Duration.ofSeconds(10)).until(() -> readiness() == HealthCheck.State.UP);
    }

    @Test
    void aFrozenRedisCostsAHealthRequestOnePingNotOnePerEndpoint() {
        HealthCheckHelper.getHealthCheckRepository(context, "producers").setEnabled(true);
        int endpoints = 10;
        for (int i = 0; i < endpoints; i++) {
            context.getEndpoint("tokenbucket:frozen" + i + "?store=redis&redisUri=" + redis.uri()
                    + "&storeTimeout=300ms");
        }
        // every client's commands wait for 3 s, as on a Redis stuck in a long script or a fork (no probe has run
        // yet: an answer is reused for a second)
        redis.command("CLIENT", "PAUSE", "3000");
        long start = System.nanoTime();
        var results = HealthCheckHelper.invokeReadiness(context, "full").stream()
                .filter(r -> r.getCheck().getId().startsWith("tokenbucket-frozen")).toList();
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertThat(results).hasSize(endpoints).allSatisfy(r -> {
            assertThat(r.getState()).isEqualTo(HealthCheck.State.DOWN);
            assertThat(r.getMessage()).hasValueSatisfying(m -> assertThat(m)
                    .isEqualTo("redis at redis://127.0.0.1:" + redis.port()
                            + ": no answer to a PING within 300 ms (storeTimeout)"));
        });
        // one shared connection, one PING: 300 ms for all ten, not 3 s (generous for a loaded machine)
        assertThat(millis).as("ms for the ten checks").isLessThan(2_000);
        assertThat(HealthCheckHelper.invokeLiveness(context)).noneMatch(r -> r.getCheck().getId()
                .startsWith("tokenbucket-"));
    }

    private HealthCheck.State readiness() {
        return HealthCheckHelper.invokeReadiness(context).stream()
                .filter(r -> r.getCheck().getId().equals("tokenbucket-hc")).findFirst()
                .orElseThrow(() -> new AssertionError("no health check tokenbucket-hc")).getState();
    }
}
