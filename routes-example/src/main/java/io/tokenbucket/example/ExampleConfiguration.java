package io.tokenbucket.example;

import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Locale;

import io.tokenbucket.camel.TokenBucketBackPressure;
import io.tokenbucket.camel.TokenBucketComponent;
import io.tokenbucket.camel.TokenBucketStoreType;
import io.tokenbucket.example.broker.BrokerQueue;
import io.tokenbucket.example.broker.BrokerSettings;
import io.tokenbucket.example.fetch.FetchOutcome;
import io.tokenbucket.example.fetch.ProxyChooser;
import io.tokenbucket.example.fetch.ProxyInUse;
import io.tokenbucket.example.fetch.RedisLease;
import io.tokenbucket.example.fetch.RetryAfter;
import io.tokenbucket.example.fetch.ScrapeHeaders;
import io.tokenbucket.example.fetch.ScrapeStart;
import io.tokenbucket.example.fetch.RouteFailure;
import io.tokenbucket.example.fetch.NoTokenRetry;
import io.tokenbucket.example.fetch.StoreUnavailable;
import io.tokenbucket.example.fetch.UrlVerdicts;
import io.tokenbucket.example.proxy.PoolRests;
import io.tokenbucket.example.proxy.ProxyBuckets;
import io.tokenbucket.example.proxy.ProxyConfig;
import io.tokenbucket.example.proxy.ProxyClients;
import io.tokenbucket.example.proxy.ProxyLimits;
import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxySource;
import io.tokenbucket.example.proxy.ProxyStats;
import io.tokenbucket.example.proxy.RestBackoff;
import org.apache.camel.CamelConfiguration;
import org.apache.camel.CamelContext;
import org.apache.camel.builder.ThreadPoolProfileBuilder;
import org.apache.camel.component.http.HttpComponent;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.util.TimeUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sets up what both DSLs need from the {@code example.*} properties: the {@link ProxyPool} (from
 * {@code example.proxyFile}, or {@code example.proxies}), {@link ProxyStats}, the {@link ScrapeStart},
 * {@link ProxyChooser}, {@link ProxyInUse} and {@link FetchOutcome} steps ({@link StoreUnavailable} for URLs whose
 * store stayed down), one HttpClient per proxy ({@link ProxyClients}), camel-http's timeouts, the progress table, the
 * Redis store when {@code example.redisUri} is set (on a Redis Cluster with {@link #CLUSTER_HASH_TAG} in the key
 * prefix); then adds the route in the DSL that {@code example.dsl} names: {@code java}, {@code yaml} (the copy in
 * the jar), or {@code main}: none, Camel Main loads it from {@code camel.main.routes-include-pattern}, e.g.
 * {@code file:/etc/scraper/scraper.yaml} (the YAML route copied out of the jar and edited).
 *
 * <p>The choice is made here rather than with {@code camel.main.routes-include-pattern} alone because the Java
 * route must then also be left out, and Camel Main has no property for "add this RouteBuilder only if". The
 * application and the tests both start from this class, so they load routes the same way.
 */
public class ExampleConfiguration implements CamelConfiguration {

    /** Where the YAML version of the route lives. */
    public static final String YAML_ROUTE = "classpath:routes/scraper.yaml";

    /**
     * Added to the component's {@code keyPrefix} on a Redis Cluster (when it has no hash tag yet): every proxy's,
     * pair's and host's bucket in one hash slot, so that one script can choose the freest proxy and charge its pair
     * and the host with it.
     */
    public static final String CLUSTER_HASH_TAG = "{scraper}:";

    /**
     * The most retries {@link ScraperRoute#RETRY_POOL} holds waiting at once: as many URLs as the default queue
     * ({@code seda:urls?size=100000}) holds, since with a booking horizon all of them may be booked out together.
     * Camel's default, 1000, would fail the URLs past it ({@code RejectedExecutionException}). A retry past this
     * bound fails its URL the same way.
     */
    public static final int MAX_WAITING_RETRIES = 100_000;

    /** How far ahead a URL may book its turn: the throttle's {@code maxWait}. */
    public static final String PAIR_MAX_WAIT = "example.pairMaxWait";

    /**
     * {@value #PAIR_MAX_WAIT} with {@code example.adaptive=true} when it is not set: a URL books its proxy's, pair's
     * and host's turn at most this far ahead, so that a cut of the pair's rate reaches the next requests, and a stall
     * of this JVM releases no backlog to the host at once: turns booked far ahead keep the rate they were booked at,
     * and come back refused after a cut. An operator's {@value #PAIR_MAX_WAIT} (a system property, an environment
     * variable or {@code application.properties}) is kept.
     */
    public static final String ADAPTIVE_PAIR_MAX_WAIT = "100ms";

    private static final Logger LOG = LoggerFactory.getLogger(ExampleConfiguration.class);

    /**
     * Binds the example's beans from its settings; a setting it cannot run with ends the start with a
     * {@link SettingsRefused} naming it.
     */
    @Override
    public void configure(CamelContext context) throws Exception {
        try {
            configureFrom(context);
        } catch (IllegalArgumentException | UncheckedIOException e) {
            throw e instanceof SettingsRefused refused ? refused : new SettingsRefused(e.getMessage(), e.getCause());
        }
    }

    private void configureFrom(CamelContext context) throws Exception {
        // the route's retries: the rest of the profile is Camel's default
        context.getExecutorServiceManager().registerThreadPoolProfile(new ThreadPoolProfileBuilder(
                ScraperRoute.RETRY_POOL)
                .maxQueueSize(MAX_WAITING_RETRIES).build());
        String proxyFile = property(context, "example.proxyFile", "");
        ProxySource source = proxyFile.isBlank() ? ProxySource.text(property(context, "example.proxies", ""))
                : ProxySource.file(Path.of(proxyFile));
        boolean throttle = Boolean.parseBoolean(property(context, "example.throttle", "true"));
        String choose = property(context, "example.choose", "freest").toLowerCase(Locale.ROOT);
        if (!choose.equals("freest") && !choose.equals("roundrobin")) {
            throw new IllegalArgumentException("example.choose must be freest or roundrobin, was '" + choose + "'");
        }
        // penalties go to the pairs' buckets (every instance sharing Redis sees them) and, with
        // example.adaptive, the host's own 429s and 503s cut the pair's rate (operation throttled): steps of the
        // route after the outcome (BucketSteps); without the throttle there are no buckets to tell
        boolean adaptive = throttle && Boolean.parseBoolean(property(context, "example.adaptive", "false"));
        if (adaptive) {
            // the pairs' keys adapt, the proxies' and hosts' on the same endpoint keep their rates
            context.getPropertiesComponent().addOverrideProperty(ScraperRoute.ADAPTIVE_KEYS_PROPERTY,
                    ProxyLimits.ADAPTIVE_KEYS);
            // a cut reaches only the turns booked after it: with the adaptive rate a short horizon is part of the
            // method, not a tuning knob, so it comes with it unless example.pairMaxWait says otherwise
            if (context.getPropertiesComponent().resolveProperty(PAIR_MAX_WAIT).isEmpty()) {
                context.getPropertiesComponent().addOverrideProperty(PAIR_MAX_WAIT, ADAPTIVE_PAIR_MAX_WAIT);
            }
        }
        // a 429 rests its (proxy, host) pair: what the host asked, longer with jitter while its 429s keep coming
        RestBackoff.Policy rests = new RestBackoff.Policy(millis(context, "example.penalty", "1s"),
                millis(context, "example.maxRetryAfter", "60s"), millis(context, "example.forgiveAfter", "10s"),
                new java.util.Random());
        // the freest proxy needs the throttle to choose it; without the throttle it is round robin
        boolean freest = throttle && choose.equals("freest");
        // a pair's rest where the choice reads it: with the freest choice its bucket alone (told by the route's
        // steps; the throttle passes a resting pair by); when the pool chooses in turn, the pool's own, so that its
        // turn skips the pair (with the throttle the bucket is told too, for the other instances)
        ProxyPool pool = new ProxyPool(source, (int) number(context, "example.failuresToUnhealthy", "3"),
                millis(context, "example.cooldown", "5s"), freest ? ProxyBuckets.NONE
                : new PoolRests(System::nanoTime), System::nanoTime, rests);
        ProxyStats stats = new ProxyStats();
        context.getRegistry().bind(ProxyPool.BEAN, pool);
        context.getRegistry().bind(ProxyStats.BEAN, stats);
        long hostInFlight = number(context, "example.hostInFlight", "0");
        if (hostInFlight < 0) {
            throw new IllegalArgumentException("example.hostInFlight must be 0 (none) or more, was " + hostInFlight);
        }
        // every host's limits, example.hostLimit with example.hostInFlight: null when neither is set
        String hostLimit = ProxyLimits.hostLimits(property(context, "example.hostLimit", ""), hostInFlight);
        context.getRegistry().bind(ProxyChooser.BEAN, new ProxyChooser(pool, freest,
                millis(context, "example.maxBackoff", "2s"), context, throttle && hostLimit != null));
        String pairLimit = property(context, "example.pairLimit", "");
        String proxyLimitText = property(context, "example.proxyLimit", "2/1s");
        long[] proxyLimit = ProxyConfig.rate(proxyLimitText, "example.proxyLimit", "'" + proxyLimitText + "'");
        context.getRegistry().bind(ProxyLimits.BEAN, new ProxyLimits(pool, proxyLimit[0], proxyLimit[1], pairLimit,
                property(context, "example.hostLimit", ""), hostInFlight));
        // one HttpClient per proxy, with the proxy's address and exact credentials, made before the routes start
        ProxyClients clients = new ProxyClients(context, stats,
                Boolean.parseBoolean(property(context, "example.warmUp", "true")));
        pool.onInstall(clients::install);
        context.addService(clients);
        context.getRegistry().bind(ProxyInUse.BEAN, new ProxyInUse(pool, clients));
        context.getRegistry().bind(ScrapeStart.BEAN, new ScrapeStart(stats));
        long maxInFlight = number(context, "example.maxInFlight", "200");
        if (maxInFlight < 1 || maxInFlight > ProxyChooser.MAX_IN_FLIGHT) {
            throw new IllegalArgumentException("example.maxInFlight must be 1 to " + ProxyChooser.MAX_IN_FLIGHT
                    + ", was " + maxInFlight);
        }
        context.getRegistry().bind(ScraperRoute.BACK_PRESSURE, new TokenBucketBackPressure((int) maxInFlight));
        // where camel-http reads its timeouts: the component's defaults for every endpoint it makes (as options of
        // the fetch URI they would not be endpoint options in this Camel version, but query parameters sent on)
        HttpComponent http = context.getComponent("http", HttpComponent.class);
        http.setHeaderFilterStrategy(new ScrapeHeaders());
        http.setConnectTimeout(millis(context, "example.connectTimeout", "2000"));
        http.setResponseTimeout(millis(context, "example.responseTimeout", "5000"));
        // read by the routes' error handler (Camel's redelivery policy); checked here to be refused by name
        long storeRetries = number(context, "example.storeRetries", "130");
        long storeRetryDelay = number(context, "example.storeRetryDelay", "500");
        // with the freest choice a pair's rest is its bucket's alone: under a booking horizon a URL whose host rests
        // every proxy waits it out by these retries, so they must outlast the longest rest
        long maxRetryAfter = millis(context, "example.maxRetryAfter", "60s");
        boolean horizon = !context.getPropertiesComponent().resolveProperty(PAIR_MAX_WAIT).orElse("").isBlank();
        String shortRetries = retriesShortOfRests(freest && horizon, storeRetries, storeRetryDelay, maxRetryAfter);
        if (shortRetries != null) {
            // a choice (no retries at all, with a broker that redelivers, is one), not a mistake: said, not refused
            LOG.warn(shortRetries);
        }
        // a 429's Retry-After is the target's word: capped, so a hostile target cannot rest a proxy for a year
        RetryAfter retryAfter = new RetryAfter(millis(context, "example.penalty", "1s"),
                millis(context, "example.maxRetryAfter", "60s"), Clock.systemUTC());
        // the example's own connection to the buckets' Redis: what the fleet shares besides the buckets
        String redisUri = property(context, "example.redisUri", "");
        RedisLease redis = new RedisLease(redisUri);
        context.getRegistry().bind(RedisLease.BEAN, redis);
        context.addService(redis);
        FetchOutcome outcome = new FetchOutcome(pool, stats, (int) number(context, "example.maxAttempts", "4"),
                retryAfter, adaptive, throttle, redisUri.isBlank() ? UrlVerdicts.NONE
                        : new UrlVerdicts(redis, millis(context, "example.maxRetryAfter", "60s")));
        context.getRegistry().bind(FetchOutcome.BEAN, outcome);
        // the refused turn's wait less this is when it comes into reach: the throttle's maxWait, pairMaxWait or, unset,
        // the component's
        String maxWait = context.getPropertiesComponent().resolveProperty(PAIR_MAX_WAIT)
                .or(() -> context.getPropertiesComponent().resolveProperty("camel.component.tokenbucket.max-wait"))
                .orElse("0").strip();
        NoTokenRetry retry = new NoTokenRetry(maxWait.isEmpty() ? 0 : millis(context, PAIR_MAX_WAIT, maxWait),
                storeRetries, storeRetryDelay, System::nanoTime);
        context.getRegistry().bind(NoTokenRetry.BEAN, retry);
        context.getRegistry().bind(StoreUnavailable.BEAN, new StoreUnavailable(stats, retry.budgetMillis(), outcome));
        context.getRegistry().bind(RouteFailure.BEAN, new RouteFailure(stats, outcome));
        long progress = millis(context, "example.progressInterval", "0");
        if (progress > 0) {
            context.addService(new ProgressReporter(context, stats, pool, progress, System.out));
        }

        if (!redisUri.isBlank()) {
            // one property moves every proxy's bucket to Redis, so instances sharing it share the limits
            TokenBucketComponent tokenBucket = context.getComponent("tokenbucket", TokenBucketComponent.class);
            tokenBucket.getConfiguration().setStore(TokenBucketStoreType.redis);
            tokenBucket.getConfiguration().setRedisUri(redisUri);
            if (redisUri.startsWith("redis-cluster") || redisUri.startsWith("rediss-cluster")) {
                // the freest group is chosen by one script over every candidate's, pair's and the host's key, so on
                // a cluster they must share a hash slot: a hash tag in the prefix, unless one was configured
                String prefix = tokenBucket.getConfiguration().getKeyPrefix();
                if (!prefix.contains("{")) {
                    tokenBucket.getConfiguration().setKeyPrefix(prefix + CLUSTER_HASH_TAG);
                }
            }
        }

        String dsl = property(context, "example.dsl", "java").toLowerCase(Locale.ROOT);
        switch (dsl) {
            case "java" -> context.addRoutes(new ScraperRoute());
            case "yaml" -> PluginHelper.getRoutesLoader(context)
                    .loadRoutes(PluginHelper.getResourceLoader(context).resolveResource(YAML_ROUTE));
            // Camel Main loads the route itself from camel.main.routes-include-pattern (a file of your own)
            case "main" -> { }
            default -> throw new IllegalArgumentException("example.dsl must be java, yaml or main, was '" + dsl
                    + "'");
        }
        // the hosts' and the pairs' limits come from ProxyLimits on each exchange: checked here, a bad one fails the
        // start by name (with example.adaptive, a bad camel.component.tokenbucket.adaptive-* fails the route's start,
        // naming the component's option: "adaptiveStart must be from 0.000001 to 1, was 2.0"; without, it is unused)
        if (throttle && hostLimit != null) {
            checkLimits(context, "example.hostLimit", hostLimit);
        }
        if (throttle && !pairLimit.isEmpty()) {
            checkLimits(context, "example.pairLimit", pairLimit);
        }
        // broker mode: the queue, the results and the dead letters move to the broker (BrokerQueue). Last, so that
        // no refused setting leaves a started broker behind; the routes read those endpoints when they start
        BrokerSettings broker = BrokerSettings.read((key, defaultValue) -> property(context, key, defaultValue));
        if (broker.mode() != BrokerSettings.Mode.NONE) {
            BrokerQueue queue = BrokerQueue.install(context, broker, Path.of(property(context, "example.outputDir",
                    "target/scrape")));
            FleetTotals fleet = new FleetTotals(redis, queue, progress);
            context.getRegistry().bind(FleetTotals.BEAN, fleet);
            context.addService(fleet);
        }
        LOG.info("Route {} in the {} DSL, proxies {}, {}, buckets {}, per host {}", ScraperRoute.ROUTE_ID, dsl,
                pool.ids(), freest ? "the freest proxy" : "round robin", !throttle ? "off" : redisUri.isBlank()
                        ? "local" : "in Redis", hostLimit == null || !throttle ? "unlimited" : hostLimit);
    }

    /** Refuses, by name, a {@code value} of {@code key} that is not in the component's {@code limits} syntax. */
    private static void checkLimits(CamelContext context, String key, String value) {
        try {
            // an endpoint made for the check only, never started: the component parses its limits when it is made
            context.removeEndpoint(context.getEndpoint("tokenbucket:limitsCheck?limits=" + value));
        } catch (Exception e) {
            Throwable root = e;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            throw new IllegalArgumentException(key + " must be N/period such as 2/1s, was '" + value + "' ("
                    + root.getMessage() + ")");
        }
    }

    private static String property(CamelContext context, String key, String defaultValue) {
        return context.getPropertiesComponent().resolveProperty(key).orElse(defaultValue).strip();
    }

    private static long number(CamelContext context, String key, String defaultValue) {
        String value = property(context, key, defaultValue);
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a whole number, was '" + value + "'");
        }
    }

    private static long millis(CamelContext context, String key, String defaultValue) {
        String value = property(context, key, defaultValue);
        try {
            return TimeUtils.toMilliSeconds(value);
        } catch (RuntimeException e) { // Camel's parser also throws index errors on some text
            throw new IllegalArgumentException(key + " must be a duration such as 500ms or 2s, was '" + value + "'");
        }
    }

    /**
     * The start's warning when the store retries end before the longest rest a host may impose, or null: with the
     * freest choice under a booking horizon a URL whose host rests every proxy waits the rest out by these retries.
     *
     * @param restsByRetries whether rests are waited out by the retries ({@code example.choose=freest} with
     *                       {@code example.pairMaxWait} set)
     * @param retries        {@code example.storeRetries}
     * @param delayMillis    {@code example.storeRetryDelay}, milliseconds
     * @param maxRestMillis  {@code example.maxRetryAfter}, milliseconds
     */
    static String retriesShortOfRests(boolean restsByRetries, long retries, long delayMillis, long maxRestMillis) {
        // a negative count is Camel's "redeliver forever"; a product past a long outlasts any rest
        if (!restsByRetries || retries < 0 || delayMillis > 0 && retries > Long.MAX_VALUE / delayMillis
                || retries * delayMillis >= maxRestMillis) {
            return null;
        }
        return "example.storeRetries x example.storeRetryDelay (" + retries + " x " + delayMillis + " ms) is less"
                + " than example.maxRetryAfter (" + maxRestMillis + " ms) with example.choose=freest and "
                + PAIR_MAX_WAIT + ": a URL whose host rests every proxy goes to the dead letter before the rest ends";
    }
}
