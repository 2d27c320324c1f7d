package io.tokenbucket.example.broker;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.function.BinaryOperator;
import java.util.regex.Pattern;

import org.apache.camel.util.TimeUtils;

/**
 * The {@code example.broker*} settings of broker mode, checked: a bad value is refused with the property's name and
 * the value. Read by {@link BrokerQueue}.
 *
 * @param mode       {@code example.broker}: none (empty, the default: the in-JVM {@code seda:} queue), embedded (this
 *                   instance starts an ActiveMQ Artemis broker on 127.0.0.1) or connect ({@code tcp://host:port})
 * @param url        the Artemis URL every JMS connection of this instance uses ({@code tcp://127.0.0.1:port} when
 *                   embedded); null in mode none. Artemis URL parameters may follow, but no {@code user} or
 *                   {@code *password*} one: Camel Main logs the value
 * @param port       {@code example.brokerPort}: the embedded broker's loopback port, 1 to 65535, default 61616
 * @param queue      {@code example.brokerQueue}: the URL queue's name, default {@code scraper.urls}; its results,
 *                   dead letters and undeliverable URLs go to {@code <queue>.results}, {@code <queue>.dead} and
 *                   {@code <queue>.undelivered}
 * @param consumers  {@code example.brokerConsumers}: URLs this instance takes from the queue at once, 1 to
 *                   {@value #MAX_CONSUMERS}, default 8. Each holds a thread while its URL waits for a token and is
 *                   fetched (a transacted JMS listener waits for its exchange), and nothing is prefetched, so this is
 *                   also the most URLs the instance holds unacknowledged
 * @param deliveries {@code example.brokerDeliveries}: how often the embedded broker delivers a URL whose taker died
 *                   or rolled back before it goes to {@code <queue>.undelivered} (written as a dead-letter line), 1 to
 *                   {@value #MAX_DELIVERIES}, default 5. An external broker applies its own address settings
 * @param feed       {@code example.brokerFeed}: whether this instance sends {@code example.urlFile} to the queue;
 *                   default: only when it starts the broker
 * @param record     {@code example.brokerRecord}: whether this instance is the one writer of the results and dead
 *                   letters of every instance ({@code example.results}, {@code example.deadLetter}); default: only
 *                   when it starts the broker. Run exactly one
 * @param waitMillis {@code example.brokerWait}: how long an instance that connects to a broker (mode connect) goes on
 *                   trying to reach it, when it is not there at start or has gone away, before the instance ends:
 *                   milliseconds, default 30 s ({@value #DEFAULT_WAIT}), at most {@value #MAX_WAIT_MILLIS} ms
 *                   (a day); 0 for ever. Each way of ending is one log line ({@link BrokerWatch})
 */
public record BrokerSettings(Mode mode, String url, int port, String queue, int consumers, int deliveries,
                             boolean feed, boolean record, long waitMillis) {

    /** What {@code example.broker} asks for. */
    public enum Mode {
        /** No broker: the example's own {@code example.queue}. */
        NONE,
        /** This instance starts an embedded broker and connects to it. */
        EMBEDDED,
        /** This instance connects to a broker another instance (or an operator) started. */
        CONNECT
    }

    /** The most URLs one instance may hold from the queue at once. */
    public static final int MAX_CONSUMERS = 64;
    /** The most deliveries of one URL the embedded broker may be told to make. */
    public static final int MAX_DELIVERIES = 100;
    /** The longest {@code example.broker} URL accepted. */
    public static final int MAX_URL_LENGTH = 1000;
    /** {@code example.brokerWait}'s default. */
    public static final String DEFAULT_WAIT = "30s";
    /** The longest {@code example.brokerWait}: a day, in milliseconds. */
    public static final long MAX_WAIT_MILLIS = 24L * 60 * 60 * 1000;

    private static final Pattern QUEUE_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,99}");

    /**
     * Reads and checks the settings.
     *
     * @param property a setting's value (stripped) or the given default, e.g. Camel's properties component
     * @throws IllegalArgumentException naming the property and the value, when one is not valid
     */
    public static BrokerSettings read(BinaryOperator<String> property) {
        String broker = property.apply("example.broker", "");
        int port = (int) whole(property, "example.brokerPort", "61616", 1, 65535);
        String queue = property.apply("example.brokerQueue", "scraper.urls");
        if (!QUEUE_NAME.matcher(queue).matches()) {
            throw new IllegalArgumentException("example.brokerQueue must be 1 to 100 letters, digits, '.', '_' or '-'"
                    + " (starting with a letter or digit), was '" + shown(queue) + "'");
        }
        int consumers = (int) whole(property, "example.brokerConsumers", "8", 1, MAX_CONSUMERS);
        int deliveries = (int) whole(property, "example.brokerDeliveries", "5", 1, MAX_DELIVERIES);
        Mode mode;
        String url;
        if (broker.isEmpty()) {
            mode = Mode.NONE;
            url = null;
        } else if (broker.equalsIgnoreCase("embedded")) {
            mode = Mode.EMBEDDED;
            url = "tcp://127.0.0.1:" + port;
        } else {
            mode = Mode.CONNECT;
            url = connectUrl(broker);
        }
        boolean starts = mode == Mode.EMBEDDED;
        return new BrokerSettings(mode, url, port, queue, consumers, deliveries,
                flag(property, "example.brokerFeed", starts), flag(property, "example.brokerRecord", starts),
                millis(property, "example.brokerWait", DEFAULT_WAIT, MAX_WAIT_MILLIS));
    }

    /** {@code example.brokerWait} as the log shows it: {@code 30s}, {@code 1500ms}. */
    public String shownWait() {
        return waitMillis % 1000 == 0 ? waitMillis / 1000 + "s" : waitMillis + "ms";
    }

    /** Whether a connecting instance tries to reach its broker for ever ({@code example.brokerWait=0}). */
    public boolean waitsForEver() {
        return waitMillis == 0;
    }

    /** The queue of result lines: {@code <queue>.results}. */
    public String resultsQueue() {
        return queue + ".results";
    }

    /** The queue of dead-letter lines: {@code <queue>.dead}. */
    public String deadLetterQueue() {
        return queue + ".dead";
    }

    /** Where the embedded broker moves a URL delivered {@link #deliveries} times: {@code <queue>.undelivered}. */
    public String undeliveredQueue() {
        return queue + ".undelivered";
    }

    private static String connectUrl(String broker) {
        String refused = "example.broker must be empty, embedded or tcp://host:port (Artemis URL parameters may follow"
                + " after ?), was '" + shown(broker) + "'";
        if (broker.length() > MAX_URL_LENGTH || !broker.toLowerCase(Locale.ROOT).startsWith("tcp://")) {
            throw new IllegalArgumentException(refused);
        }
        try {
            URI uri = new URI(broker);
            if (uri.getHost() == null || uri.getPort() < 1 || uri.getPort() > 65535 || uri.getUserInfo() != null
                    || !(uri.getRawPath() == null || uri.getRawPath().isEmpty()) || uri.getRawFragment() != null) {
                throw new IllegalArgumentException(refused);
            }
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException(refused, e);
        }
        // Camel Main prints every example.* value at start-up: a secret has no place in this one
        int query = broker.indexOf('?');
        if (query >= 0) {
            for (String parameter : broker.substring(query + 1).split("&")) {
                String name = parameter.split("=", 2)[0].toLowerCase(Locale.ROOT);
                if (name.equals("user") || name.contains("password")) {
                    throw new IllegalArgumentException("example.broker must not carry credentials (its value is"
                            + " logged at start-up), was a URL with parameter '" + shown(name) + "'");
                }
            }
        }
        return broker;
    }

    private static long whole(BinaryOperator<String> property, String key, String defaultValue, long min, long max) {
        String value = property.apply(key, defaultValue);
        long number;
        try {
            number = Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a whole number from " + min + " to " + max + ", was '"
                    + shown(value) + "'");
        }
        if (number < min || number > max) {
            throw new IllegalArgumentException(key + " must be from " + min + " to " + max + ", was " + number);
        }
        return number;
    }

    private static long millis(BinaryOperator<String> property, String key, String defaultValue, long max) {
        String value = property.apply(key, defaultValue);
        long millis;
        try {
            millis = TimeUtils.toMilliSeconds(value);
        } catch (RuntimeException e) { // Camel's parser also throws index errors on some text
            millis = -1;
        }
        if (millis < 0 || millis > max) {
            throw new IllegalArgumentException(key + " must be a duration from 0 (for ever) to " + max + " ms, such as"
                    + " 30s or 2m, was '" + shown(value) + "'");
        }
        return millis;
    }

    private static boolean flag(BinaryOperator<String> property, String key, boolean defaultValue) {
        String value = property.apply(key, "").toLowerCase(Locale.ROOT);
        return switch (value) {
            case "" -> defaultValue;
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(key + " must be true or false (or empty: "
                    + defaultValue + " here), was '" + shown(value) + "'");
        };
    }

    /** A setting's value as an error message shows it: at most 100 characters. */
    private static String shown(String value) {
        return value.length() <= 100 ? value : value.substring(0, 100) + "...";
    }
}
