package io.tokenbucket.example.fetch;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.example.proxy.ProxyBuckets;
import io.tokenbucket.example.proxy.ProxyConfig;
import io.tokenbucket.example.proxy.ProxyLimits;
import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.AsyncCallback;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.ThreadPoolProfileBuilder;
import org.apache.camel.support.AsyncProcessorSupport;
import org.apache.camel.support.service.ServiceHelper;

/**
 * The step that starts each attempt (after {@link ScrapeStart} set the URL up): clears what the previous attempt
 * left on the message, chooses from the {@link ProxyPool} and names every bucket the throttle
 * ({@code ScraperRoute.THROTTLE}) charges, in one atomic step, for the attempt ({@link ProxyLimits} knows their
 * keys and limits):
 * <ul>
 * <li>with {@code example.choose=freest} (the default) header {@code CamelTokenBucketCandidates} holds one group
 *     per available proxy this URL has not tried yet, {@code [proxy id, pair key]} (a {@link List} of lists, so
 *     any character of an id is data): the throttle takes the group whose proxy and (proxy, host) pair, with the
 *     host, allow soonest and writes its proxy's id into header {@value ProxyStats#PROXY_HEADER}. A URL thus never
 *     waits on a slow proxy, nor on a pair that a 429 penalized or cut (here or, with Redis, on another instance),
 *     while another proxy is free for its host;</li>
 * <li>with {@code example.choose=roundrobin} (and whenever the throttle is off) it sets
 *     {@value ProxyStats#PROXY_HEADER} itself, in round robin, and names the pair as an all-of key;</li>
 * <li>with {@code example.hostLimit} the URL's host's bucket is an all-of key ({@code CamelTokenBucketAllOf}),
 *     charged with whichever proxy is chosen.</li>
 * </ul>
 * {@link ProxyInUse} then puts the chosen proxy's settings on the exchange. A pair's rest after a 429 is kept where
 * the choice reads it ({@link ProxyBuckets}): with the freest choice in the pair's bucket, which the throttle passes
 * by while another proxy is free for the host; in round robin in the pool, whose resting pair's proxy is no
 * candidate for that host ({@link ProxyPool#candidates(java.util.Collection, String)}), and still one for other
 * hosts (with the throttle its bucket is told too). Bound as {@value #BEAN}.
 *
 * <p>When no proxy is available for the URL's host (all unhealthy, or resting there in round robin, or the
 * pool is empty) the exchange waits without
 * holding a thread: the attempt is scheduled again when the first proxy comes back, or with a backoff that
 * doubles from {@value #MIN_BACKOFF_MS} ms up to {@code maxBackoffMillis} when nobody knows. No busy loop,
 * nothing dropped. The continuation runs on a worker pool, never on the timer thread, since the fetch that
 * follows blocks.
 */
public class ProxyChooser extends AsyncProcessorSupport {

    /** The registry name the routes refer to. */
    public static final String BEAN = "proxyChooser";

    /** The most {@code example.maxInFlight} may be: URLs in flight, each of which may wait here for a proxy. */
    public static final int MAX_IN_FLIGHT = 100_000;

    static final long MIN_BACKOFF_MS = 50;

    private final ProxyPool pool;
    private final boolean freest;
    private final long maxBackoffMillis;
    private final CamelContext context;
    private final boolean perHost;
    private ScheduledExecutorService timer;
    private ExecutorService workers;

    /**
     * @param pool             the proxies
     * @param freest           true: offer every available proxy as a candidate and let {@code tokenbucket:}
     *                         take the freest; false: round robin (also what a run without the throttle needs)
     * @param maxBackoffMillis the longest single wait when no proxy is available
     * @param context          owns the timer and worker threads
     */
    public ProxyChooser(ProxyPool pool, boolean freest, long maxBackoffMillis, CamelContext context) {
        this(pool, freest, maxBackoffMillis, context, false);
    }

    /**
     * @param pool             the proxies
     * @param freest           true: offer every available proxy as a candidate and let {@code tokenbucket:}
     *                         take the freest; false: round robin (also what a run without the throttle needs)
     * @param maxBackoffMillis the longest single wait when no proxy is available
     * @param context          owns the timer and worker threads
     * @param perHost          whether {@code example.hostLimit} is set: then the URL's host's bucket
     *                         ({@link ProxyLimits#hostKey}) is named in header {@code CamelTokenBucketAllOf}, so the
     *                         throttle charges it together with the proxy's and the pair's, in one atomic step
     */
    public ProxyChooser(ProxyPool pool, boolean freest, long maxBackoffMillis, CamelContext context,
                        boolean perHost) {
        this.perHost = perHost;
        this.pool = pool;
        this.freest = freest;
        this.maxBackoffMillis = maxBackoffMillis;
        this.context = context;
    }

    @Override
    protected void doStart() {
        // every URL waiting for a proxy is one task here, about example.maxInFlight of them at most (the queue's
        // consumers may pass the mark together): Camel's default profile would refuse the 1,001st
        // (RejectedExecutionException, which fails the URL with no outcome at all)
        timer = context.getExecutorServiceManager().newScheduledThreadPool(this, "ProxyChooserTimer",
                new ThreadPoolProfileBuilder("proxyChooserTimer").poolSize(1).maxQueueSize(2 * MAX_IN_FLIGHT)
                        .build());
        workers = context.getExecutorServiceManager().newDefaultThreadPool(this, "ProxyChooser");
    }

    @Override
    protected void doStop() {
        context.getExecutorServiceManager().shutdown(timer);
        context.getExecutorServiceManager().shutdown(workers);
    }

    @Override
    public boolean process(Exchange exchange, AsyncCallback callback) {
        // the previous attempt's response (headers, body) and bucket headers must not go out with this request
        exchange.getMessage().removeHeaders("*");
        exchange.getMessage().setBody(null);
        exchange.removeProperty(Exchange.EXCEPTION_CAUGHT);
        return attempt(exchange, callback, MIN_BACKOFF_MS, true);
    }

    private boolean attempt(Exchange exchange, AsyncCallback callback, long backoff, boolean sync) {
        pool.refresh();
        @SuppressWarnings("unchecked")
        List<String> tried = exchange.getProperty(Scrape.TRIED, List.class);
        // in round robin, a proxy whose pair with this URL's host rests after a 429 is no candidate for it
        String host = exchange.getProperty(Scrape.HOST, String.class);
        if (freest) {
            List<String> candidates = pool.candidates(tried, host);
            if (!candidates.isEmpty()) {
                offer(exchange, candidates, host);
                callback.done(sync);
                return sync;
            }
        } else {
            ProxyConfig proxy = pool.choose(tried, host);
            if (proxy != null) {
                use(exchange, proxy, host);
                callback.done(sync);
                return sync;
            }
        }
        if (!ServiceHelper.isStarted(this) || exchange.getContext().isStopping()) {
            exchange.setException(new IllegalStateException("No proxy available and the route is stopping"));
            callback.done(sync);
            return sync;
        }
        long known = pool.millisUntilAvailable(host);
        long wait = known > 0 ? Math.min(Math.max(known, MIN_BACKOFF_MS), maxBackoffMillis) : backoff;
        long nextBackoff = Math.min(backoff * 2, maxBackoffMillis);
        timer.schedule(() -> workers.execute(() -> attempt(exchange, callback, nextBackoff, false)), wait,
                TimeUnit.MILLISECONDS);
        return false;
    }

    /** Round robin: the proxy is chosen; the throttle charges its pair (and the host) with it. */
    private void use(Exchange exchange, ProxyConfig proxy, String host) {
        exchange.getMessage().setHeader(ProxyStats.PROXY_HEADER, proxy.id());
        List<String> allOf = new ArrayList<>(2);
        if (host != null) {
            allOf.add(ProxyLimits.pairKey(proxy.id(), host));
        }
        addHost(allOf, host);
        setAllOf(exchange, allOf);
    }

    /**
     * The freest: one group per candidate, its proxy's key first (the key the throttle names on success), then its
     * pair's; all of a group are charged together with the host's bucket, or none.
     */
    private void offer(Exchange exchange, List<String> candidates, String host) {
        List<List<String>> groups = new ArrayList<>(candidates.size());
        for (String proxy : candidates) {
            groups.add(host == null ? List.of(proxy) : List.of(proxy, ProxyLimits.pairKey(proxy, host)));
        }
        exchange.getMessage().setHeader(TokenBucketConstants.CANDIDATES, groups);
        List<String> allOf = new ArrayList<>(1);
        addHost(allOf, host);
        setAllOf(exchange, allOf);
    }

    /** Per-host politeness: the host's bucket is charged with the chosen proxy's, atomically, at one instant. */
    private void addHost(List<String> allOf, String host) {
        if (perHost && host != null) {
            allOf.add(ProxyLimits.hostKey(host));
        }
    }

    private static void setAllOf(Exchange exchange, List<String> allOf) {
        if (!allOf.isEmpty()) {
            exchange.getMessage().setHeader(TokenBucketConstants.ALL_OF, allOf);
        }
    }
}
