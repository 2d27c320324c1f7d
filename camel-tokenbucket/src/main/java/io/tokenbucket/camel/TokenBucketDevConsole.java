package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.store.local.LocalBucketStore;
import org.apache.camel.spi.annotations.DevConsole;
import org.apache.camel.support.console.AbstractDevConsole;
import org.apache.camel.util.json.JsonObject;

/**
 * The {@code tokenbucket} dev console: each {@code tokenbucket:} endpoint with its limits, store, mode,
 * counters and its busiest keys (local buckets: the keys furthest from full). Shown by Camel's HTTP dev
 * console and by {@code camel get}-style tooling when camel-console is present. {@code admitted} counts the
 * exchanges that got their tokens, at once or after waiting ({@code delayed} of them waited), as JMX's
 * {@code AdmittedCount} does; Micrometer splits the same count into the outcomes {@code immediate} and
 * {@code delayed}.
 */
@DevConsole(name = "tokenbucket", group = "camel", displayName = "Token Bucket",
            description = "Token bucket endpoints: limits, store, counters (admitted: at once or after waiting)"
                          + " and busiest keys")
public class TokenBucketDevConsole extends AbstractDevConsole {

    /** How many of the busiest keys are listed per endpoint. */
    static final int BUSIEST = 10;

    /** The console, as Camel's console registry creates it. */
    public TokenBucketDevConsole() {
        super("camel", "tokenbucket", "Token Bucket", "Token bucket endpoints: limits, store, counters (admitted: at"
                + " once or after waiting) and busiest keys");
    }

    private List<TokenBucketEndpoint> endpoints() {
        return getCamelContext().getEndpoints().stream()
                .filter(TokenBucketEndpoint.class::isInstance).map(TokenBucketEndpoint.class::cast).toList();
    }

    @Override
    protected String doCallText(Map<String, Object> options) {
        StringBuilder text = new StringBuilder();
        for (TokenBucketEndpoint e : endpoints()) {
            text.append(String.format("tokenbucket:%s%n    limits: %s%n    store: %s, mode: %s%n"
                    + "    admitted: %d (delayed: %d), rejected: %d, store errors: %d, fallbacks: %d%s, refusals: %d,"
                    + " abandoned: %d, rebooked: %d,"
                    + " mean wait: %.1f ms, waiting: %d (for a slot: %d), in flight: %d, local keys: %d%n", e.getName(),
                    e.getLimitsDescription(), e.getStoreDescription(), e.getModeName(), e.getAdmittedCount(),
                    e.getDelayedCount(), e.getRejectedCount(), e.getStoreErrorCount(), e.getFallbackCount(),
                    e.isInStoreFallback() ? " (in fallback now)" : "", e.getStoreRefusalCount(), e.getAbandonedCount(),
                    e.getRebookedCount(),
                    e.getMeanWaitMillis(), e.getWaitingCount(), e.getSlotWaitingCount(), e.getInFlightCount(),
                    e.getLocalKeys()));
            for (Map.Entry<String, Long> key : busiest(e)) {
                text.append(String.format("    busy key %s: full again in %d ms%n", key.getKey(),
                        key.getValue() / 1_000_000));
            }
            if (e.getConfiguration().isAdaptive()) {
                text.append(String.format("    throttled signals: %d (cut: %d), lowest recent rate: %.3f%n",
                        e.getThrottledSignalCount(), e.getRateCutCount(), e.getLowestRecentRate()));
                for (Map.Entry<String, Double> key : slowest(e)) {
                    text.append(String.format("    slow key %s: rate %.3f%n", key.getKey(), key.getValue()));
                }
            }
        }
        return text.toString();
    }

    @Override
    protected Map<String, Object> doCallJson(Map<String, Object> options) {
        JsonObject root = new JsonObject();
        List<JsonObject> list = new ArrayList<>();
        for (TokenBucketEndpoint e : endpoints()) {
            JsonObject jo = new JsonObject();
            jo.put("name", e.getName());
            jo.put("limits", e.getLimitsDescription());
            jo.put("store", e.getStoreDescription());
            jo.put("mode", e.getModeName());
            jo.put("admitted", e.getAdmittedCount());
            jo.put("delayed", e.getDelayedCount());
            jo.put("rejected", e.getRejectedCount());
            jo.put("storeErrors", e.getStoreErrorCount());
            jo.put("fallbacks", e.getFallbackCount());
            jo.put("inFallback", e.isInStoreFallback());
            jo.put("storeRefusals", e.getStoreRefusalCount());
            jo.put("abandoned", e.getAbandonedCount());
            jo.put("rebooked", e.getRebookedCount());
            jo.put("meanWaitMillis", e.getMeanWaitMillis());
            jo.put("waiting", e.getWaitingCount());
            jo.put("slotWaiting", e.getSlotWaitingCount());
            jo.put("inFlight", e.getInFlightCount());
            jo.put("localKeys", e.getLocalKeys());
            jo.put("busiestKeys", busiest(e).stream().map(key -> keyEntry(key.getKey(), "fullInMillis",
                    key.getValue() / 1_000_000)).toList());
            if (e.getConfiguration().isAdaptive()) {
                jo.put("throttledSignals", e.getThrottledSignalCount());
                jo.put("rateCuts", e.getRateCutCount());
                jo.put("lowestRecentRate", e.getLowestRecentRate());
                jo.put("slowestKeys", slowest(e).stream().map(key -> keyEntry(key.getKey(), "rate", key.getValue()))
                        .toList());
            }
            list.add(jo);
        }
        root.put("endpoints", list);
        return root;
    }

    /**
     * The keys with the lowest rates: exact and current for the local store; for Redis (which is not scanned) the
     * rates that the recent throttled signals left.
     */
    /** A key of a list in the JSON answer: the key, then one figure of it. */
    private static Map<String, Object> keyEntry(String key, String figure, Object value) {
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("key", key);
        entry.put(figure, value);
        return entry;
    }

    private List<Map.Entry<String, Double>> slowest(TokenBucketEndpoint endpoint) {
        LocalBucketStore local = endpoint.localBuckets();
        if (local != null && endpoint.getConfiguration().getStore() == TokenBucketStoreType.local) {
            return local.slowest(BUSIEST).stream()
                    .map(e -> Map.entry(e.getKey(), (double) e.getValue() / Adaptive.PPM)).toList();
        }
        return endpoint.getStatistics().getRecentRates(BUSIEST);
    }

    private List<Map.Entry<String, Long>> busiest(TokenBucketEndpoint endpoint) {
        LocalBucketStore local = endpoint.localBuckets();
        return local == null ? List.of() : local.busiest(BUSIEST);
    }
}
