package io.tokenbucket.example.proxy;

import java.util.Map;
import java.util.concurrent.CompletableFuture;

import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.example.ScraperRoute;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A 429's penalty, and the host's refusal as a cut of the pair's adaptive rate ({@link #throttled}), carried to the
 * (proxy, host) pair's bucket with the component's {@code penalize} operation
 * (header {@code CamelTokenBucketPenalty}), sent for the pair's key ({@link ProxyLimits#pairKey}) to the route's own
 * throttle ({@link ScraperRoute#THROTTLE}, so the same buckets, limits, adaptation and store): the pair's bucket gives
 * no token until the penalty is over, then refills from empty, so the throttle chooses another proxy for that host
 * meanwhile, while the proxy's own bucket and its other hosts are left alone (the host's 429 is about that
 * proxy's address at that host, nothing else). With {@code store=redis} every instance sharing the store backs
 * the pair off at once, also those whose own pool never saw the 429. Exchanges already waiting keep their reserved turn (a penalty never releases
 * anyone early); new ones queue after it. Health changes never touch the buckets ({@link ProxyBuckets}).
 *
 * <p>The operation is sent asynchronously ({@link ProducerTemplate#asyncSend}, on the template's own threads):
 * the caller, a route thread, never waits for Redis, and can never tie up the component's worker pool, on which
 * the operation's own answer continues. A failed operation is logged, never thrown: the pool's own record of
 * the penalty still holds for this instance.
 */
public class TokenBucketProxyBuckets implements ProxyBuckets {

    private static final Logger LOG = LoggerFactory.getLogger(TokenBucketProxyBuckets.class);

    private final CamelContext context;
    private final String endpointUri;
    private final boolean adaptive;
    private volatile ProducerTemplate template;

    /**
     * @param context     the application's context
     * @param endpointUri the throttle's endpoint, placeholders allowed ({@link ScraperRoute#THROTTLE})
     * @param adaptive    whether that endpoint has {@code adaptive=true} ({@code example.adaptive}), its pairs'
     *                    keys adapting: only then is the {@code throttled} operation sent (the component refuses it
     *                    otherwise)
     */
    public TokenBucketProxyBuckets(CamelContext context, String endpointUri, boolean adaptive) {
        this.context = context;
        this.endpointUri = endpointUri;
        this.adaptive = adaptive;
    }

    @Override
    public void penalize(String proxyId, String host, long millis) {
        if (proxyId != null && host != null) {
            send("penalize", ProxyLimits.pairKey(proxyId, host),
                    Map.of(TokenBucketConstants.PENALTY, Math.max(0, millis)));
        }
    }

    /**
     * Cuts the pair's adaptive rate (operation {@code throttled}, to the same endpoint as the acquires, so the same
     * limits and adaptation); a cut within {@code adaptiveHold} of the last is ignored by the component, so the
     * replies of requests already in flight cut once. Nothing without {@code adaptive}.
     */
    @Override
    public void throttled(String proxyId, String host) {
        if (adaptive && proxyId != null && host != null) {
            send("throttled", ProxyLimits.pairKey(proxyId, host), Map.of());
        }
    }

    /** Sends one operation; the future completes once the store has answered (tests wait on it). */
    CompletableFuture<Exchange> send(String operation, String pair, Map<String, Object> headers) {
        if (pair == null || !context.getStatus().isStarted()) {
            return CompletableFuture.completedFuture(null); // nothing to tell, or nobody left to tell it to
        }
        CompletableFuture<Exchange> sent = template().asyncSend(endpointUri, exchange -> {
            exchange.getMessage().setHeader(ProxyStats.PROXY_HEADER, pair);
            exchange.getMessage().setHeader(TokenBucketConstants.OPERATION, operation);
            headers.forEach(exchange.getMessage()::setHeader);
        });
        return sent.whenComplete((exchange, failure) -> {
            Throwable problem = failure != null ? failure : exchange.getException();
            if (problem != null) {
                LOG.warn("Could not {} the bucket of {}: {}", operation, pair, problem.getMessage());
            } else {
                LOG.debug("{} {} {}: rate {}, cut {}", operation, pair, headers,
                        exchange.getMessage().getHeader(TokenBucketConstants.RATE),
                        exchange.getMessage().getHeader(TokenBucketConstants.RATE_CUT));
            }
        });
    }

    private ProducerTemplate template() {
        ProducerTemplate t = template;
        if (t == null) {
            synchronized (this) {
                t = template;
                if (t == null) {
                    t = context.createProducerTemplate();
                    template = t;
                }
            }
        }
        return t;
    }
}
