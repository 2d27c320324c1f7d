package io.tokenbucket.camel;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import io.tokenbucket.camel.producer.TokenBucketKeyLists;
import io.tokenbucket.camel.producer.TokenBucketLimitSource;
import io.tokenbucket.camel.producer.TokenBucketTimer;
import io.tokenbucket.camel.syntax.TokenBucketOptionText;
import org.apache.camel.CamelContext;
import org.apache.camel.Endpoint;
import org.apache.camel.ExtendedCamelContext;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.PropertyConfigurer;
import org.apache.camel.spi.annotations.Component;
import org.apache.camel.support.DefaultComponent;
import org.apache.camel.support.LifecycleStrategySupport;
import org.apache.camel.util.ObjectHelper;
import org.apache.camel.util.URISupport;

/**
 * The {@code tokenbucket:} component: creates endpoints that throttle exchanges per key with a token bucket.
 *
 * <p>Every endpoint option can be set here as the default for all endpoints ({@code
 * camel.component.tokenbucket.capacity=5}). The component owns what its endpoints share: the local buckets of
 * each limiter name (endpoints with the same name share buckets), one timer thread that wakes waiting
 * exchanges and sweeps idle buckets, and the worker pool on which woken exchanges continue
 * ({@link TokenBucketShared}, handed to each endpoint). Unless
 * {@code allowRemoteHeaders} is set, it also removes its headers from messages that arrive from remote endpoints
 * ({@link TokenBucketRemoteHeaders}).
 */
@Component("tokenbucket")
public class TokenBucketComponent extends DefaultComponent {

    /**
     * The keywords that make Camel mask the redisUri option in URIs and property summaries: both spellings that
     * Camel binds to it ({@code redisUri}, {@code redis-uri}, in any case).
     */
    static final List<String> SENSITIVE_KEYWORDS = List.of("redisuri", "redis-uri");

    static {
        // Camel masks option values whose names hold a known keyword (password, token...) when it shows a URI;
        // a redisUri may carry a password in its user info, so its value is masked too (doInit keeps them)
        URISupport.addSanitizeKeywords(String.join(",", SENSITIVE_KEYWORDS));
    }

    /**
     * Checks every option of {@code configuration} as endpoint creation does (limits, cost, bounds, the adaptive
     * options), for configuration that reaches the component some other way, such as the Spring Boot starter's.
     *
     * @throws IllegalArgumentException naming the option and its value
     */
    public static void checkOptions(TokenBucketConfiguration configuration) {
        TokenBucketLimitSource.check(configuration);
        TokenBucketKeyLists.allOfOption(configuration);
    }

    /**
     * The milliseconds of duration text, read as an endpoint URI's duration options are (Camel duration text such
     * as {@code 1s}, {@code 500ms}, {@code 1h30m} or {@code 5min}, ISO-8601 such as {@code PT2S}, or a number of
     * milliseconds), exactly: for configuration that reaches the component as text some other way, such as the
     * Spring Boot starter's.
     *
     * @param name the name of the option or property, for the message
     * @throws IllegalArgumentException naming it and the text when the text is no duration, or longer than a
     *                                  {@code long} holds in milliseconds
     */
    public static long durationMillis(String name, String text) {
        return TokenBucketOptionText.durationOption(name, text);
    }

    /**
     * What the text of option {@code name} names, read as an endpoint URI's options and the component's properties
     * are: a count's whole number ({@code Long}, or {@code Integer} for an {@code int} option), a duration's
     * milliseconds, any other option's text as it is. For configuration that reaches the component as text some
     * other way, such as the Spring Boot starter's.
     *
     * @throws IllegalArgumentException naming the option and the text when a count's text is no whole number (a
     *                                  blank included) or a duration's no duration
     */
    public static Object readOption(String name, String text) {
        return TokenBucketOptionText.bind(name, text);
    }

    @Metadata(description = "The defaults for every endpoint's options.")
    private TokenBucketConfiguration configuration = new TokenBucketConfiguration();

    @Metadata(label = "advanced", description = "The thread pool on which exchanges continue after waiting. If"
            + " it refuses, runs a task on the caller or drops it, those exchanges fail (TokenBucketException);"
            + " discarding pools are refused. Default: a Camel pool named TokenBucketWorker with an unbounded queue.")
    private ExecutorService workerPool;

    @Metadata(label = "advanced", javaType = "io.micrometer.core.instrument.MeterRegistry", description = "The"
            + " Micrometer registry for the meters. Default: the only MeterRegistry in Camel's registry, else"
            + " camel-micrometer's; no meters without Micrometer.")
    private Object meterRegistry;

    @Metadata(label = "advanced", defaultValue = "200", description = "How long before a release the timer stops"
            + " sleeping and spins, in microseconds, so the release does not also pay the wake-up latency; at most"
            + " an eighth of one core. 0: no spinning.")
    private long timerSpinMicros = TokenBucketTimer.DEFAULT_SPIN_NANOS / 1000;

    @Metadata(label = "advanced,security", defaultValue = "false", description = "Whether a message that enters"
            + " Camel from a remote endpoint (JMS, HTTP, Kafka: Endpoint.isRemote) keeps headers named"
            + " CamelTokenBucket..., in any casing. false (the default): they are removed when the exchange enters its"
            + " first route, so a message cannot set its own operation, cost, key, candidates or all-of keys; headers"
            + " the routes set themselves, and those of exchanges from local endpoints (direct, seda, timer, a"
            + " ProducerTemplate), are kept. true only where trusted Camel instances pass these headers to each other"
            + " on purpose.")
    private boolean allowRemoteHeaders;
    private TokenBucketRemoteHeaders remoteHeaders;

    private final TokenBucketShared shared = new TokenBucketShared(this::getMeterRegistry);

    @Override
    protected Endpoint createEndpoint(String uri, String remaining, Map<String, Object> parameters) throws Exception {
        if (ObjectHelper.isEmpty(remaining)) {
            throw new IllegalArgumentException("tokenbucket: needs a limiter name, as in tokenbucket:proxies");
        }
        TokenBucketOptionText.check(parameters);
        TokenBucketEndpoint endpoint = new TokenBucketEndpoint(uri, this, shared, remaining, configuration.copy());
        setProperties(endpoint, parameters);
        endpoint.validate();
        return endpoint;
    }

    /**
     * The generated configurer of the component's options, reading the text of every numeric option first
     * ({@link TokenBucketOptionText#bind}), so that {@code camel.component.tokenbucket.maxInFlight=abc} is refused
     * as {@code maxInFlight=abc} in an endpoint URI is, instead of binding the 0 Camel reads from it.
     */
    @Override
    public PropertyConfigurer getComponentPropertyConfigurer() {
        return TokenBucketOptionText.reading(super.getComponentPropertyConfigurer());
    }

    @Override
    protected void doInit() throws Exception {
        super.doInit();
        // Camel Main logs every property it applied ("Auto-configuration summary") and masks a value only when the
        // key is a known secret (password, token...): a redis-uri with a password would be printed in clear. The
        // context's own list of further sensitive keywords covers it, before Main configures the component.
        // Camel hands that list to URISupport.addSanitizeKeywords, which replaces the keywords given before: the
        // list must hold every keyword of ours, or a URI's redis-uri goes unmasked.
        ExtendedCamelContext context = getCamelContext().getCamelContextExtension();
        String words = context.getAdditionalSensitiveKeywords();
        String missing = SENSITIVE_KEYWORDS.stream()
                .filter(k -> words == null || !words.toLowerCase(Locale.ROOT).contains(k))
                .collect(Collectors.joining(","));
        if (!missing.isEmpty()) {
            context.setAdditionalSensitiveKeywords(words == null || words.isBlank() ? missing : words + "," + missing);
        }
        // Camel Main binds camel.component.tokenbucket.* after this; spellings that differ in dashes it merges into one
        // key before binding (the later line wins), so only its properties show both
        String prefix = "camel.component." + getDefaultName() + ".";
        TokenBucketOptionText.refuseTwice(getCamelContext().getPropertiesComponent()
                .loadProperties(k -> k.regionMatches(true, 0, prefix, 0, prefix.length())).stringPropertyNames()
                .stream().map(k -> k.substring(prefix.length())).sorted().toList(), prefix);
        // Told before the graceful shutdown begins (Camel Main, Spring Boot and a plain stop() all pass here): the
        // producers stop only after it has waited for every in-flight exchange, so the bound on waiting
        // (stopTimeout) must start here.
        getCamelContext().addLifecycleStrategy(new LifecycleStrategySupport() {
            @Override
            public void onContextStopping(CamelContext context) {
                shared.stopping(System.nanoTime());
            }
        });
    }

    @Override
    protected void doStart() throws Exception {
        super.doStart();
        shared.start(getCamelContext(), this, workerPool, timerSpinMicros);
        if (!allowRemoteHeaders) {
            remoteHeaders = new TokenBucketRemoteHeaders();
            getCamelContext().getManagementStrategy().addEventNotifier(remoteHeaders);
        }
    }

    @Override
    protected void doStop() throws Exception {
        if (remoteHeaders != null) {
            getCamelContext().getManagementStrategy().removeEventNotifier(remoteHeaders);
            remoteHeaders = null;
        }
        shared.stop(getCamelContext());
        super.doStop();
    }

    /** What the component's endpoints share: buckets, connections, timer, worker pool, wait queues. */
    TokenBucketShared shared() {
        return shared;
    }

    /** The defaults for every endpoint's options. */
    public TokenBucketConfiguration getConfiguration() {
        return configuration;
    }

    /** Sets the defaults for every endpoint's options. */
    public void setConfiguration(TokenBucketConfiguration configuration) {
        this.configuration = configuration;
    }

    /** The Micrometer registry configured for the meters, or null (the default) to look one up. */
    public Object getMeterRegistry() {
        return meterRegistry;
    }

    /** Sets the Micrometer {@code MeterRegistry} for the endpoints' meters. Default: looked up. */
    public void setMeterRegistry(Object meterRegistry) {
        this.meterRegistry = meterRegistry;
    }

    /** The pool on which exchanges continue after waiting; null for the component's own pool (the default). */
    public ExecutorService getWorkerPool() {
        return workerPool;
    }

    /**
     * Sets the pool on which exchanges continue after waiting for their tokens. The application owns it: the
     * component does not shut it down. Default: the component's own pool named {@code TokenBucketWorker}.
     */
    public void setWorkerPool(ExecutorService workerPool) {
        this.workerPool = workerPool;
    }

    /** How long before a release time the timer spins instead of sleeping, in microseconds. Default 200. */
    public long getTimerSpinMicros() {
        return timerSpinMicros;
    }

    /**
     * Sets how long before a release time the timer spins instead of sleeping, in microseconds, from 0 (never
     * spins) to 1,000,000; read when the component starts. Default 200.
     *
     * @throws IllegalArgumentException naming the value when it is outside that range
     */
    public void setTimerSpinMicros(long timerSpinMicros) {
        if (timerSpinMicros < 0 || timerSpinMicros > TimeUnit.SECONDS.toMicros(1)) {
            throw new IllegalArgumentException("timerSpinMicros must be from 0 to 1000000 microseconds, was "
                    + timerSpinMicros);
        }
        this.timerSpinMicros = timerSpinMicros;
    }

    /** Whether messages from remote endpoints keep the component's headers. Default false. */
    public boolean isAllowRemoteHeaders() {
        return allowRemoteHeaders;
    }

    /**
     * Sets whether a message that enters from a remote endpoint ({@code Endpoint.isRemote()}) keeps the headers named
     * {@code CamelTokenBucket...} in any casing; read when the component starts. Default false: they are removed.
     */
    public void setAllowRemoteHeaders(boolean allowRemoteHeaders) {
        this.allowRemoteHeaders = allowRemoteHeaders;
    }
}
