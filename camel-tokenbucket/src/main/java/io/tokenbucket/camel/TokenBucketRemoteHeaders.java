package io.tokenbucket.camel;

import java.util.Map;

import io.tokenbucket.camel.producer.TokenBucketRequest;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.spi.CamelEvent;
import org.apache.camel.spi.CamelEvent.ExchangeCreatedEvent;
import org.apache.camel.support.SimpleEventNotifierSupport;

/**
 * Removes the component's headers, {@code CamelTokenBucket...} in any casing, from an exchange that enters Camel from
 * a remote endpoint ({@link Endpoint#isRemote()}: JMS, HTTP, Kafka...), so that a message cannot choose its own
 * operation, cost, key, candidates or all-of keys: Camel's headers are case-insensitive, and camel-jms's default
 * filter, for one, drops only the casings {@code Camel...} and {@code camel...}. A header the route sets itself comes
 * later and stays, as does the header the {@code keyHeader} option names when it is not the component's default.
 *
 * <p>It sees each exchange once, when the exchange gets its unit of work in its first route
 * ({@link ExchangeCreatedEvent}, fired with the message already there), whichever route that is, and whether it was
 * created before or after the component; every other event is ignored before it is made. A copy of an exchange made
 * inside a route (split, multicast, wire tap) gets a unit of work, and the event, again: it carries the mark
 * {@link #CHECKED} from its original and is left alone, keeping what the route set before the copy. Exchanges from a
 * local endpoint (direct, seda, timer) are the application's own and are not touched, nor is one a
 * {@code ProducerTemplate} sends straight to an endpoint (it gets a unit of work, but no route).
 * Registered by the component while it runs, unless its {@code allowRemoteHeaders} option is true.
 */
final class TokenBucketRemoteHeaders extends SimpleEventNotifierSupport {

    /** The exchange property marking an exchange whose message was checked when it entered from a remote endpoint. */
    static final String CHECKED = "CamelTokenBucketRemoteChecked";

    TokenBucketRemoteHeaders() {
        // SimpleEventNotifierSupport ignores every exchange event by default; only the created event is wanted
        setIgnoreExchangeEvents(false);
        setIgnoreExchangeCreatedEvent(false);
        setIgnoreCamelContextInitEvents(true);
        setIgnoreCamelContextEvents(true);
        setIgnoreRouteEvents(true);
        setIgnoreServiceEvents(true);
    }

    @Override
    public boolean isEnabled(CamelEvent event) {
        return event instanceof ExchangeCreatedEvent;
    }

    @Override
    public void notify(CamelEvent event) {
        Exchange exchange = ((ExchangeCreatedEvent) event).getExchange();
        Endpoint from = exchange.getFromEndpoint();
        // no route id: a ProducerTemplate sending straight to an endpoint, whose exchange names that endpoint
        if (from == null || !from.isRemote() || exchange.getFromRouteId() == null
                || exchange.getProperty(CHECKED) != null) {
            return;
        }
        exchange.setProperty(CHECKED, Boolean.TRUE);
        removeComponentHeaders(exchange.getIn().getHeaders());
    }

    /** Removes every header whose name starts with {@code CamelTokenBucket}, in any casing. */
    static void removeComponentHeaders(Map<String, Object> headers) {
        if (!headers.isEmpty()) {
            headers.keySet().removeIf(name -> name.regionMatches(true, 0, TokenBucketRequest.PREFIX, 0,
                    TokenBucketRequest.PREFIX.length()));
        }
    }
}
