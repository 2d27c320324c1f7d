package io.tokenbucket.example;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.camel.TokenBucketBackPressure;
import io.tokenbucket.camel.TokenBucketEndpoint;
import jakarta.jms.JMSContext;
import jakarta.jms.Queue;
import org.apache.activemq.artemis.api.core.QueueConfiguration;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.core.config.Configuration;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.CamelContext;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.jms.JmsComponent;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link TokenBucketBackPressure} on a real ActiveMQ Artemis queue, consumed by camel-jms: with the policy the
 * backlog stays in the broker (its message count, read from the broker) and few exchanges wait in the JVM (read
 * from the endpoint); without it, the listener takes the whole queue into the heap.
 */
class BackPressureBrokerTest {

    private static final int MESSAGES = 600;
    private static final String THROTTLE = "tokenbucket:fetch?capacity=10&refillAmount=200&refillPeriod=1s";

    @TempDir
    Path dir;

    /** The most exchanges waiting at the endpoint, the messages left in the broker when half were fetched. */
    private record Run(long mostWaiting, long leftWhenHalfFetched, long suspensions) {
    }

    private Run run(TokenBucketBackPressure policy) throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        Configuration config = new ConfigurationImpl().setPersistenceEnabled(false).setSecurityEnabled(false)
                .setJMXManagementEnabled(false).addAcceptorConfiguration("test", "tcp://127.0.0.1:" + port);
        config.setBrokerInstance(Files.createTempDirectory(dir, "broker").toFile());
        config.addQueueConfiguration(QueueConfiguration.of("urls").setRoutingType(RoutingType.ANYCAST));
        EmbeddedActiveMQ broker = new EmbeddedActiveMQ().setConfiguration(config);
        broker.start();
        ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory("tcp://127.0.0.1:" + port);
        try (CamelContext context = new DefaultCamelContext()) {
            context.addComponent("jms", JmsComponent.jmsComponent(factory));
            context.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    // asyncConsumer: the listener hands each message on and takes the next while it waits;
                    // receiveTimeout: a stopped listener (suspended) notices its restart within it (1 s by default)
                    var route = from("jms:queue:urls?asyncConsumer=true&receiveTimeout=50").routeId("urls");
                    if (policy != null) {
                        route.routePolicy(policy);
                    }
                    route.to(THROTTLE).to("mock:fetched");
                }
            });
            try (JMSContext jms = factory.createContext()) {
                Queue urls = jms.createQueue("urls");
                for (int i = 0; i < MESSAGES; i++) {
                    jms.createProducer().send(urls, "url " + i);
                }
            }
            var queue = broker.getActiveMQServer().locateQueue("urls");
            MockEndpoint fetched = context.getEndpoint("mock:fetched", MockEndpoint.class);
            fetched.expectedMessageCount(MESSAGES);
            context.start();
            TokenBucketEndpoint throttle = context.getEndpoint(THROTTLE, TokenBucketEndpoint.class);
            AtomicLong mostWaiting = new AtomicLong();
            AtomicLong leftWhenHalf = new AtomicLong(-1);
            Thread sampler = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    mostWaiting.accumulateAndGet(throttle.getWaitingCount(), Math::max);
                    if (leftWhenHalf.get() < 0 && fetched.getReceivedCounter() >= MESSAGES / 2) {
                        leftWhenHalf.set(queue.getMessageCount());
                    }
                    java.util.concurrent.locks.LockSupport.parkNanos(200_000);
                }
            });
            sampler.start();
            try {
                fetched.assertIsSatisfied(TimeUnit.SECONDS.toMillis(60));
            } finally {
                sampler.interrupt();
                sampler.join();
            }
            Run run = new Run(mostWaiting.get(), leftWhenHalf.get(),
                    policy == null ? 0 : policy.getSuspensions());
            System.out.printf("back-pressure on Artemis %s: %s%n", policy == null ? "off"
                    : policy.getMaxInflightExchanges() + "/" + policy.getResumePercentOfMax() + "%", run);
            return run;
        } finally {
            factory.close();
            broker.stop();
        }
    }

    @Test
    void theBacklogStaysInTheBrokerWhileFewExchangesWaitInTheJvm() throws Exception {
        Run without = run(null);
        TokenBucketBackPressure policy = new TokenBucketBackPressure(50);
        policy.setResumePercentOfMax(20);
        Run with = run(policy);

        assertThat(without.mostWaiting()).as("most waiting without the policy").isGreaterThan(MESSAGES / 2);
        assertThat(without.leftWhenHalfFetched()).as("in the broker when half were fetched, without").isZero();
        // the listener's one consumer thread: at most one exchange passes the mark before it is suspended
        assertThat(with.mostWaiting()).as("most waiting with maxInflightExchanges 50").isBetween(25L, 51L);
        assertThat(with.leftWhenHalfFetched()).as("in the broker when half were fetched, with the policy")
                .isGreaterThan(MESSAGES / 4);
        assertThat(with.suspensions()).as("suspensions").isPositive();
    }
}
