package io.tokenbucket.camel.observe;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

import io.tokenbucket.camel.TokenBucketStatistics;
import io.tokenbucket.camel.producer.TokenBucketServices;
import io.tokenbucket.camel.producer.TokenBucketStoreBinding;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import org.apache.camel.CamelContext;

/**
 * Binds an endpoint's {@link TokenBucketStatistics} to a Micrometer {@link MeterRegistry} as function meters
 * (they read the counters; nothing is counted twice). Kept apart from the endpoint so that Micrometer, an
 * optional dependency, is only loaded by applications that have it.
 *
 * <p>"Admitted" means one thing everywhere (JMX {@code AdmittedCount}, the dev console, the per-key meter): the
 * exchange got its tokens, at once or after waiting. Meters, tagged {@code endpoint=<name>}:
 * {@code tokenbucket.exchanges} ({@code outcome} immediate (admitted at once), delayed (admitted after waiting),
 * rejected, store_error, abandoned: each acquire that reached its store in exactly one, so immediate plus delayed
 * is the admitted count),
 * {@code tokenbucket.store.fallbacks} (calls the allow or local policy answered), {@code tokenbucket.store.refusals}
 * (calls Redis refused: a permission, a script error), {@code tokenbucket.wait} (a
 * timer of the delayed exchanges' waits), {@code tokenbucket.local.keys} (buckets in memory),
 * {@code tokenbucket.waiting} (exchanges waiting now), {@code tokenbucket.rebooked} (waiters released past
 * {@code maxLateness}, after a stall, that reserved again), {@code tokenbucket.inflight} and
 * {@code tokenbucket.waiting.slot} (exchanges holding in-flight slots, and waiting for one, now), {@code tokenbucket.store.batch.size} (a distribution of
 * the reservations per Redis reservation call, while {@code redisBatching} is on), {@code tokenbucket.rate.signals}
 * ({@code outcome} cut or ignored: throttled signals), {@code tokenbucket.rate.lowest} (a gauge: the lowest rate a
 * signal left on any key within the last minute, one number per endpoint whatever the number of keys) and, when
 * {@code metricsPerKey=true}, for at most {@code metricsMaxKeys} keys, {@code tokenbucket.key.exchanges} ({@code key}, {@code outcome} admitted (at once
 * or after waiting) or rejected).
 *
 * <p>Internal to the component: public for its other packages, not for applications.
 */
public final class TokenBucketMetrics implements AutoCloseable {

    /** The name under which camel-micrometer binds its registry. */
    public static final String CAMEL_REGISTRY_NAME = "metricsRegistry";

    private final MeterRegistry registry;
    private final List<Meter> meters = new CopyOnWriteArrayList<>();
    /** The statistics whose batch sizes feed a meter here: told to stop when the meters go. */
    private volatile TokenBucketStatistics batchSource;

    private TokenBucketMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    /**
     * Binds the meters of the endpoint {@code services} describe to {@code configured} when it is a
     * {@link MeterRegistry}, else to the only one in Camel's registry, else to camel-micrometer's; returns null when
     * there is none.
     *
     * @param localKeys the buckets held in memory for the endpoint's limiter name
     * @param waiting   the exchanges waiting now, at most {@code maxWaiting}
     */
    public static TokenBucketMetrics bind(CamelContext camel, Object configured, TokenBucketServices services,
                                          IntSupplier localKeys, IntSupplier waiting) {
        MeterRegistry registry = configured instanceof MeterRegistry r ? r
                : camel.getRegistry().findSingleByType(MeterRegistry.class);
        if (registry == null) {
            registry = camel.getRegistry().lookupByNameAndType(CAMEL_REGISTRY_NAME, MeterRegistry.class);
        }
        if (registry == null) {
            return null;
        }
        TokenBucketMetrics metrics = new TokenBucketMetrics(registry);
        metrics.register(services, localKeys, waiting);
        return metrics;
    }

    private void register(TokenBucketServices services, IntSupplier localKeys, IntSupplier waiting) {
        TokenBucketStatistics stats = services.statistics();
        TokenBucketStoreBinding store = services.storeBinding();
        Tags tags = Tags.of("endpoint", services.name());
        // outcomes that add up: each acquire that reached its store is in exactly one
        exchanges(tags, "immediate", stats, TokenBucketStatistics::getImmediate);
        exchanges(tags, "delayed", stats, TokenBucketStatistics::getDelayed);
        exchanges(tags, "rejected", stats, TokenBucketStatistics::getRejected);
        exchanges(tags, "store_error", stats, TokenBucketStatistics::getStoreErrors);
        exchanges(tags, "abandoned", stats, TokenBucketStatistics::getAbandoned);
        meters.add(FunctionCounter.builder("tokenbucket.store.fallbacks", store,
                        TokenBucketStoreBinding::fallbacks).tags(tags)
                .description("Store calls answered by the allow or local policy while Redis did not answer")
                .register(registry));
        meters.add(FunctionCounter.builder("tokenbucket.store.refusals", store,
                        TokenBucketStoreBinding::refusals).tags(tags)
                .description("Store calls Redis refused (a permission, a script error), whatever onStoreError")
                .register(registry));
        meters.add(FunctionTimer.builder("tokenbucket.wait", stats, TokenBucketStatistics::getDelayed,
                        TokenBucketStatistics::getWaitNanos, TimeUnit.NANOSECONDS)
                .tags(tags).description("How long delayed exchanges waited for their tokens").register(registry));
        meters.add(Gauge.builder("tokenbucket.local.keys", localKeys, IntSupplier::getAsInt)
                .strongReference(true) // a function of its own: nothing else holds it
                .tags(tags).description("Buckets held in this JVM's memory").register(registry));
        meters.add(Gauge.builder("tokenbucket.inflight", stats, TokenBucketStatistics::getInFlight)
                .tags(tags).description("Exchanges of this instance holding in-flight slots now").register(registry));
        meters.add(Gauge.builder("tokenbucket.waiting.slot", stats, TokenBucketStatistics::getSlotWaiting)
                .tags(tags).description("Exchanges waiting for an in-flight slot now").register(registry));
        meters.add(Gauge.builder("tokenbucket.waiting", waiting, IntSupplier::getAsInt).strongReference(true)
                .tags(tags).description("Exchanges waiting for their tokens now (at most maxWaiting)")
                .register(registry));
        meters.add(FunctionCounter.builder("tokenbucket.rebooked", stats, TokenBucketStatistics::getRebooked)
                .tags(tags).description("Waiters released past maxLateness (the JVM or machine stalled) that reserved"
                        + " again").register(registry));
        meters.add(FunctionCounter.builder("tokenbucket.rate.signals", stats, TokenBucketStatistics::getRateCuts)
                .tags(tags.and("outcome", "cut")).description("Throttled signals by outcome").register(registry));
        meters.add(FunctionCounter.builder("tokenbucket.rate.signals", stats,
                        TokenBucketStatistics::getIgnoredSignals)
                .tags(tags.and("outcome", "ignored")).description("Throttled signals by outcome").register(registry));
        meters.add(Gauge.builder("tokenbucket.rate.lowest", stats, TokenBucketStatistics::getLowestRecentRate)
                .tags(tags).description("The lowest rate (fraction of the configured) a throttled signal left on a"
                        + " key within the last minute; 1 when none").register(registry));
        DistributionSummary batchSize = DistributionSummary.builder("tokenbucket.store.batch.size").tags(tags)
                .baseUnit("reservations")
                .description("Reservations per Redis reservation call (1: it went alone; more: they queued behind"
                        + " calls in flight)").register(registry);
        meters.add(batchSize);
        stats.onStoreBatch(batchSize::record);
        batchSource = stats;
        if (services.configuration().isMetricsPerKey()) {
            stats.countPerKey(services.configuration().getMetricsMaxKeys(), key -> {
                TokenBucketStatistics.KeyCounts counts = stats.getKeys().get(key);
                Tags keyTags = tags.and("key", key);
                meters.add(FunctionCounter.builder("tokenbucket.key.exchanges", counts,
                                TokenBucketStatistics.KeyCounts::getAdmitted)
                        .tags(keyTags.and("outcome", "admitted")).register(registry));
                meters.add(FunctionCounter.builder("tokenbucket.key.exchanges", counts,
                                TokenBucketStatistics.KeyCounts::getRejected)
                        .tags(keyTags.and("outcome", "rejected")).register(registry));
            });
        }
    }

    private void exchanges(Tags tags, String outcome, TokenBucketStatistics stats,
                           java.util.function.ToDoubleFunction<TokenBucketStatistics> count) {
        meters.add(FunctionCounter.builder("tokenbucket.exchanges", stats, count)
                .tags(tags.and("outcome", outcome)).description("Exchanges by outcome").register(registry));
    }

    /** Removes the endpoint's meters from the registry. */
    @Override
    public void close() {
        TokenBucketStatistics stats = batchSource;
        if (stats != null) {
            stats.onStoreBatch(size -> { });
        }
        meters.forEach(registry::remove);
        meters.clear();
    }
}
