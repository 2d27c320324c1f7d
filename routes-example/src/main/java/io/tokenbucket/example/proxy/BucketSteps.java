package io.tokenbucket.example.proxy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.camel.Exchange;

/**
 * What an attempt's outcome owes the (proxy, host) pairs' buckets, kept on the exchange (property
 * {@value #PROPERTY}) for the route to run as steps of its own throttle endpoint right after the outcome step:
 * <ul>
 * <li>a 429's rest, operation {@code penalize} with header {@code CamelTokenBucketPenalty}: the pair's bucket gives
 *     no token until the rest is over, then refills from empty, so the throttle chooses another proxy for that host
 *     meanwhile; with Redis every instance sharing the store rests the pair, also those that never saw the 429.
 *     With the freest choice this is the pair's only rest; in round robin the pool keeps it too, for its turn
 *     ({@link PoolRests}, {@link ProxyBuckets#and}). A shorter penalty than the debt the bucket owes
 *     changes nothing (the component keeps the longer). Turns already booked keep their slot;</li>
 * <li>with {@code example.adaptive} (only then: the component refuses it otherwise), the host's own refusal,
 *     operation {@code throttled}: the pair's rate is cut, at most once per {@code adaptiveHold}.</li>
 * </ul>
 * Each step is a map with {@code operation}, {@code key} (the pair's key, {@link ProxyLimits#pairKey}) and, for a
 * penalty, {@code penalty} in milliseconds: the route reads them as {@code ${body[key]}} and so on. Health never
 * touches a bucket ({@link ProxyBuckets}). An attempt owes a few steps at most: a cut, its own rest, and the rests
 * its URL's earlier 429s still owe ({@link ProxyPool#settle}), one per attempt.
 */
public final class BucketSteps implements ProxyBuckets {

    /** The exchange property with the steps the route has yet to run ({@code List<Map<String, Object>>}). */
    public static final String PROPERTY = "scrapeBucketSteps";

    private final List<Map<String, Object>> steps;
    private final boolean adaptive;

    private BucketSteps(List<Map<String, Object>> steps, boolean adaptive) {
        this.steps = steps;
        this.adaptive = adaptive;
    }

    /**
     * The steps owed by {@code exchange}'s attempt.
     *
     * @param exchange the URL's exchange
     * @param adaptive whether the throttle adapts the pairs' rates ({@code example.adaptive}): only then is a cut owed
     */
    public static BucketSteps of(Exchange exchange, boolean adaptive) {
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> steps = exchange.getProperty(PROPERTY, List.class);
        if (steps == null) {
            steps = new ArrayList<>();
            exchange.setProperty(PROPERTY, steps);
        }
        return new BucketSteps(steps, adaptive);
    }

    @Override
    public void penalize(String proxyId, String host, long millis) {
        if (proxyId != null && host != null) {
            steps.add(Map.of("operation", "penalize", "key", ProxyLimits.pairKey(proxyId, host), "penalty",
                    Math.max(0, millis)));
        }
    }

    @Override
    public void throttled(String proxyId, String host) {
        if (adaptive && proxyId != null && host != null) {
            steps.add(Map.of("operation", "throttled", "key", ProxyLimits.pairKey(proxyId, host)));
        }
    }
}
