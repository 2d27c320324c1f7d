package io.tokenbucket.example.broker;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import jakarta.jms.JMSConsumer;
import jakarta.jms.JMSContext;
import jakarta.jms.JMSException;
import jakarta.jms.JMSProducer;
import jakarta.jms.Message;
import jakarta.jms.Queue;

import io.tokenbucket.example.ScraperRoute;
import io.tokenbucket.example.UrlSource;
import io.tokenbucket.example.fetch.TargetUrl;
import org.apache.activemq.artemis.api.core.management.ResourceNames;
import org.apache.activemq.artemis.api.jms.management.JMSManagementHelper;
import org.apache.activemq.artemis.core.remoting.impl.netty.SharedEventLoopGroup;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.Route;
import org.apache.camel.builder.PredicateBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.component.jms.JmsComponent;
import org.apache.camel.component.jms.JmsMessage;
import org.apache.camel.spi.PropertiesComponent;
import org.apache.camel.support.RoutePolicySupport;
import org.apache.camel.support.service.ServiceSupport;
import org.apache.camel.util.json.Jsoner;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Broker mode ({@code example.broker}): the URL queue is an ActiveMQ Artemis queue that several instances share,
 * through camel-jms. One instance starts the broker ({@code embedded}: {@link EmbeddedBroker}), the others connect
 * ({@code tcp://host:port}); every instance consumes; the instance told to ({@code example.brokerFeed}) sends
 * {@code example.urlFile} to the queue, and one ({@code example.brokerRecord}) writes every instance's lines.
 *
 * <p>How a URL is taken once and recorded exactly once:
 * <ul>
 *   <li>The scraper route reads the queue in a transacted JMS session ({@code transacted=true}, a local transaction
 *       of the listener's own session, no transaction manager). camel-jms then processes the exchange to its end
 *       before the listener commits, on the listener's thread, so the URL is acknowledged only when its route is
 *       done; an exchange that fails rolls back and the URL is delivered again.</li>
 *   <li>The route's result and dead-letter endpoints are {@link BrokerRecord}: the line is sent to
 *       {@code <queue>.results} or {@code <queue>.dead} on that same session, so in that same transaction. If the
 *       instance dies before the commit, the broker sees its connection close: the URL goes back to the queue (its
 *       delivery count one up) and the line it had sent is dropped with the transaction. After the commit, both are
 *       done. No window: the line and the acknowledgement are one commit. (Duplicate detection on the URL would add
 *       nothing here, and would drop a URL fed again on purpose.)</li>
 *   <li>One writer, the recording instance, reads those two queues (one transacted consumer each) and appends each
 *       line to {@code example.results} / {@code example.deadLetter}, committing after the append. If it dies
 *       between the append and the commit, a persistent external broker hands it that line again, marked
 *       redelivered; the line then equals the end of its file and is not appended again ({@link AlreadyWritten}).
 *       That check needs a {@code file:} endpoint: with any other, a line may be written twice after a writer's
 *       crash. With the embedded broker the queue dies with the writer, so it cannot happen there (but the lines not
 *       yet written are lost with it: see {@link EmbeddedBroker}).</li>
 *   <li>A URL delivered {@code example.brokerDeliveries} times without a commit (every instance that took it died or
 *       failed) is moved by the broker to {@code <queue>.undelivered}; the writer turns it into a dead-letter
 *       line.</li>
 * </ul>
 *
 * <p>Bounds: each instance takes at most {@code example.brokerConsumers} URLs at once and prefetches none
 * ({@code consumerWindowSize=0}: a URL stays in the queue, for any instance, until a consumer is free), and each
 * queue of the embedded broker is bounded ({@link EmbeddedBroker#MAX_QUEUE_BYTES}).
 *
 * <p>How an instance ends: the one that feeds and records ends once every URL it fed has its line; one that connects
 * to another's broker ends once that broker has been unreachable for {@code example.brokerWait} ({@link BrokerWatch}:
 * with the embedded broker, that is how the other instances end after the run); any other runs until stopped. As a
 * Camel service it closes its connection factory when Camel stops, and with it the client's thread pools (its own,
 * not Artemis's JVM-wide ones: {@code useGlobalPools=false}) and, the last one of the JVM, the client's shared Netty
 * threads, so that a finished run leaves no thread behind.
 */
public final class BrokerQueue extends ServiceSupport {

    /** The registry name of this instance's broker queue (absent without broker mode). */
    public static final String BEAN = "brokerQueue";
    /** Exchange property: the JMS session that took the URL ({@link BrokerRecord} sends its line on it). */
    static final String SESSION = "scrapeJmsSession";
    /** Exchange property: how often the broker has delivered the URL (JMSXDeliveryCount, 1 the first time). */
    static final String DELIVERIES = "scrapeDeliveries";
    /** The registry name of the result line sender, which {@code example.results} names in broker mode. */
    static final String RESULT_BEAN = "brokerResult";
    /** The registry name of the dead-letter line sender, which {@code example.deadLetter} names in broker mode. */
    static final String DEAD_LETTER_BEAN = "brokerDeadLetter";

    /** Artemis's management address (its default {@code management-address}). */
    private static final String MANAGEMENT_ADDRESS = "activemq.management";

    private static final Logger LOG = LoggerFactory.getLogger(BrokerQueue.class);
    /** Broker queues of this JVM started and not yet stopped (tests run several). */
    private static final AtomicInteger OPEN = new AtomicInteger();

    private final BrokerSettings settings;
    private final ActiveMQConnectionFactory factory;
    private final String instance = ManagementFactory.getRuntimeMXBean().getName();
    private final AtomicLong recorded = new AtomicLong();
    private final AtomicLong recordedResults = new AtomicLong();
    private final AtomicBoolean allRecorded = new AtomicBoolean();
    private volatile long expected = Long.MAX_VALUE;
    private volatile Runnable whenAllRecorded = () -> { };

    private BrokerQueue(BrokerSettings settings) {
        this.settings = settings;
        String url = settings.url();
        // no prefetch: the broker hands a URL to a consumer that asks for one, so an instance does not hoard the queue
        url = withParameter(url, "consumerWindowSize", "0");
        // the client's thread pools belong to this factory and end with it: the JVM-wide ones are never shut down
        this.factory = new ActiveMQConnectionFactory(withParameter(url, "useGlobalPools", "false"));
    }

    private static String withParameter(String url, String name, String value) {
        return url.contains(name + "=") ? url : url + (url.contains("?") ? "&" : "?") + name + "=" + value;
    }

    /**
     * Sets broker mode up on a context that is not started yet: starts the embedded broker (mode embedded), binds
     * the {@code jms} component to it, points {@code example.queue}, {@code example.results} and
     * {@code example.deadLetter} at the broker (the writer keeps the configured two), and adds the writer's routes
     * when this instance records.
     *
     * @param context   the scraper's context, before its routes are added
     * @param settings  broker mode's settings; mode not {@link BrokerSettings.Mode#NONE}
     * @param outputDir the output folder (the embedded broker's instance folder goes in it)
     * @return the queue, also bound as {@value #BEAN}
     */
    public static BrokerQueue install(CamelContext context, BrokerSettings settings, Path outputDir) throws Exception {
        if (settings.mode() == BrokerSettings.Mode.EMBEDDED) {
            EmbeddedBroker broker = new EmbeddedBroker(settings, outputDir.resolve("broker"));
            // now, not with the context's services: the routes' consumers connect as they start
            broker.start();
            context.addService(broker);
        }
        BrokerQueue queue = new BrokerQueue(settings);
        // added after the broker, so stopped before it: the clients go first
        context.addService(queue);
        context.getRegistry().bind(BrokerWatch.CONTAINERS_BEAN, BrokerWatch.listenerContainers());
        JmsComponent jms = new JmsComponent();
        jms.setConnectionFactory(queue.factory);
        context.addComponent("jms", jms);

        PropertiesComponent properties = context.getPropertiesComponent();
        String results = context.resolvePropertyPlaceholders("{{example.results}}");
        String deadLetter = context.resolvePropertyPlaceholders("{{example.deadLetter}}");
        properties.addOverrideProperty("example.queue", consumer(settings.queue(), settings.consumers()));
        properties.addOverrideProperty("example.results", "bean:" + RESULT_BEAN);
        properties.addOverrideProperty("example.deadLetter", "bean:" + DEAD_LETTER_BEAN);
        context.getRegistry().bind(RESULT_BEAN, new BrokerRecord(settings.resultsQueue(), queue.instance));
        context.getRegistry().bind(DEAD_LETTER_BEAN, new BrokerRecord(settings.deadLetterQueue(), queue.instance));
        context.addRoutePolicyFactory((ctx, routeId, route) -> ScraperRoute.ROUTE_ID.equals(routeId)
                ? new TakeSession() : null);
        if (settings.record()) {
            context.addRoutes(queue.writer(results, deadLetter));
        }
        context.getRegistry().bind(BEAN, queue);
        LOG.info("Broker mode: {} at {}, queue {} ({} consumers), {}{}", settings.mode() == BrokerSettings.Mode.EMBEDDED
                ? "embedded broker" : "broker", withoutQuery(settings.url()), settings.queue(), settings.consumers(),
                settings.feed() ? "feeding it, " : "", settings.record() ? "writing every instance's lines"
                        : "lines written by the recording instance");
        return queue;
    }

    private static String withoutQuery(String url) {
        int query = url.indexOf('?');
        return query < 0 ? url : url.substring(0, query);
    }

    /** A transacted camel-jms consumer of {@code queue} with {@code consumers} listeners. */
    static String consumer(String queue, int consumers) {
        // camel-jms's listener container with a backoff between reconnections (BrokerWatch); recoveryInterval=-1 keeps
        // camel-jms from replacing that backoff with a fixed interval. acceptMessagesWhileStopping: the back-pressure
        // policy suspends the listeners by stopping their container, and a URL another listener has just received would
        // otherwise be rolled back, spending one of its example.brokerDeliveries as a failure does (and, past them,
        // dead-lettered)
        return "jms:queue:" + queue + "?transacted=true&lazyCreateTransactionManager=false&concurrentConsumers="
                + consumers + "&maxConcurrentConsumers=" + consumers + "&consumerType=Custom"
                + "&messageListenerContainerFactory=#" + BrokerWatch.CONTAINERS_BEAN + "&recoveryInterval=-1"
                + "&acceptMessagesWhileStopping=true";
    }

    /**
     * Starts watching the broker when this instance connects to another's ({@link BrokerWatch}); does nothing when it
     * holds the broker itself.
     *
     * @param context the started context
     * @param end     ends the instance: with null once a broker it had reached has been unreachable for
     *                {@code example.brokerWait}, with the reason when it never reached it
     */
    public void watch(CamelContext context, Consumer<Exception> end) throws Exception {
        if (settings.mode() == BrokerSettings.Mode.CONNECT) {
            context.addService(new BrokerWatch(context, settings, factory, withoutQuery(settings.url()), end), true,
                    true);
        }
    }

    /**
     * Sends {@code example.urlFile} to the queue when this instance feeds it (else does nothing); when it also
     * records, runs {@code whenAllRecorded} once every URL sent has its line written.
     *
     * @param context         the started context
     * @param whenAllRecorded what ends the run (Camel Main's completion)
     * @return how many URLs were sent
     */
    public int feed(CamelContext context, Runnable whenAllRecorded) throws Exception {
        if (!settings.feed()) {
            LOG.info("URLs come from broker queue {} at {}; this instance takes them {}", settings.queue(),
                    withoutQuery(settings.url()), untilWhen());
            return 0;
        }
        String location = context.resolvePropertyPlaceholders("{{example.urlFile}}");
        List<String> urls = UrlSource.read(context, location);
        LOG.info("Sending {} URLs from {} to broker queue {}; {}", urls.size(), location, settings.queue(),
                settings.record() ? "this instance ends once each has its result or dead-letter line"
                        : "the recording instance writes their lines, this instance takes URLs " + untilWhen());
        try (JMSContext jms = factory.createContext(JMSContext.SESSION_TRANSACTED)) {
            Queue queue = jms.createQueue(settings.queue());
            JMSProducer producer = jms.createProducer();
            int sent = 0;
            for (String url : urls) {
                producer.send(queue, url);
                if (++sent % 100 == 0) {
                    jms.commit();
                }
            }
            jms.commit();
        }
        if (settings.record()) {
            this.whenAllRecorded = whenAllRecorded;
            expected = urls.size();
            checkAllRecorded();
        }
        return urls.size();
    }

    /** How an instance that does not end with the lines of its own feed ends, as its start-up line says it. */
    private String untilWhen() {
        if (settings.mode() != BrokerSettings.Mode.CONNECT || settings.waitsForEver()) {
            return "until it is stopped";
        }
        return "until it is stopped or the broker has been unreachable for " + settings.shownWait()
                + " (example.brokerWait)";
    }

    @Override
    protected void doStart() {
        OPEN.incrementAndGet();
    }

    /**
     * Closes the connection factory, and with it the client's thread pools; the last broker queue of the JVM to stop
     * also shuts down the client's Netty threads, which Artemis shares among every connection of the JVM.
     */
    @Override
    protected void doStop() {
        factory.close();
        if (OPEN.decrementAndGet() == 0) {
            // Artemis shuts them down 10 s after the last connector has closed, and never while one is left open: a
            // connection attempt cut short by a broker shutting down leaves one (a connector of its own per connection,
            // useNioGlobalWorkerPool=false, would then leave a non-daemon thread that keeps the JVM alive)
            SharedEventLoopGroup.forceShutdown();
        }
    }

    /**
     * The URLs left in the queue now, as the broker counts them (waiting, or taken and not yet committed), asked of
     * the broker's management address; -1 when the broker does not answer within {@code timeoutMillis}.
     */
    public long urlsLeft(long timeoutMillis) {
        try (JMSContext jms = factory.createContext(JMSContext.AUTO_ACKNOWLEDGE)) {
            Queue replies = jms.createTemporaryQueue();
            Message ask = jms.createMessage();
            JMSManagementHelper.putAttribute(ask, ResourceNames.QUEUE + settings.queue(), "messageCount");
            ask.setJMSReplyTo(replies);
            try (JMSConsumer answers = jms.createConsumer(replies)) {
                jms.createProducer().send(jms.createQueue(MANAGEMENT_ADDRESS), ask);
                Message answer = answers.receive(timeoutMillis);
                if (answer == null || !JMSManagementHelper.hasOperationSucceeded(answer)) {
                    return -1;
                }
                return ((Number) JMSManagementHelper.getResult(answer)).longValue();
            }
        } catch (Exception e) {
            LOG.debug("No queue depth from the broker: {}", e.toString());
            return -1;
        }
    }

    /** Lines this instance has written (as the recording instance). */
    public long recorded() {
        return recorded.get();
    }

    /** Of {@link #recorded()}, the result lines; the rest are dead-letter lines. */
    public long recordedResults() {
        return recordedResults.get();
    }

    /** The settings it runs with. */
    public BrokerSettings settings() {
        return settings;
    }

    private void checkAllRecorded() {
        if (recorded.get() >= expected && allRecorded.compareAndSet(false, true)) {
            whenAllRecorded.run();
        }
    }

    private void written(boolean result) {
        if (result) {
            recordedResults.incrementAndGet();
        }
        recorded.incrementAndGet();
        checkAllRecorded();
    }

    /** The one writer's routes: the two line queues to the configured endpoints, undelivered URLs to dead letters. */
    private RouteBuilder writer(String results, String deadLetter) {
        BrokerRecord dead = new BrokerRecord(settings.deadLetterQueue(), instance);
        return new RouteBuilder() {
            @Override
            public void configure() {
                // a redelivered line already at the end of its file was written before a crash: not again
                from(consumer(settings.resultsQueue(), 1)).routeId("broker-results")
                    .filter(PredicateBuilder.not(new AlreadyWritten(results)))
                        .to(results)
                    .end()
                    .process(exchange -> written(true));
                from(consumer(settings.deadLetterQueue(), 1)).routeId("broker-dead-letters")
                    .filter(PredicateBuilder.not(new AlreadyWritten(deadLetter)))
                        .to(deadLetter)
                    .end()
                    .process(exchange -> written(false));
                // the broker gave up on these: a dead-letter line, sent in the same transaction as their removal
                from(consumer(settings.undeliveredQueue(), 1)).routeId("broker-undelivered")
                    .process(BrokerQueue.this::undeliveredLine)
                    .process(dead);
            }
        };
    }

    private void undeliveredLine(Exchange exchange) {
        String url = String.valueOf(exchange.getMessage().getBody(String.class));
        Map<String, Object> line = new LinkedHashMap<>();
        // shown as the scraper shows a URL: a refused one (too long, a password in it) shortened or masked
        try {
            line.put("url", TargetUrl.parse(url).given());
        } catch (TargetUrl.Refused refused) {
            line.put("url", refused.shown());
        }
        line.put("reason", "delivered by the broker as often as it allows (example.brokerDeliveries) without an"
                + " outcome: the instances that took it died, or their route failed");
        line.put("attempts", 0);
        exchange.setProperty(DELIVERIES, settings.deliveries());
        exchange.getMessage().setBody(Jsoner.serialize(line));
    }

    /** Puts the JMS session and the delivery count of the URL taken on the exchange as it begins. */
    private static final class TakeSession extends RoutePolicySupport {
        @Override
        public void onExchangeBegin(Route route, Exchange exchange) {
            if (exchange.getIn() instanceof JmsMessage in && in.getJmsSession() != null) {
                exchange.setProperty(SESSION, in.getJmsSession());
                try {
                    exchange.setProperty(DELIVERIES, in.getJmsMessage().getIntProperty("JMSXDeliveryCount"));
                } catch (JMSException | NumberFormatException e) {
                    exchange.setProperty(DELIVERIES, 1);
                }
            }
        }
    }
}
