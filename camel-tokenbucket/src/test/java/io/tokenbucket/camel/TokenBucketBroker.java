package io.tokenbucket.camel;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageProducer;
import jakarta.jms.QueueBrowser;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import org.apache.activemq.artemis.api.core.SimpleString;
import org.apache.activemq.artemis.core.config.Configuration;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.Queue;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.core.settings.impl.AddressSettings;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.CamelContext;
import org.apache.camel.component.jms.JmsComponent;

/**
 * A real ActiveMQ Artemis broker embedded in the test's JVM, reached through its in-VM connector only: no port, no
 * journal, no security. Queues are created on first use. It sends and browses with plain JMS, so a test checks what
 * a queue really holds, not what a route says it sent.
 */
final class TokenBucketBroker implements AutoCloseable {

    private static final AtomicInteger IDS = new AtomicInteger();

    private final int id = IDS.incrementAndGet();
    private final Path dir;
    private final EmbeddedActiveMQ broker;
    private final ActiveMQConnectionFactory connectionFactory;

    private TokenBucketBroker() throws Exception {
        dir = Files.createTempDirectory("tokenbucket-artemis");
        Configuration config = new ConfigurationImpl()
                .setPersistenceEnabled(false)
                .setSecurityEnabled(false)
                .setJMXManagementEnabled(false)
                .addAcceptorConfiguration("in-vm", "vm://" + id);
        config.setBrokerInstance(dir.toFile());
        // where a message goes after its last delivery or its expiry (none in these tests); Artemis warns without
        config.addAddressSetting("#", new AddressSettings().setDeadLetterAddress(SimpleString.of("DLQ"))
                .setExpiryAddress(SimpleString.of("ExpiryQueue")));
        broker = new EmbeddedActiveMQ().setConfiguration(config);
        broker.start();
        // no prefetch: a listener that starts first would otherwise buffer the whole queue, and the tests' several
        // listeners (transactions, back-pressure) would see one of them take every message
        connectionFactory = new ActiveMQConnectionFactory("vm://" + id + "?consumerWindowSize=0");
    }

    /** Starts a broker of its own. */
    static TokenBucketBroker start() throws Exception {
        return new TokenBucketBroker();
    }

    /** A JMS connection factory for this broker. */
    ConnectionFactory connectionFactory() {
        return connectionFactory;
    }

    /** Adds camel-jms to {@code context} as component {@code jms}, on this broker. */
    JmsComponent addJms(CamelContext context) {
        JmsComponent jms = JmsComponent.jmsComponent(connectionFactory);
        context.addComponent("jms", jms);
        return jms;
    }

    /** Sends a text message {@code body} to {@code queue}, with {@code properties} as JMS properties (text). */
    void send(String queue, String body, Map<String, String> properties) throws JMSException {
        try (Connection connection = connectionFactory.createConnection();
             Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            MessageProducer producer = session.createProducer(session.createQueue(queue));
            TextMessage message = session.createTextMessage(body);
            for (Map.Entry<String, String> property : properties.entrySet()) {
                message.setStringProperty(property.getKey(), property.getValue());
            }
            producer.send(message);
        }
    }

    /** The bodies of the messages {@code queue} holds now, in queue order, leaving them there. */
    List<String> browse(String queue) throws JMSException {
        try (Connection connection = connectionFactory.createConnection();
             Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            connection.start();
            QueueBrowser browser = session.createBrowser(session.createQueue(queue));
            List<String> bodies = new ArrayList<>();
            for (Enumeration<?> e = browser.getEnumeration(); e.hasMoreElements(); ) {
                bodies.add(((Message) e.nextElement()).getBody(String.class));
            }
            return bodies;
        }
    }

    /**
     * The messages {@code queue} holds, delivered to a consumer but not acknowledged included (a transaction still
     * open counts its message); 0 for a queue not created yet.
     */
    long messageCount(String queue) {
        Queue q = broker.getActiveMQServer().locateQueue(SimpleString.of(queue));
        return q == null ? 0 : q.getMessageCount();
    }

    @Override
    public void close() throws Exception {
        connectionFactory.close();
        broker.stop();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // a temporary folder left behind harms nothing
        }
    }
}
