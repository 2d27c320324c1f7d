package io.tokenbucket.example.broker;

import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.ExceptionListener;
import jakarta.jms.JMSException;

import org.apache.activemq.artemis.api.core.ActiveMQException;
import org.apache.camel.CamelContext;
import org.apache.camel.component.jms.DefaultJmsMessageListenerContainer;
import org.apache.camel.component.jms.JmsEndpoint;
import org.apache.camel.component.jms.MessageListenerContainerFactory;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jms.listener.AbstractMessageListenerContainer;
import org.springframework.util.backoff.ExponentialBackOff;

/**
 * How an instance that connects to another's broker ({@code example.broker=tcp://...}) meets the broker's absence:
 * when it is not there at start, or goes away (its instance ended, or died), or comes back.
 *
 * <p>What the operator sees: one line per change of state, never one per attempt. A WARN line when the broker is not
 * reachable at start or is lost (with the broker's reason, e.g. {@code AMQ219015} for a broker that shut down), an
 * INFO line when it is reachable again, and, once it has been unreachable for {@code example.brokerWait} (30 s by
 * default; 0: for ever), an INFO line saying that the instance ends, and the instance ends: Camel Main completes, the
 * summary is printed. An instance that never reached its broker ends as a failed run ({@link BrokerUnreachable}, one
 * line naming both settings, exit code {@value BrokerUnreachable#EXIT_CODE}); one that lost it ends normally, since with the embedded broker the broker goes away when the instance
 * holding it has finished the run. The URLs the instance held and had not committed go back to the queue of a broker
 * that survives, for another instance.
 *
 * <p>How: the watch holds one JMS connection of its own, whose exception listener tells it at once that the broker
 * is gone, and while it is, tries a new one after {@value #FIRST_RETRY_MILLIS} ms, doubling up to
 * {@value #MAX_RETRY_MILLIS} ms. The URL consumers reconnect on their own with the same backoff
 * ({@link #listenerContainers()}); Spring's line per failed attempt of theirs is left out of the log (the example's
 * {@code simplelogger.properties}), this watch says it once instead.
 */
final class BrokerWatch extends ServiceSupport implements ExceptionListener {

    /** The registry name of the URL consumers' container factory ({@link #listenerContainers()}). */
    static final String CONTAINERS_BEAN = "brokerListenerContainers";
    /** The first wait before trying the broker again, in milliseconds. */
    static final long FIRST_RETRY_MILLIS = 1000;
    /** The longest wait between two tries, in milliseconds. */
    static final long MAX_RETRY_MILLIS = 10_000;

    private static final Logger LOG = LoggerFactory.getLogger(BrokerWatch.class);

    private final CamelContext context;
    private final BrokerSettings settings;
    private final ConnectionFactory factory;
    private final String shownUrl;
    private final Consumer<Exception> end;
    private ScheduledExecutorService timer;
    private volatile Connection connection;
    // the fields below are only touched on the timer's one thread
    private long unreachableSince = -1;
    private long nextRetryMillis = FIRST_RETRY_MILLIS;
    private boolean reachedOnce;
    private String lastReason = "";

    /**
     * @param context  the scraper's context (its executor service manager runs the watch's timer)
     * @param settings broker mode's settings; mode {@link BrokerSettings.Mode#CONNECT}
     * @param factory  the factory every JMS connection of this instance comes from
     * @param shownUrl the broker's URL as logs show it
     * @param end      ends the instance: called once, with null when the broker was lost after the instance had
     *                 reached it, with the reason when it never did
     */
    BrokerWatch(CamelContext context, BrokerSettings settings, ConnectionFactory factory, String shownUrl,
                Consumer<Exception> end) {
        this.context = context;
        this.settings = settings;
        this.factory = factory;
        this.shownUrl = shownUrl;
        this.end = end;
    }

    /**
     * The URL consumers' listener containers: camel-jms's own, with a backoff between reconnection attempts of
     * {@value #FIRST_RETRY_MILLIS} ms doubling up to {@value #MAX_RETRY_MILLIS} ms instead of a fixed interval (the
     * consumer's {@code recoveryInterval=-1} keeps camel-jms from replacing it).
     */
    static MessageListenerContainerFactory listenerContainers() {
        return new MessageListenerContainerFactory() {
            @Override
            public AbstractMessageListenerContainer createMessageListenerContainer(JmsEndpoint endpoint) {
                DefaultJmsMessageListenerContainer container = new DefaultJmsMessageListenerContainer(endpoint);
                container.setBackOff(backOff());
                return container;
            }
        };
    }

    private static ExponentialBackOff backOff() {
        ExponentialBackOff backOff = new ExponentialBackOff(FIRST_RETRY_MILLIS, 2);
        backOff.setMaxInterval(MAX_RETRY_MILLIS);
        return backOff;
    }

    @Override
    protected void doStart() {
        timer = context.getExecutorServiceManager().newSingleThreadScheduledExecutor(this, "BrokerWatch");
        timer.execute(this::tryBroker);
    }

    @Override
    protected void doStop() throws InterruptedException {
        ScheduledExecutorService t = timer;
        timer = null;
        if (t != null) {
            context.getExecutorServiceManager().shutdownNow(t);
            // a try in progress ends before the connection it may have made is closed
            t.awaitTermination(5, TimeUnit.SECONDS);
        }
        closeConnection();
    }

    /** Called by the JMS client when the watch's connection fails: the broker is gone (or the network to it). */
    @Override
    public void onException(JMSException e) {
        ScheduledExecutorService t = timer;
        if (t != null && isRunAllowed()) {
            t.execute(() -> lost(e));
        }
    }

    private void lost(JMSException e) {
        if (!isRunAllowed() || unreachableSince >= 0) {
            return;
        }
        closeConnection();
        unreachableSince = System.nanoTime();
        nextRetryMillis = FIRST_RETRY_MILLIS;
        lastReason = reason(e);
        LOG.warn("Lost the broker at {} ({}): trying again after {} s, then up to every {} s; {}", shownUrl, lastReason,
                FIRST_RETRY_MILLIS / 1000, MAX_RETRY_MILLIS / 1000, whatThen());
        schedule(FIRST_RETRY_MILLIS);
    }

    private void tryBroker() {
        if (!isRunAllowed()) {
            return;
        }
        try {
            Connection c = factory.createConnection();
            c.setExceptionListener(this);
            connection = c;
            if (!isRunAllowed()) {
                closeConnection();
                return;
            }
        } catch (JMSException | RuntimeException e) {
            unreachable(e);
            return;
        }
        if (unreachableSince >= 0) {
            LOG.info("The broker at {} is reachable{} after {} s: taking URLs", shownUrl, reachedOnce ? " again" : "",
                    secondsSince(unreachableSince));
        }
        reachedOnce = true;
        unreachableSince = -1;
        nextRetryMillis = FIRST_RETRY_MILLIS;
    }

    private void unreachable(Exception e) {
        lastReason = reason(e);
        if (unreachableSince < 0) {
            unreachableSince = System.nanoTime();
            LOG.warn("The broker at {} is not reachable ({}): trying again after {} s, then up to every {} s; {}",
                    shownUrl, lastReason, nextRetryMillis / 1000, MAX_RETRY_MILLIS / 1000, whatThen());
        } else {
            LOG.debug("The broker at {} is still not reachable: {}", shownUrl, lastReason);
        }
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - unreachableSince);
        if (!settings.waitsForEver() && waited >= settings.waitMillis()) {
            giveUp();
            return;
        }
        long delay = nextRetryMillis;
        nextRetryMillis = Math.min(MAX_RETRY_MILLIS, nextRetryMillis * 2);
        // the last try comes at the bound, not a backoff step past it
        schedule(settings.waitsForEver() ? delay : Math.min(delay, Math.max(0, settings.waitMillis() - waited)));
    }

    private void giveUp() {
        String waited = secondsSince(unreachableSince) + " s";
        if (reachedOnce) {
            LOG.info("The broker at {} has been unreachable for {} (example.brokerWait={}): this instance ends",
                    shownUrl, waited, settings.shownWait());
            end.accept(null);
        } else {
            end.accept(new BrokerUnreachable("The broker at " + shownUrl + " (example.broker) was not reachable"
                    + " for " + waited + " (example.brokerWait=" + settings.shownWait() + "): " + lastReason));
        }
    }

    private String whatThen() {
        return settings.waitsForEver() ? "for ever (example.brokerWait=0)"
                : "this instance ends if it is still unreachable after " + settings.shownWait() + " (example.brokerWait)";
    }

    private void schedule(long delayMillis) {
        ScheduledExecutorService t = timer;
        if (t != null && isRunAllowed()) {
            t.schedule(this::tryBroker, delayMillis, TimeUnit.MILLISECONDS);
        }
    }

    private void closeConnection() {
        Connection c = connection;
        connection = null;
        if (c != null) {
            try {
                c.close();
            } catch (JMSException | RuntimeException e) {
                // a connection to a broker that is gone: nothing left to release on its side
                LOG.debug("Closing the watch's connection to {}: {}", shownUrl, e.toString());
            }
        }
    }

    private static long secondsSince(long nanos) {
        return TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - nanos);
    }

    /**
     * Why the broker is unreachable, in one line: the Artemis exception's own message when there is one ("AMQ219007:
     * Cannot connect to server(s)...", "AMQ219015: The connection was disconnected because of server shutdown").
     */
    static String reason(Exception e) {
        Throwable cause = e;
        for (int depth = 0; cause != null && depth < 10; depth++) {
            if (cause instanceof ActiveMQException artemis && artemis.getMessage() != null) {
                return shorter(artemis.getMessage());
            }
            cause = cause.getCause() != null ? cause.getCause()
                    : cause instanceof JMSException jms ? jms.getLinkedException() : null;
        }
        return shorter(String.valueOf(e.getMessage()));
    }

    private static String shorter(String message) {
        return message.length() <= 300 ? message : message.substring(0, 300) + "...";
    }
}
