package io.tokenbucket.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.netty.util.Version;
import io.tokenbucket.camel.TokenBucketEndpoint;
import io.tokenbucket.camel.TokenBucketStatistics;
import io.tokenbucket.testsupport.net.Ports;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.activemq.artemis.api.core.QueueConfiguration;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.api.core.client.ActiveMQClient;
import org.apache.activemq.artemis.core.config.Configuration;
import org.apache.activemq.artemis.core.config.CoreAddressConfiguration;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.CamelContext;
import org.apache.camel.ConsumerTemplate;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.jms.JmsComponent;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/**
 * The component in an application of the kind an ESB runs, with no version managed by hand: an ActiveMQ Artemis 2.40
 * client and embedded server with the Netty 4.1 they bring, camel-jms, and {@code store=redis} against a real
 * redis-server. Neither this module nor the parent manages Netty, so its Netty is what Maven gives such an
 * application; the component's Lettuce 6 must start and throttle on it. The first test fails when something pins
 * another Netty line here (the line expected is {@code tokenbucket.netty.line}: 4.1, or 4.2 with
 * {@code -Pnetty-4.2}, the same application with Netty 4.2 forced; see this module's pom).
 *
 * <p>The route takes JMS messages from the broker over TCP (Artemis's Netty on both sides), through a bucket of
 * {@value #CAPACITY} at once and {@value #CAPACITY} per second (one token every 200 ms), and sends each on to another
 * queue. Its bound is checked where this machine's noise cannot make a correct bucket fail it: taken right after the
 * throttle, the {@code k}-th admission comes no earlier than the bucket's {@code k}-th token from the first send
 * ({@code k - CAPACITY} refills of 200 ms), and a late wake-up only makes it later. The most admissions in any second
 * are printed, not asserted: a wake-up held up on a loaded machine is let through bunched with the next ones.
 */
class NettyCoexistenceIT {

    private static final int MESSAGES = 15;
    private static final int CAPACITY = 5;
    private static final long PERIOD_MILLIS = 1000;
    private static final long RECEIVE_MILLIS = 30_000;
    private static final Path DIR = Path.of(System.getProperty("basedir", "."), "target", "e2e", "netty");

    @Test
    void theNettyOnTheClassPathIsOneLineTheBrokersByDefault() {
        String line = System.getProperty("tokenbucket.netty.line", "4.1") + ".";
        Map<String, String> netty = new TreeMap<>();
        Version.identify().forEach((artifact, version) -> netty.put(artifact, version.artifactVersion()));
        System.out.println("Netty on the class path: " + netty);
        // Artemis's (codec-http, handler-proxy) and Lettuce's (resolver-dns) are all there
        assertThat(netty).containsKeys("netty-common", "netty-buffer", "netty-transport", "netty-handler",
                "netty-codec-http", "netty-handler-proxy", "netty-resolver-dns");
        assertThat(netty.values()).as("Netty versions %s", netty).allSatisfy(v -> assertThat(v).startsWith(line));
        assertThat(RedisClient.class.getPackage().getImplementationVersion()).as("Lettuce").startsWith("6.");
    }

    @Test
    void aJmsRouteThroughARedisBucketStartsAndHoldsItsBound() throws Exception {
        int port = Ports.free();
        EmbeddedActiveMQ broker = new EmbeddedActiveMQ().setConfiguration(brokerConfiguration(port));
        broker.start();
        ConcurrentLinkedQueue<Long> admitted = new ConcurrentLinkedQueue<>();
        try (RedisHandle redis = RedisServers.standalone();
             ActiveMQConnectionFactory connections = new ActiveMQConnectionFactory("tcp://127.0.0.1:" + port);
             CamelContext camel = new DefaultCamelContext()) {
            assertThat(broker.getActiveMQServer().getVersion().getFullVersion()).startsWith("2.40.");
            camel.addComponent("jms", JmsComponent.jmsComponentAutoAcknowledge(connections));
            // localhost, not the address: Lettuce resolves it with netty-resolver-dns, on the Netty of the class path
            String bucket = "tokenbucket:esb?store=redis&redisUri=redis://localhost:" + redis.port()
                    + "&capacity=" + CAPACITY + "&refillPeriod=" + PERIOD_MILLIS;
            camel.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("jms:queue:tb.in?concurrentConsumers=" + CAPACITY).routeId("esb")
                            .to(bucket)
                            .process(e -> admitted.add(System.nanoTime()))
                            .to("jms:queue:tb.out");
                }
            });
            camel.start();

            ProducerTemplate producer = camel.createProducerTemplate();
            ConsumerTemplate consumer = camel.createConsumerTemplate();
            long began = System.nanoTime();
            Set<String> sent = new TreeSet<>();
            for (int i = 0; i < MESSAGES; i++) {
                sent.add("m" + i);
                producer.sendBody("jms:queue:tb.in", "m" + i);
            }
            Set<String> received = new TreeSet<>();
            List<String> all = new ArrayList<>();
            List<?> keys = List.of();
            for (int i = 0; i < MESSAGES; i++) {
                String body = consumer.receiveBody("jms:queue:tb.out", RECEIVE_MILLIS, String.class);
                assertThat(body).as("message %d of %d from tb.out", i + 1, MESSAGES).isNotNull();
                received.add(body);
                all.add(body);
                if (i == 0) {
                    // while the others still wait for tokens: the bucket is not full, so its key is in Redis (a full
                    // bucket's key expires, a second after the last message here)
                    keys = (List<?>) redis.command("KEYS", "tokenbucket:esb:*");
                }
            }
            assertThat(all).hasSize(MESSAGES);
            assertThat(received).isEqualTo(sent);

            List<Long> times = admitted.stream().sorted().toList();
            long tokenMillis = PERIOD_MILLIS / CAPACITY;
            long lastMillis = TimeUnit.NANOSECONDS.toMillis(times.get(times.size() - 1) - began);
            int busiestSecond = maxInWindow(times, PERIOD_MILLIS);
            System.out.printf("%d messages through the bucket: the last %d ms after the first was sent, at most %d"
                    + " in any second (the bucket's bound %d, more when wake-ups are late)%n", MESSAGES, lastMillis,
                    busiestSecond, CAPACITY + PERIOD_MILLIS / tokenMillis);
            assertThat(times).hasSize(MESSAGES);
            // the k-th admission needs k - CAPACITY refills after the first acquire (itself after `began`); a
            // millisecond less for Redis's clock, read in microseconds; lateness only makes it later
            List<String> early = new ArrayList<>();
            for (int k = CAPACITY + 1; k <= MESSAGES; k++) {
                long since = times.get(k - 1) - began;
                if (since < TimeUnit.MILLISECONDS.toNanos((k - CAPACITY) * tokenMillis - 1)) {
                    early.add(k + ": " + TimeUnit.NANOSECONDS.toMicros(since) + " us");
                }
            }
            assertThat(early).as("admissions ahead of the bucket's schedule from the first send (k-th: time)")
                    .isEmpty();

            TokenBucketStatistics statistics = camel.getEndpoint(bucket, TokenBucketEndpoint.class).getStatistics();
            assertThat(statistics.getAdmitted()).isEqualTo(MESSAGES);
            assertThat(statistics.getDelayed()).isPositive();
            assertThat(statistics.getStoreErrors()).isZero();
            assertThat(keys).as("the bucket's keys in Redis while messages waited").isNotEmpty();
        } finally {
            broker.stop();
            // the client's thread pools are JVM-wide: this JVM runs other tests
            ActiveMQClient.clearThreadPools();
        }
    }

    private static Configuration brokerConfiguration(int port) throws Exception {
        Configuration config = new ConfigurationImpl()
                .setPersistenceEnabled(false)
                .setSecurityEnabled(false)
                .setJMXManagementEnabled(false)
                .addAcceptorConfiguration("esb", "tcp://127.0.0.1:" + port);
        config.setBrokerInstance(DIR.toFile());
        for (String queue : new String[] {"tb.in", "tb.out"}) {
            config.addAddressConfiguration(new CoreAddressConfiguration().setName(queue)
                    .addRoutingType(RoutingType.ANYCAST)
                    .addQueueConfiguration(QueueConfiguration.of(queue).setRoutingType(RoutingType.ANYCAST)));
        }
        return config;
    }

    /** The most of the sorted nanoTimes in any window of {@code windowMillis}, both ends included. */
    private static int maxInWindow(List<Long> sorted, long windowMillis) {
        long window = TimeUnit.MILLISECONDS.toNanos(windowMillis);
        int max = 0;
        int start = 0;
        for (int end = 0; end < sorted.size(); end++) {
            while (sorted.get(end) - sorted.get(start) > window) {
                start++;
            }
            max = Math.max(max, end - start + 1);
        }
        return max;
    }
}
