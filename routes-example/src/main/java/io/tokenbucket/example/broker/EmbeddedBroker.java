package io.tokenbucket.example.broker;

import java.nio.file.Path;

import org.apache.activemq.artemis.api.core.QueueConfiguration;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.api.core.SimpleString;
import org.apache.activemq.artemis.core.config.Configuration;
import org.apache.activemq.artemis.core.config.CoreAddressConfiguration;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.remoting.server.RemotingService;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.core.settings.impl.AddressFullMessagePolicy;
import org.apache.activemq.artemis.core.settings.impl.AddressSettings;
import org.apache.activemq.artemis.spi.core.protocol.RemotingConnection;
import org.apache.camel.support.service.ServiceSupport;

/**
 * The ActiveMQ Artemis broker that an instance with {@code example.broker=embedded} starts in its own JVM, listening
 * on {@code 127.0.0.1:example.brokerPort} only, for the instances of one machine (there is no security on it: it is
 * not meant to be reached from a network).
 *
 * <p>In memory, no journal: the broker lives as long as its instance. The death of any other instance loses nothing
 * (its unacknowledged URLs go back to the queue); the death of this one loses the queue. A journal would survive only
 * a restart of this same instance, and would hand a new demo run the last run's URLs; a fleet that must survive the
 * broker's host points every instance at a standalone, persistent Artemis ({@code example.broker=tcp://...}).
 *
 * <p>Four anycast queues, each bounded ({@value #MAX_QUEUE_BYTES} bytes, then a sender blocks until consumers have
 * made room, so a large URL file cannot fill the heap): the URLs (delivered at most {@code example.brokerDeliveries}
 * times, then moved to the undelivered queue, one second between redeliveries), the result lines, the dead-letter
 * lines (both redelivered to their writer until it has written them) and the undelivered URLs.
 */
final class EmbeddedBroker extends ServiceSupport {

    /** The most bytes of messages each of the broker's queues holds before senders block. */
    static final long MAX_QUEUE_BYTES = 32L * 1024 * 1024;
    /** Between two deliveries of a message whose taker rolled back (not one that died: that one is at once). */
    static final long REDELIVERY_DELAY_MILLIS = 1000;

    private final BrokerSettings settings;
    private final Path dir;
    private EmbeddedActiveMQ broker;

    /**
     * @param settings the port, the queue names and the delivery limit
     * @param dir      the broker's instance folder (nothing is persisted; Artemis wants one for its paging files)
     */
    EmbeddedBroker(BrokerSettings settings, Path dir) {
        this.settings = settings;
        this.dir = dir;
    }

    @Override
    protected void doStart() throws Exception {
        Configuration config = new ConfigurationImpl()
                .setPersistenceEnabled(false)
                .setSecurityEnabled(false)
                .setJMXManagementEnabled(false)
                .addAcceptorConfiguration("scraper", "tcp://127.0.0.1:" + settings.port());
        config.setBrokerInstance(dir.toFile());
        SimpleString undelivered = SimpleString.of(settings.undeliveredQueue());
        config.addAddressSetting(settings.queue(), bounded().setMaxDeliveryAttempts(settings.deliveries())
                .setDeadLetterAddress(undelivered));
        // a result or dead-letter line is never dropped: redelivered to its writer until written
        config.addAddressSetting(settings.resultsQueue(), bounded().setMaxDeliveryAttempts(-1));
        config.addAddressSetting(settings.deadLetterQueue(), bounded().setMaxDeliveryAttempts(-1));
        config.addAddressSetting(settings.undeliveredQueue(), bounded().setMaxDeliveryAttempts(-1));
        for (String queue : new String[] {settings.queue(), settings.resultsQueue(), settings.deadLetterQueue(),
                settings.undeliveredQueue()}) {
            config.addAddressConfiguration(new CoreAddressConfiguration().setName(queue)
                    .addRoutingType(RoutingType.ANYCAST)
                    .addQueueConfiguration(QueueConfiguration.of(queue).setRoutingType(RoutingType.ANYCAST)));
        }
        broker = new EmbeddedActiveMQ().setConfiguration(config);
        try {
            broker.start();
        } catch (Exception e) {
            stopQuietly();
            throw new IllegalStateException("The embedded broker (example.broker=embedded) cannot listen on 127.0.0.1:"
                    + settings.port() + " (example.brokerPort): " + e.getMessage(), e);
        }
        if (!broker.getActiveMQServer().isActive()) {
            stopQuietly();
            throw new IllegalStateException("The embedded broker (example.broker=embedded) did not start on"
                    + " 127.0.0.1:" + settings.port() + " (example.brokerPort): is the port in use?");
        }
    }

    /** After a failed start: its threads must not keep the JVM alive. */
    private void stopQuietly() {
        try {
            broker.stop();
        } catch (Exception e) {
            // the start's own failure is the one reported
        }
    }

    private static AddressSettings bounded() {
        return new AddressSettings().setMaxSizeBytes(MAX_QUEUE_BYTES)
                .setAddressFullMessagePolicy(AddressFullMessagePolicy.BLOCK)
                .setRedeliveryDelay(REDELIVERY_DELAY_MILLIS)
                .setAutoCreateQueues(false).setAutoCreateAddresses(false);
    }

    @Override
    protected void doStop() throws Exception {
        if (broker != null) {
            // Another instance may still open a session (its listeners end later): Artemis refuses one that comes
            // while it stops with an ERROR and a stack trace of its own. Refuse new connections first and close
            // the open ones: that instance then sees the broker gone, as it expects at the end of a run.
            RemotingService remoting = broker.getActiveMQServer().getRemotingService();
            remoting.pauseAcceptors();
            for (RemotingConnection connection : remoting.getConnections()) {
                connection.disconnect(false);
            }
            broker.stop();
            broker = null;
        }
    }
}
