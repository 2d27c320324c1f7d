package io.tokenbucket.example.broker;

import jakarta.jms.JMSException;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;

import org.apache.camel.Exchange;
import org.apache.camel.Processor;
import org.apache.camel.component.jms.JmsMessage;
import org.apache.camel.util.json.Jsoner;

/**
 * In broker mode, where a URL's result or dead-letter line goes instead of a file: to the broker's results (or
 * dead-letter) queue, sent on the JMS session that took the URL from the queue, so inside that session's local
 * transaction. The URL's acknowledgement and its line are then committed together when the exchange ends, or not
 * at all: an instance that dies before the commit has sent no line and its URL is delivered again; one that dies
 * after it has nothing left to redo. That is what makes each URL recorded exactly once, with no window.
 *
 * <p>Why the session and not a {@code jms:} endpoint: camel-jms processes a transacted exchange synchronously on
 * the listener's thread and commits there once the route is done, but the route goes on waiting for a token
 * without a thread (tokenbucket:, the proxy chooser), so its last steps run on a worker thread; a {@code jms:}
 * producer there finds no transaction bound to its thread and would send at once, outside the URL's transaction.
 * The session itself is the transaction, whatever the thread; the listener's thread is blocked meanwhile, so it is
 * never used by two threads at once. {@link BrokerQueue#SESSION} carries it from the route's start (the message
 * taken from the queue is no longer the exchange's message once camel-http has answered).
 *
 * <p>The line gets two more fields: {@code instance} (the JVM that fetched it, {@code pid@host}) and
 * {@code deliveries} (how often the broker had handed the URL out, 1 unless an instance died holding it).
 */
final class BrokerRecord implements Processor {

    private final String queue;
    private final String instance;

    /**
     * @param queue    the queue the line goes to
     * @param instance this JVM's name in the line
     */
    BrokerRecord(String queue, String instance) {
        this.queue = queue;
        this.instance = instance;
    }

    @Override
    public void process(Exchange exchange) throws JMSException {
        Session session = exchange.getProperty(BrokerQueue.SESSION, Session.class);
        if (session == null && exchange.getIn() instanceof JmsMessage in) {
            session = in.getJmsSession();
        }
        if (session == null) {
            throw new IllegalStateException("A line for " + queue + " from an exchange that did not come from the"
                    + " broker queue: in broker mode the scraper route must read from it (example.queue is set by"
                    + " example.broker)");
        }
        // the line is one JSON object (ScrapeResult): the two fields go in before its closing brace, its own order kept
        String line = String.valueOf(exchange.getMessage().getBody(String.class)).strip();
        if (!line.startsWith("{") || !line.endsWith("}")) {
            throw new IllegalStateException("A line for " + queue + " that is not one JSON object: " + line);
        }
        line = line.substring(0, line.length() - 1) + (line.length() > 2 ? "," : "") + "\"instance\":"
                + Jsoner.serialize(instance) + ",\"deliveries\":"
                + exchange.getProperty(BrokerQueue.DELIVERIES, 1, Integer.class) + "}\n";
        try (MessageProducer producer = session.createProducer(session.createQueue(queue))) {
            producer.send(session.createTextMessage(line));
        }
    }
}
