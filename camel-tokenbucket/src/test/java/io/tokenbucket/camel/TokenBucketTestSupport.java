package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.apache.camel.AsyncProducer;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.FailedToCreateRouteException;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.apache.camel.test.junit5.CamelTestSupport;

/** What the tokenbucket tests share: sending exchanges without blocking, and reaching the component's state. */
abstract class TokenBucketTestSupport extends CamelTestSupport {

    /** Exchanges sent with {@link #sendAsync} and a latch counting their completions. */
    record Sent(List<Exchange> exchanges, CountDownLatch done) {
    }

    /**
     * Sends {@code count} exchanges to {@code uri} through an asynchronous producer, so the calling thread never
     * blocks on a waiting exchange; body {@code i}, headers from {@code headers}.
     */
    Sent sendAsync(String uri, int count, Map<String, Object> headers) throws Exception {
        return sendAsync(context, uri, count, headers);
    }

    /** {@link #sendAsync(String, int, Map)} in the Camel context {@code context}. */
    static Sent sendAsync(CamelContext context, String uri, int count, Map<String, Object> headers) throws Exception {
        AsyncProducer producer = context.getEndpoint(uri).createAsyncProducer();
        producer.start();
        List<Exchange> exchanges = new ArrayList<>(count);
        CountDownLatch done = new CountDownLatch(count);
        for (int i = 0; i < count; i++) {
            Exchange exchange = new DefaultExchange(context);
            exchange.getMessage().setBody(i);
            exchange.getMessage().setHeaders(new HashMap<>(headers));
            exchanges.add(exchange);
            producer.process(exchange, doneSync -> done.countDown());
        }
        return new Sent(exchanges, done);
    }

    /** Sends one exchange to {@code uri} with a copy of {@code headers} and waits for its outcome. */
    Exchange send(String uri, Map<String, Object> headers) {
        return template.request(uri, e -> e.getMessage().setHeaders(new HashMap<>(headers)));
    }

    TokenBucketComponent component() {
        return context.getComponent("tokenbucket", TokenBucketComponent.class);
    }

    /**
     * The root cause of the failure to start a route {@code from("direct:x").to(uri)} in a context of its own, for
     * assertions on an option refused at start.
     */
    static Throwable startFailure(String uri) throws Exception {
        DefaultCamelContext other = new DefaultCamelContext();
        try {
            other.addRoutes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("direct:x").to(uri);
                }
            });
            other.start();
            throw new AssertionError(uri + " started");
        } catch (FailedToCreateRouteException e) {
            Throwable root = e;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            return root;
        } finally {
            other.stop();
        }
    }

    /** A failure and its causes, each as its class and message, for assertions on what a failure shows. */
    static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t).append(" | ");
        }
        return all.toString();
    }
}
