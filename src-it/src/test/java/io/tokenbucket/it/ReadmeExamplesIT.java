package io.tokenbucket.it;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.activemq.artemis.core.config.Configuration;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.component.jms.JmsComponent;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.Resource;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;
import org.junit.jupiter.api.Test;
import org.springframework.jms.connection.JmsTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The YAML routes shown in the Markdown docs load into Camel as they are written, and the penalize example does
 * what its page says. A route is a {@code ```yaml} block that starts with {@code - route:}; the README keeps the
 * 30-second route, the other pages the rest. The component reference's {@code [source,yaml]} blocks that hold a
 * {@code - route:} load too, with their beans and error handlers, and start as many routes as they show (those
 * reading JMS on a broker of the test's own).
 */
class ReadmeExamplesIT {

    /** The pages whose YAML routes are checked, relative to the repository root. */
    private static final List<String> PAGES = List.of("README.md", "routes-example/README.md",
            "docs/how-it-works.md");

    private static final Pattern YAML_BLOCK = Pattern.compile("```yaml\n(.*?)```", Pattern.DOTALL);

    /** The component reference, relative to the repository root. */
    private static final String REFERENCE = "camel-tokenbucket/src/main/docs/tokenbucket-component.adoc";

    private static final Pattern ADOC_YAML_BLOCK = Pattern.compile("\\[source,yaml]\n----\n(.*?)\n----\n",
            Pattern.DOTALL);

    private static final Pattern ROUTE_LINE = Pattern.compile("(?m)^- route:");

    /** The YAML routes of {@code page}, in page order. */
    private static List<String> yamlRoutes(String page) throws Exception {
        String text = Files.readString(Path.of(System.getProperty("basedir", "."), "..", page));
        List<String> routes = new ArrayList<>();
        Matcher m = YAML_BLOCK.matcher(text);
        while (m.find()) {
            if (m.group(1).startsWith("- route:")) {
                routes.add(m.group(1));
            }
        }
        return routes;
    }

    /** The YAML routes of every page. */
    private static List<String> yamlRoutes() throws Exception {
        List<String> routes = new ArrayList<>();
        for (String page : PAGES) {
            routes.addAll(yamlRoutes(page));
        }
        return routes;
    }

    @Test
    void everyYamlRouteOfTheDocsLoads() throws Exception {
        assertThat(yamlRoutes("README.md")).as("YAML routes in README.md").isNotEmpty();
        List<String> routes = yamlRoutes();
        assertThat(routes).as("YAML routes in " + PAGES).hasSizeGreaterThanOrEqualTo(3);
        for (String yaml : routes) {
            try (CamelContext camel = new DefaultCamelContext()) {
                camel.getRegistry().bind("proxyPool", new Object() {
                    public String next() {
                        return "p1";
                    }
                });
                load(camel, yaml);
                camel.start();
                assertThat(camel.getRoutes()).as(yaml).hasSize(1);
            }
        }
    }

    @Test
    void everyYamlRouteOfTheReferenceLoadsAndStarts() throws Exception {
        String text = Files.readString(Path.of(System.getProperty("basedir", "."), "..", REFERENCE));
        List<String> blocks = new ArrayList<>();
        Matcher m = ADOC_YAML_BLOCK.matcher(text);
        while (m.find()) {
            if (ROUTE_LINE.matcher(m.group(1)).find()) {
                blocks.add(m.group(1) + "\n");
            }
        }
        assertThat(blocks).as("YAML routes in " + REFERENCE).hasSizeGreaterThanOrEqualTo(8);
        EmbeddedActiveMQ broker = null;
        try {
            for (String yaml : blocks) {
                try (CamelContext camel = new DefaultCamelContext()) {
                    if (yaml.contains("jms:")) { // the ESB routes: a real broker, and the transaction manager named
                        if (broker == null) {
                            broker = inVmBroker();
                        }
                        ActiveMQConnectionFactory jms = new ActiveMQConnectionFactory("vm://0");
                        camel.addComponent("jms", JmsComponent.jmsComponent(jms));
                        camel.getRegistry().bind("jmsTx", new JmsTransactionManager(jms));
                    }
                    load(camel, yaml);
                    camel.start();
                    assertThat(camel.getRoutes()).as(yaml)
                            .hasSize((int) ROUTE_LINE.matcher(yaml).results().count());
                }
            }
        } finally {
            if (broker != null) {
                broker.stop();
            }
        }
    }

    /** An ActiveMQ Artemis broker in this JVM, reached by its in-VM connector only, with no journal. */
    private static EmbeddedActiveMQ inVmBroker() throws Exception {
        Configuration config = new ConfigurationImpl().setPersistenceEnabled(false).setSecurityEnabled(false)
                .setJMXManagementEnabled(false).addAcceptorConfiguration("in-vm", "vm://0");
        config.setBrokerInstance(Path.of(System.getProperty("basedir", "."), "target", "e2e", "docs-broker")
                .toFile());
        return new EmbeddedActiveMQ().setConfiguration(config).start();
    }

    @Test
    void thePenalizeExampleBacksTheProxyOff() throws Exception {
        String yaml = yamlRoutes().stream().filter(y -> y.contains("direct:throttled-by-upstream")).findFirst()
                .orElseThrow();
        try (CamelContext camel = new DefaultCamelContext()) {
            load(camel, yaml);
            camel.start();
            Exchange e = camel.createProducerTemplate().request("direct:throttled-by-upstream", x -> {
                x.getMessage().setHeader("proxyId", "p1");
                x.getMessage().setHeader("Retry-After", "30");
            });
            assertThat(e.getException()).isNull();
            // the 30 s asked, less the time since the penalty (up to seconds on a loaded machine)
            assertThat(e.getMessage().getHeader("CamelTokenBucketWaitEstimate", Long.class))
                    .isBetween(25_000L, 30_000L);
        }
    }

    private static void load(CamelContext camel, String yaml) throws Exception {
        Resource resource = ResourceHelper.fromString("readme-example.yaml", yaml);
        PluginHelper.getRoutesLoader(camel).loadRoutes(resource);
    }
}
