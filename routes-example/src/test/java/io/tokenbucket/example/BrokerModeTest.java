package io.tokenbucket.example;

import static io.tokenbucket.example.ExampleConfigurationTest.assertRejected;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import jakarta.jms.JMSConsumer;
import jakarta.jms.JMSContext;
import jakarta.jms.Session;

import io.tokenbucket.camel.TokenBucketBackPressure;
import io.tokenbucket.example.broker.BrokerQueue;
import io.tokenbucket.example.broker.BrokerSettings;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.testsupport.net.Ports;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.component.jms.DefaultJmsMessageListenerContainer;
import org.apache.camel.component.jms.MessageListenerContainerFactory;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.util.json.JsonObject;
import org.apache.camel.util.json.Jsoner;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Broker mode in one JVM: its settings refused by name, and a run on the embedded broker (the scraper reading the
 * broker queue, its lines going through the broker to the one writer). Several JVMs, one killed: src-it's
 * BrokerQueueIT.
 */
class BrokerModeTest {

    @TempDir
    Path dir;

    @Test
    void badBrokerSettingsAreRejectedByName() throws Exception {
        assertRejected("example.broker", "amqp://127.0.0.1:5672", "example.broker must be empty, embedded or"
                + " tcp://host:port (Artemis URL parameters may follow after ?), was 'amqp://127.0.0.1:5672'");
        assertRejected("example.broker", "tcp://127.0.0.1", "example.broker must be empty, embedded or"
                + " tcp://host:port (Artemis URL parameters may follow after ?), was 'tcp://127.0.0.1'");
        assertRejected("example.broker", "tcp://u:p@127.0.0.1:61616", "example.broker must be empty, embedded or"
                + " tcp://host:port (Artemis URL parameters may follow after ?), was 'tcp://u:p@127.0.0.1:61616'");
        assertRejected("example.broker", "tcp://127.0.0.1:61616?user=scraper&password=s3cret", "example.broker must"
                + " not carry credentials (its value is logged at start-up), was a URL with parameter 'user'");
        assertRejected("example.brokerPort", "70000", "example.brokerPort must be from 1 to 65535, was 70000");
        assertRejected("example.brokerPort", "any", "example.brokerPort must be a whole number from 1 to 65535,"
                + " was 'any'");
        assertRejected("example.brokerConsumers", "0", "example.brokerConsumers must be from 1 to 64, was 0");
        assertRejected("example.brokerDeliveries", "1000", "example.brokerDeliveries must be from 1 to 100,"
                + " was 1000");
        assertRejected("example.brokerQueue", "urls?x=1", "example.brokerQueue must be 1 to 100 letters, digits,"
                + " '.', '_' or '-' (starting with a letter or digit), was 'urls?x=1'");
        assertRejected("example.brokerFeed", "yes", "example.brokerFeed must be true or false (or empty: false"
                + " here), was 'yes'");
        assertRejected("example.brokerRecord", "maybe", "example.brokerRecord must be true or false (or empty:"
                + " false here), was 'maybe'");
        assertRejected("example.brokerWait", "soon", "example.brokerWait must be a duration from 0 (for ever) to"
                + " 86400000 ms, such as 30s or 2m, was 'soon'");
        assertRejected("example.brokerWait", "25h", "example.brokerWait must be a duration from 0 (for ever) to"
                + " 86400000 ms, such as 30s or 2m, was '25h'");
        assertRejected("example.brokerWait", "-5", "example.brokerWait must be a duration from 0 (for ever) to"
                + " 86400000 ms, such as 30s or 2m, was '-5'");
    }

    @Test
    void theDefaultsFeedAndRecordOnlyWhereTheBrokerIsStarted() {
        BrokerSettings embedded = BrokerSettings.read((key, d) -> key.equals("example.broker") ? "embedded" : d);
        assertThat(embedded.mode()).isEqualTo(BrokerSettings.Mode.EMBEDDED);
        assertThat(embedded.url()).isEqualTo("tcp://127.0.0.1:61616");
        assertThat(embedded.feed()).isTrue();
        assertThat(embedded.record()).isTrue();
        assertThat(embedded.consumers()).isEqualTo(8);
        BrokerSettings other = BrokerSettings.read((key, d) -> key.equals("example.broker")
                ? "tcp://127.0.0.1:61617?connectionTTL=5000" : d);
        assertThat(other.mode()).isEqualTo(BrokerSettings.Mode.CONNECT);
        assertThat(other.url()).isEqualTo("tcp://127.0.0.1:61617?connectionTTL=5000");
        assertThat(other.feed()).isFalse();
        assertThat(other.record()).isFalse();
        assertThat(other.waitMillis()).isEqualTo(30_000);
        assertThat(other.shownWait()).isEqualTo("30s");
        BrokerSettings forEver = BrokerSettings.read((key, d) -> key.equals("example.brokerWait") ? "0" : d);
        assertThat(forEver.waitsForEver()).isTrue();
        assertThat(BrokerSettings.read((key, d) -> key.equals("example.brokerWait") ? "1500ms" : d).shownWait())
                .isEqualTo("1500ms");
        assertThat(BrokerSettings.read((key, d) -> d).mode()).isEqualTo(BrokerSettings.Mode.NONE);
    }

    @Test
    void aPortInUseIsReportedWithTheProperty() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
             CamelContext context = new DefaultCamelContext()) {
            Properties properties = new Properties();
            properties.setProperty("example.proxies", "http://127.0.0.1:9 id=p1");
            properties.setProperty("example.broker", "embedded");
            properties.setProperty("example.brokerPort", String.valueOf(taken.getLocalPort()));
            properties.setProperty("example.outputDir", dir.toString());
            context.getPropertiesComponent().setInitialProperties(properties);
            assertThatIllegalStateException().isThrownBy(() -> new ExampleConfiguration().configure(context))
                    .withMessageContaining("127.0.0.1:" + taken.getLocalPort() + " (example.brokerPort)");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    void urlsFromTheEmbeddedBrokerAreRecordedOnceThroughIt(String dsl) throws Exception {
        int port = freePort();
        try (DemoSite site = new DemoSite(dir, 2, "4/1s", 0, 100, 1000);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, broker(port, "2"))) {
            List<String> urls = scraper.pages(6);
            scraper.scrape(urls);
            // the writer's lines: each URL once, taken at its first delivery, named with this JVM
            ScraperHarness.awaitUntil("six result lines", () -> scraper.results.getReceivedCounter(), n -> n >= 6,
                    Duration.ofSeconds(20));
            List<JsonObject> lines = scraper.results.getExchanges().stream().map(BrokerModeTest::line).toList();
            assertThat(lines).map(l -> l.getString("url")).containsExactlyInAnyOrderElementsOf(urls);
            assertThat(lines).allSatisfy(l -> {
                assertThat(l.getInteger("status")).isEqualTo(200);
                assertThat(l.getInteger("deliveries")).isEqualTo(1);
                assertThat(l.getString("instance")).contains("@");
            });
            assertThat(scraper.dead.getReceivedCounter()).isZero();
            assertThat(site.target().hits()).hasSize(6);

            // a URL that every taker rolls back: the broker gives up after example.brokerDeliveries (2) and the
            // writer turns it into a dead-letter line
            scraper.context.getRouteController().stopRoute(ScraperRoute.ROUTE_ID);
            ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory("tcp://127.0.0.1:" + port
                    + "?consumerWindowSize=0");
            try (JMSContext jms = factory.createContext(JMSContext.SESSION_TRANSACTED)) {
                jms.createProducer().send(jms.createQueue("scraper.urls"), urls.get(0) + "?poison");
                jms.commit();
                try (JMSConsumer taker = jms.createConsumer(jms.createQueue("scraper.urls"))) {
                    for (int delivery = 1; delivery <= 2; delivery++) {
                        assertThat(taker.receiveBody(String.class, 10_000)).as("delivery %d", delivery)
                                .endsWith("?poison");
                        jms.rollback();
                    }
                }
            } finally {
                factory.close();
            }
            ScraperHarness.awaitUntil("the dead-letter line", () -> scraper.dead.getReceivedCounter(), n -> n >= 1,
                    Duration.ofSeconds(20));
            JsonObject dead = line(scraper.dead.getExchanges().get(0));
            assertThat(dead.getString("url")).endsWith("?poison");
            assertThat(dead.getString("reason")).contains("example.brokerDeliveries");
            assertThat(dead.getInteger("deliveries")).isEqualTo(2);
        }
    }

    /**
     * {@code example.maxInFlight} below {@code example.brokerConsumers}: the route's policy suspends the transacted
     * listener (camel-jms stops it) from one of its own threads and resumes it, and every URL is recorded once.
     */
    @Test
    void fewerUrlsInFlightThanListenersSuspendsAndResumesTheTransactedListener() throws Exception {
        int port = freePort();
        Map<String, String> settings = broker(port, "2");
        settings.put("example.brokerConsumers", "4");
        settings.put("example.maxInFlight", "2");
        try (DemoSite site = new DemoSite(dir, 2, "8/1s", 0, 100, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, settings)) {
            // about 4 s at the proxies' 16/s: every listener has joined and holds a waiting URL long before the end,
            // even on a loaded machine where they start one by one
            List<String> urls = scraper.pages(URLS_PAST_THE_BOUND);
            scraper.scrape(urls);
            ScraperHarness.awaitUntil(URLS_PAST_THE_BOUND + " result lines", () -> scraper.results.getReceivedCounter(),
                    n -> n >= URLS_PAST_THE_BOUND, Duration.ofSeconds(60));
            assertThat(scraper.results.getExchanges().stream().map(BrokerModeTest::line).map(l -> l.getString("url")))
                    .containsExactlyInAnyOrderElementsOf(urls);
            TokenBucketBackPressure policy = scraper.context.getRegistry().lookupByNameAndType(
                    ScraperRoute.BACK_PRESSURE, TokenBucketBackPressure.class);
            assertThat(policy.getSuspensions()).as("suspensions of the listener").isPositive();
            assertThat(site.target().hits()).hasSize(URLS_PAST_THE_BOUND);
        }
    }

    private static final int URLS_PAST_THE_BOUND = 64;

    /**
     * A suspension by the back-pressure policy is flow control, not a failure: a URL that a listener has received
     * when the policy holds the listeners (another listener's URL went past {@code example.maxInFlight}) is processed,
     * not rolled back, which would spend one of its {@code example.brokerDeliveries} and, past them, dead-letter it.
     * The listeners' container here is camel-jms's, with one hook: after its first receive the policy holds the
     * listeners, as another listener's exchange would at that instant (a race that a loaded machine loses often).
     */
    @Test
    void aUrlReceivedAsTheBackPressureHoldsTheListenersIsProcessedNotRolledBack() throws Exception {
        int port = freePort();
        Map<String, String> settings = broker(port, "2");
        settings.put("example.brokerConsumers", "2");
        AtomicBoolean held = new AtomicBoolean();
        try (DemoSite site = new DemoSite(dir, 2, "8/1s", 0, 100, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, settings, context -> {
                 // in place of the application's factory (a second bean of that name would not be the one found)
                 context.getRegistry().unbind(CONTAINERS);
                 context.getRegistry().bind(CONTAINERS, (MessageListenerContainerFactory) endpoint ->
                         new DefaultJmsMessageListenerContainer(endpoint) {
                             @Override
                             protected void messageReceived(Object invoker, Session session) {
                                 super.messageReceived(invoker, session);
                                 if (held.compareAndSet(false, true)) {
                                     hold(context);
                                 }
                             }
                         });
             })) {
            scraper.send(scraper.pages(1));
            // processed while the listeners are held; rolled back, it would wait in the broker for their resumption
            ScraperHarness.awaitUntil("the result line of the URL received as the listeners were held",
                    () -> scraper.results.getReceivedCounter(), n -> n >= 1, Duration.ofSeconds(20));
            TokenBucketBackPressure policy = scraper.context.getRegistry().lookupByNameAndType(
                    ScraperRoute.BACK_PRESSURE, TokenBucketBackPressure.class);
            assertThat(policy.getSuspensions()).as("suspensions of the listener").isEqualTo(1);
            assertThat(scraper.results.getExchanges()).map(BrokerModeTest::line)
                    .allSatisfy(l -> assertThat(l.getInteger("deliveries")).as("deliveries of %s", l).isEqualTo(1))
                    .hasSize(1);
            assertThat(scraper.dead.getReceivedCounter()).as("dead letters").isZero();
        }
    }

    /** The registry name of the broker consumers' listener container factory. */
    private static final String CONTAINERS = "brokerListenerContainers";

    /** Holds the scraper route's listeners as its back-pressure policy does past {@code example.maxInFlight}. */
    private static void hold(CamelContext context) {
        try {
            context.getRegistry().lookupByNameAndType(ScraperRoute.BACK_PRESSURE, TokenBucketBackPressure.class)
                    .suspendOrStopConsumer(context.getRoute(ScraperRoute.ROUTE_ID).getConsumer());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void aStoppedBrokerInstanceLeavesNoArtemisThreadBehind() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        int port = freePort();
        try (DemoSite site = new DemoSite(dir, 2, "4/1s", 0, 100, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site, broker(port, "2"))) {
            List<String> urls = scraper.pages(4);
            scraper.scrape(urls);
            ScraperHarness.awaitUntil("four result lines", () -> scraper.results.getReceivedCounter(), n -> n >= 4,
                    Duration.ofSeconds(20));
            assertThat(artemisThreads(before)).as("Artemis threads while it runs").isNotEmpty();
        }
        // the broker, its clients and their thread pools are stopped with the context: nothing of Artemis lingers
        // (exec:java would wait for such threads, then fail to destroy their thread group)
        ScraperHarness.awaitUntil("no Artemis thread left", () -> artemisThreads(before), List::isEmpty,
                Duration.ofSeconds(15));
    }

    @Test
    void anInstanceThatLostItsBrokerEndsAndLeavesNoArtemisThreadBehind() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        int port = freePort();
        Map<String, String> peerSettings = new HashMap<>();
        peerSettings.put("example.broker", "tcp://127.0.0.1:" + port);
        peerSettings.put("example.brokerWait", "1500ms");
        peerSettings.put("example.outputDir", dir.resolve("peer").toString());
        CompletableFuture<Optional<Exception>> ended = new CompletableFuture<>();
        try (DemoSite site = new DemoSite(dir, 2, "4/1s", 0, 100, 1000)) {
            ScraperHarness holder = new ScraperHarness("java", dir, site, broker(port, "2"));
            try (ScraperHarness peer = new ScraperHarness("java", dir, site, peerSettings)) {
                try {
                    peer.context.getRegistry().lookupByNameAndType(BrokerQueue.BEAN, BrokerQueue.class)
                            .watch(peer.context, gone -> ended.complete(Optional.ofNullable(gone)));
                    // the peer takes URLs from the holder's broker
                    peer.context.getRouteController().stopRoute(ScraperRoute.ROUTE_ID);
                    holder.send(holder.pages(2));
                    peer.context.getRouteController().startRoute(ScraperRoute.ROUTE_ID);
                    ScraperHarness.awaitUntil("the two lines", () -> holder.results.getReceivedCounter(),
                            n -> n >= 2, Duration.ofSeconds(20));
                } finally {
                    holder.close();
                }
                // the broker is gone: after example.brokerWait the watch ends the peer, normally (it had reached it)
                assertThat(ended.get(30, TimeUnit.SECONDS)).as("the reason given to the end").isEmpty();
            }
        }
        ScraperHarness.awaitUntil("no Artemis thread left", () -> artemisThreads(before), List::isEmpty,
                Duration.ofSeconds(15));
    }

    @Test
    void anInstanceWhoseBrokerComesBackInTimeGoesOnTakingUrls() throws Exception {
        int port = freePort();
        Map<String, String> peerSettings = new HashMap<>();
        peerSettings.put("example.broker", "tcp://127.0.0.1:" + port);
        peerSettings.put("example.brokerWait", "60s");
        peerSettings.put("example.outputDir", dir.resolve("peer").toString());
        CompletableFuture<Optional<Exception>> ended = new CompletableFuture<>();
        try (DemoSite site = new DemoSite(dir, 2, "4/1s", 0, 100, 1000)) {
            try (ScraperHarness first = new ScraperHarness("java", dir.resolve("first"), site, broker(port, "2"));
                 ScraperHarness peer = new ScraperHarness("java", dir, site, peerSettings)) {
                peer.context.getRegistry().lookupByNameAndType(BrokerQueue.BEAN, BrokerQueue.class)
                        .watch(peer.context, gone -> ended.complete(Optional.ofNullable(gone)));
                first.scrape(first.pages(2));
                first.close();
                // a broker again on the same port, as a restarted one would be: its own scraper route stopped, so
                // the URLs sent to it can only be taken by the peer, once its listeners have reconnected
                Map<String, String> again = broker(port, "2");
                again.put("example.outputDir", dir.resolve("second").toString());
                try (ScraperHarness second = new ScraperHarness("java", dir.resolve("second"), site, again)) {
                    second.context.getRouteController().stopRoute(ScraperRoute.ROUTE_ID);
                    List<String> urls = List.of(site.target().baseUrl() + "/page/3", site.target().baseUrl()
                            + "/page/4");
                    second.send(urls);
                    ScraperHarness.awaitUntil("the peer's two lines at the second broker's writer",
                            () -> second.results.getReceivedCounter(), n -> n >= 2, Duration.ofSeconds(40));
                    assertThat(second.results.getExchanges().stream().map(BrokerModeTest::line)
                            .map(l -> l.getString("url")).toList()).containsExactlyInAnyOrderElementsOf(urls);
                }
                assertThat(ended).as("the peer goes on: its broker came back within example.brokerWait")
                        .isNotDone();
            }
        }
    }

    @Test
    void anInstanceThatNeverReachesItsBrokerEndsWithTheReason() throws Exception {
        int port = freePort();
        Map<String, String> settings = new HashMap<>();
        settings.put("example.broker", "tcp://127.0.0.1:" + port);
        settings.put("example.brokerWait", "1s");
        settings.put("example.outputDir", dir.toString());
        CompletableFuture<Optional<Exception>> ended = new CompletableFuture<>();
        try (DemoSite site = new DemoSite(dir, 1, "4/1s", 0, 100, 1000);
             ScraperHarness peer = new ScraperHarness("java", dir, site, settings)) {
            peer.context.getRegistry().lookupByNameAndType(BrokerQueue.BEAN, BrokerQueue.class)
                    .watch(peer.context, gone -> ended.complete(Optional.ofNullable(gone)));
            assertThat(ended.get(30, TimeUnit.SECONDS)).get().asString()
                    .contains("The broker at tcp://127.0.0.1:" + port + " (example.broker) was not reachable for")
                    .contains("(example.brokerWait=1s): AMQ219007");
        }
    }

    /** Live threads of Artemis (client, server, Netty) that were not there {@code before}: their names. */
    static List<String> artemisThreads(Set<Thread> before) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> !before.contains(t) && t.isAlive())
                .map(Thread::getName).filter(n -> n.toLowerCase(java.util.Locale.ROOT).contains("activemq")
                        || n.toLowerCase(java.util.Locale.ROOT).contains("artemis")).sorted().toList();
    }

    private Map<String, String> broker(int port, String deliveries) {
        Map<String, String> settings = new HashMap<>();
        settings.put("example.broker", "embedded");
        settings.put("example.brokerPort", String.valueOf(port));
        settings.put("example.brokerDeliveries", deliveries);
        settings.put("example.outputDir", dir.toString());
        return settings;
    }

    private static JsonObject line(Exchange exchange) {
        return (JsonObject) Jsoner.deserialize(exchange.getMessage().getBody(String.class), (JsonObject) null);
    }

    private static int freePort() {
        return Ports.free();
    }
}
