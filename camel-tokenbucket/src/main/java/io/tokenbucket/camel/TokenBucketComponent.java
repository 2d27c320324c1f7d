package io.tokenbucket.camel;

import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.store.local.LocalBucketStore;
import io.tokenbucket.store.redis.RedisConnections;
import org.apache.camel.CamelContext;
import org.apache.camel.Endpoint;
import org.apache.camel.ExtendedCamelContext;
import org.apache.camel.spi.ExecutorServiceManager;
import org.apache.camel.spi.Metadata;
import org.apache.camel.spi.PropertyConfigurer;
import org.apache.camel.spi.ThreadPoolProfile;
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
 * exchanges and sweeps idle buckets, and the worker pool on which woken exchanges continue. Unless
 * {@code allowRemoteHeaders} is set, it also removes its headers from messages that arrive from remote endpoints
 * ({@link TokenBucketRemoteHeaders}).
 */
@Component("tokenbucket")
public class TokenBucketComponent extends DefaultComponent {

    static {
        // Camel masks option values whose names hold a known keyword (password, token...) when it shows a URI;
        // a redisUri may carry a password in its user info, so its value is masked too.
        URISupport.addSanitizeKeywords("redisUri");
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

    /**
     * Tells {@code queue}, a started endpoint's, of every release under its name and when the Camel context starts
     * stopping, until {@link #unregister}.
     */
    void register(TokenBucketWaitQueue queue) {
        queues.add(queue);
    }

    void unregister(TokenBucketWaitQueue queue) {
        queues.remove(queue);
    }

    /** An exchange of the limiter {@code name} gave its in-flight slots back: the waiters of that name try again. */
    void slotsReleased(String name) {
        for (TokenBucketWaitQueue queue : queues) { // on every release: no stream; each endpoint's queue once
            if (queue.name().equals(name)) {
                queue.drain();
            }
        }
    }

    /** How often idle (full) local buckets are dropped. */
    static final long SWEEP_INTERVAL_MILLIS = 1000;

    @Metadata(description = "The defaults for every endpoint's options.")
    private TokenBucketConfiguration configuration = new TokenBucketConfiguration();

    @Metadata(label = "advanced", description = "The thread pool on which exchanges continue after waiting for their"
            + " tokens. Default: a Camel pool named TokenBucketWorker with an unbounded queue.")
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

    private final Map<String, LocalBucketStore> localStores = new ConcurrentHashMap<>();
    /** The wait queues of the started endpoints. */
    private final Set<TokenBucketWaitQueue> queues = ConcurrentHashMap.newKeySet();
    private RedisConnections redisConnections;
    private TokenBucketTimer timer;
    private ExecutorService timerThread;
    private ExecutorService ownedWorkerPool;
    private TokenBucketHandOff handOff;

    @Override
    protected Endpoint createEndpoint(String uri, String remaining, Map<String, Object> parameters) throws Exception {
        if (ObjectHelper.isEmpty(remaining)) {
            throw new IllegalArgumentException("tokenbucket: needs a limiter name, as in tokenbucket:proxies");
        }
        TokenBucketOptionText.check(parameters);
        TokenBucketEndpoint endpoint = new TokenBucketEndpoint(uri, this, remaining, configuration.copy());
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

    /** The keyword that makes Camel mask {@code camel.component.tokenbucket.redis-uri} in property summaries. */
    static final String SENSITIVE_KEYWORD = "redisuri";

    @Override
    protected void doInit() throws Exception {
        super.doInit();
        // Camel Main logs every property it applied ("Auto-configuration summary") and masks a value only when the
        // key is a known secret (password, token...): a redis-uri with a password would be printed in clear. The
        // context's own list of further sensitive keywords covers it, before Main configures the component.
        ExtendedCamelContext context = getCamelContext().getCamelContextExtension();
        String words = context.getAdditionalSensitiveKeywords();
        if (words == null || words.isBlank()) {
            context.setAdditionalSensitiveKeywords(SENSITIVE_KEYWORD);
        } else if (!words.toLowerCase(Locale.ROOT).contains(SENSITIVE_KEYWORD)) {
            context.setAdditionalSensitiveKeywords(words + "," + SENSITIVE_KEYWORD);
        }
        // Told before the graceful shutdown begins (Camel Main, Spring Boot and a plain stop() all pass here): the
        // producers stop only after it has waited for every in-flight exchange, so the bound on waiting
        // (stopTimeout) must start here.
        getCamelContext().addLifecycleStrategy(new LifecycleStrategySupport() {
            @Override
            public void onContextStopping(CamelContext context) {
                long now = System.nanoTime();
                queues.forEach(q -> q.stopping(now));
            }
        });
    }

    @Override
    protected void doStart() throws Exception {
        super.doStart();
        // The worker pool's queue is unbounded: Camel's default profile bounds it at 1000 tasks, and ten thousand
        // waiting exchanges woken at once are ten thousand continuations. The timer keeps its own heap, on a
        // thread of Camel's so that it is named and shut down like every other.
        ExecutorServiceManager pools = getCamelContext().getExecutorServiceManager();
        timer = new TokenBucketTimer(TokenBucketTimer.SYSTEM, TimeUnit.MICROSECONDS.toNanos(timerSpinMicros));
        timerThread = pools.newSingleThreadExecutor(this, "TokenBucketTimer");
        timerThread.execute(timer);
        if (workerPool == null) {
            int size = Math.max(pools.getDefaultThreadPoolProfile().getPoolSize(),
                    Runtime.getRuntime().availableProcessors());
            ownedWorkerPool = pools.newThreadPool(this, "TokenBucketWorker", unboundedProfile("TokenBucketWorker", size));
            handOff = new TokenBucketHandOff(ownedWorkerPool, size);
        } else {
            handOff = new TokenBucketHandOff(workerPool, TokenBucketHandOff.threadsOf(workerPool));
        }
        scheduleSweep(timer);
        if (!allowRemoteHeaders) {
            remoteHeaders = new TokenBucketRemoteHeaders();
            getCamelContext().getManagementStrategy().addEventNotifier(remoteHeaders);
        }
    }

    /**
     * Sweeps idle buckets {@link #SWEEP_INTERVAL_MILLIS} from now, and again as often until the timer stops. The
     * sweep runs on the worker pool, not the timer thread: it walks every bucket, and every release would wait for
     * it; the next is scheduled when it is done, so two never overlap.
     */
    private void scheduleSweep(TokenBucketTimer on) {
        try {
            on.schedule(() -> {
                try {
                    worker().execute(() -> {
                        try {
                            sweep();
                        } finally {
                            scheduleSweep(on);
                        }
                    });
                } catch (RejectedExecutionException stopping) {
                    // the pool is shutting down with the component: nothing left to sweep
                }
            }, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SWEEP_INTERVAL_MILLIS));
        } catch (RejectedExecutionException e) {
            // the component is stopping: nothing left to sweep
        }
    }

    @Override
    protected void doStop() throws Exception {
        if (remoteHeaders != null) {
            getCamelContext().getManagementStrategy().removeEventNotifier(remoteHeaders);
            remoteHeaders = null;
        }
        if (timer != null) {
            timer.stop();
            getCamelContext().getExecutorServiceManager().shutdownNow(timerThread);
            timer = null;
            timerThread = null;
        }
        if (ownedWorkerPool != null) {
            getCamelContext().getExecutorServiceManager().shutdown(ownedWorkerPool);
            ownedWorkerPool = null;
        }
        localStores.clear();
        closeRedisConnections();
        super.doStop();
    }

    private static ThreadPoolProfile unboundedProfile(String name, int size) {
        ThreadPoolProfile profile = new ThreadPoolProfile(name);
        profile.setPoolSize(size);
        profile.setMaxPoolSize(size);
        profile.setMaxQueueSize(-1);
        profile.setAllowCoreThreadTimeOut(true);
        profile.setKeepAliveTime(60L);
        profile.setTimeUnit(TimeUnit.SECONDS);
        return profile;
    }

    /** The local buckets of the limiter {@code name}, shared by every endpoint with that name. */
    LocalBucketStore localStore(String name) {
        return localStores.computeIfAbsent(name, n -> new LocalBucketStore());
    }

    /** The local buckets of the limiter {@code name} if any were made, else null. */
    LocalBucketStore existingLocalStore(String name) {
        return localStores.get(name);
    }

    /** The Redis connections of this component's endpoints, created when the first Redis endpoint starts. */
    synchronized RedisConnections redisConnections() {
        if (redisConnections == null) {
            redisConnections = new RedisConnections();
        }
        return redisConnections;
    }

    private synchronized void closeRedisConnections() {
        if (redisConnections != null) {
            redisConnections.close();
            redisConnections = null;
        }
    }

    /** Drops idle buckets of every limiter; runs on the worker pool once a second. */
    void sweep() {
        localStores.values().forEach(LocalBucketStore::sweep);
    }

    /** The timer that wakes waiting exchanges (and sweeps); it only hands them to {@link #worker()}. */
    TokenBucketTimer timer() {
        return timer;
    }

    /** Where exchanges continue after waiting: the worker pool, in batches, or their waiting caller. */
    TokenBucketHandOff handOff() {
        return handOff;
    }

    /** The pool on which exchanges continue after waiting. */
    ExecutorService worker() {
        return workerPool != null ? workerPool : ownedWorkerPool;
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
