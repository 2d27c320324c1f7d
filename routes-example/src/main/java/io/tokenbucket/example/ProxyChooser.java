package io.tokenbucket.example;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.camel.AsyncCallback;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.support.AsyncProcessorSupport;
import org.apache.camel.support.service.ServiceHelper;

/**
 * The step that starts each attempt: clears what the previous attempt left on the message, chooses a proxy
 * from the {@link ProxyPool} and puts it on the exchange (header {@value ProxyStats#PROXY_HEADER} for the
 * bucket key; host, port, credentials and limit as {@link Scrape} properties). Bound as {@value #BEAN}.
 *
 * <p>When no proxy is available (all unhealthy or penalised, or the pool is empty) the exchange waits without
 * holding a thread: the attempt is scheduled again when the first proxy comes back, or with a backoff that
 * doubles from {@value #MIN_BACKOFF_MS} ms up to {@code maxBackoffMillis} when nobody knows. No busy loop,
 * nothing dropped. The continuation runs on a worker pool, never on the timer thread, since the fetch that
 * follows blocks.
 */
public class ProxyChooser extends AsyncProcessorSupport {

    /** The registry name the routes refer to. */
    public static final String BEAN = "proxyChooser";

    static final long MIN_BACKOFF_MS = 50;

    private final ProxyPool pool;
    private final long defaultCapacity;
    private final long defaultRefillMs;
    private final long maxBackoffMillis;
    private final CamelContext context;
    private ScheduledExecutorService timer;
    private ExecutorService workers;

    /**
     * @param pool             the proxies
     * @param defaultCapacity  bucket capacity of proxies without their own limit
     * @param defaultRefillMs  refill period of proxies without their own limit
     * @param maxBackoffMillis the longest single wait when no proxy is available
     * @param context          owns the timer and worker threads
     */
    public ProxyChooser(ProxyPool pool, long defaultCapacity, long defaultRefillMs, long maxBackoffMillis,
                        CamelContext context) {
        this.pool = pool;
        this.defaultCapacity = defaultCapacity;
        this.defaultRefillMs = defaultRefillMs;
        this.maxBackoffMillis = maxBackoffMillis;
        this.context = context;
    }

    @Override
    protected void doStart() {
        timer = context.getExecutorServiceManager().newSingleThreadScheduledExecutor(this, "ProxyChooserTimer");
        workers = context.getExecutorServiceManager().newDefaultThreadPool(this, "ProxyChooser");
    }

    @Override
    protected void doStop() {
        context.getExecutorServiceManager().shutdown(timer);
        context.getExecutorServiceManager().shutdown(workers);
    }

    @Override
    public boolean process(Exchange exchange, AsyncCallback callback) {
        if (exchange.getProperty(Scrape.START_NANOS) == null) {
            exchange.setProperty(Scrape.START_NANOS, System.nanoTime());
            exchange.setProperty(Scrape.URL, exchange.getMessage().getBody(String.class).strip());
            exchange.setProperty(Scrape.ATTEMPTS, 0);
            exchange.setProperty(Scrape.TRIED, new ArrayList<String>());
            exchange.setProperty(Scrape.WAITED, 0L);
        }
        // the previous attempt's response (headers, body) must not go out with this request
        exchange.getMessage().removeHeaders("*");
        exchange.getMessage().setBody(null);
        exchange.removeProperty(Exchange.EXCEPTION_CAUGHT);
        return attempt(exchange, callback, MIN_BACKOFF_MS, true);
    }

    private boolean attempt(Exchange exchange, AsyncCallback callback, long backoff, boolean sync) {
        pool.refresh();
        @SuppressWarnings("unchecked")
        List<String> tried = exchange.getProperty(Scrape.TRIED, List.class);
        ProxyConfig proxy = pool.choose(tried);
        if (proxy != null) {
            use(exchange, proxy, tried);
            callback.done(sync);
            return sync;
        }
        if (!ServiceHelper.isStarted(this) || exchange.getContext().isStopping()) {
            exchange.setException(new IllegalStateException("No proxy available and the route is stopping"));
            callback.done(sync);
            return sync;
        }
        long known = pool.millisUntilAvailable();
        long wait = known > 0 ? Math.min(Math.max(known, MIN_BACKOFF_MS), maxBackoffMillis) : backoff;
        long nextBackoff = Math.min(backoff * 2, maxBackoffMillis);
        timer.schedule(() -> workers.execute(() -> attempt(exchange, callback, nextBackoff, false)), wait,
                TimeUnit.MILLISECONDS);
        return false;
    }

    private void use(Exchange exchange, ProxyConfig proxy, List<String> tried) {
        tried.add(proxy.id());
        exchange.setProperty(Scrape.ATTEMPTS, tried.size());
        exchange.getMessage().setHeader(ProxyStats.PROXY_HEADER, proxy.id());
        exchange.getMessage().setHeader(Exchange.HTTP_URI, exchange.getProperty(Scrape.URL));
        exchange.getMessage().setHeader(Exchange.HTTP_METHOD, "GET");
        exchange.setProperty(Scrape.PROXY_HOST, proxy.host());
        exchange.setProperty(Scrape.PROXY_PORT, proxy.port());
        exchange.setProperty(Scrape.PROXY_USER, proxy.hasCredentials() ? proxy.username() : "");
        exchange.setProperty(Scrape.PROXY_PASSWORD, proxy.hasCredentials() ? proxy.password() : "");
        exchange.setProperty(Scrape.PROXY_CAPACITY, proxy.capacity() > 0 ? proxy.capacity() : defaultCapacity);
        exchange.setProperty(Scrape.PROXY_REFILL_MS, proxy.refillPeriodMs() > 0 ? proxy.refillPeriodMs()
                : defaultRefillMs);
    }
}
