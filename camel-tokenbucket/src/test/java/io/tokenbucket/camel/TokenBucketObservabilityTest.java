package io.tokenbucket.camel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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
@TokenBucketRedisTestSupport.OwnRedis
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
    void aFrozenRedisCostsAHealthRequestOneProbeNotOnePerEndpoint() {
        HealthCheckHelper.getHealthCheckRepository(context, "producers").setEnabled(true);
        int endpoints = 10;
        for (int i = 0; i < endpoints; i++) {
            context.getEndpoint("tokenbucket:frozen" + i + "?store=redis&redisUri=" + redis.uri()
                    + "&storeTimeout=300ms");
        }
        // counted from here: the shared connection is open and each endpoint's start probe has run
        redis.command("CONFIG", "RESETSTAT");
        // Redis answers nothing, as when stuck in a long script or a fork (no probe has run yet: an answer is reused
        // for a second); the process is stopped rather than CLIENT PAUSEd, since Redis 6.2 holds a CLIENT UNPAUSE
        // until the pause is over, and continued before anything else, so the freeze never outlasts this test
        signal("STOP");
        List<HealthCheck.Result> results;
        try {
            results = HealthCheckHelper.invokeReadiness(context, "full").stream()
                    .filter(r -> r.getCheck().getId().startsWith("tokenbucket-frozen")).toList();
        } finally {
            signal("CONT");
        }
        assertThat(results).hasSize(endpoints).allSatisfy(r -> {
            assertThat(r.getState()).isEqualTo(HealthCheck.State.DOWN);
            assertThat(r.getMessage()).hasValueSatisfying(m -> assertThat(m)
                    .isEqualTo("redis at redis://127.0.0.1:" + redis.port()
                            + ": no answer within 300 ms (storeTimeout)"));
        });
        // the probe waited in the socket while Redis was stopped: it is counted once Redis has run it
        await().atMost(java.time.Duration.ofSeconds(10)).until(() -> probeCalls() > 0);
        // one shared connection (the ten endpoints and tokenbucket:hc name one URI), one probe in flight, its answer
        // reused for the other checks; so one storeTimeout for all, not one per check (the count says it; a time
        // bound would also fail a loaded machine). No endpoint's own probe went: the connection's failed first
        assertThat(probeCalls()).as("probes for the %d checks", endpoints + 1).isEqualTo(1);
        assertThat(calls("ping")).as("PINGs").isZero();
        assertThat(HealthCheckHelper.invokeLiveness(context)).noneMatch(r -> r.getCheck().getId()
                .startsWith("tokenbucket-"));
    }

    /** Sends {@code SIG<name>} to the redis-server process ({@code kill}, as a shell would). */
    private static void signal(String name) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(redis.pid())).inheritIO().start();
            assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -%s", name).isTrue();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The script calls since RESETSTAT (the probe is one: {@code EVALSHA}, or {@code EVAL} once after NOSCRIPT). */
    private static long probeCalls() {
        return calls("evalsha") + calls("eval");
    }

    /** The {@code calls} of {@code cmdstat_<command>} in {@code INFO commandstats}; 0 when none ran since RESETSTAT. */
    private static long calls(String command) {
        Matcher calls = Pattern.compile("cmdstat_" + command + ":calls=(\\d+)").matcher((String) redis.command("INFO",
                "commandstats"));
        return calls.find() ? Long.parseLong(calls.group(1)) : 0;
    }

    private HealthCheck.State readiness() {
        return HealthCheckHelper.invokeReadiness(context).stream()
                .filter(r -> r.getCheck().getId().equals("tokenbucket-hc")).findFirst()
                .orElseThrow(() -> new AssertionError("no health check tokenbucket-hc")).getState();
    }
}
