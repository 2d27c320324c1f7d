package io.tokenbucket.benchmarks;

import java.util.Map;

import org.apache.camel.AsyncCallback;
import org.apache.camel.Consumer;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;
import org.apache.camel.Producer;
import org.apache.camel.support.DefaultAsyncProducer;
import org.apache.camel.support.DefaultComponent;
import org.apache.camel.support.DefaultEndpoint;

/**
 * {@code noop:} for measurement 3: the cheapest {@code to(...)} step Camel can have. Its producer is a
 * {@link DefaultAsyncProducer} that completes every exchange synchronously and does nothing, so a route with
 * {@code to("noop:x")} pays exactly Camel's per-step cost of a producer endpoint (the {@code SendProcessor},
 * its producer lookup and the asynchronous callback plumbing), and nothing else; {@code noop:headers} also sets the
 * two headers a granted {@code tokenbucket:} step sets, boxed once (the floor of that step's contract). Registered by the benchmark
 * itself ({@code camel.addComponent("noop", new NoopComponent())}); no consumer.
 */
public final class NoopComponent extends DefaultComponent {

    @Override
    protected Endpoint createEndpoint(String uri, String remaining, Map<String, Object> parameters) {
        return new NoopEndpoint(uri, this);
    }

    static final class NoopEndpoint extends DefaultEndpoint {

        /** The values {@code noop:headers} sets, boxed once: what the two result headers of a grant cost at least. */
        private static final Long WAITED = 0L;
        private static final Long REMAINING = 999L;

        NoopEndpoint(String uri, NoopComponent component) {
            super(uri, component);
        }

        @Override
        public Producer createProducer() {
            boolean headers = getEndpointUri().endsWith("headers");
            return new DefaultAsyncProducer(this) {
                @Override
                public boolean process(Exchange exchange, AsyncCallback callback) {
                    if (headers) {
                        exchange.getMessage().setHeader("CamelTokenBucketWaited", WAITED);
                        exchange.getMessage().setHeader("CamelTokenBucketRemaining", REMAINING);
                    }
                    callback.done(true);
                    return true;
                }
            };
        }

        @Override
        public Consumer createConsumer(Processor processor) {
            throw new UnsupportedOperationException("noop: has no consumer");
        }
    }
}
