package io.tokenbucket.example.proxy;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.camel.CamelContext;
import org.apache.camel.Endpoint;
import org.apache.camel.component.http.HttpClientConfigurer;
import org.apache.camel.component.http.HttpEndpoint;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One fetch endpoint per proxy: each proxy of the pool gets a {@link ProxyClient} in the registry under a generated
 * name ({@value #PREFIX}1, {@value #PREFIX}2, ...), and the fetch URI ({@link #fetchUri}) names it, so
 * every proxy has a camel-http endpoint, an HttpClient and a connection pool of its own. The name is made here and
 * holds nothing of the proxy line: the fetch URI is resolved by Camel, the proxy's text must never be.
 *
 * <p>Kept in step with the pool ({@link ProxyPool#onInstall}): a new or changed proxy (another password, say) gets
 * a new name and endpoint; the endpoint of a proxy that left or changed is stopped and removed, and its name
 * unbound (a fetch still running on it at that moment fails, and is retried like any failed attempt). The
 * endpoints and their HttpClients are made when the context starts (which then also warms the fetch path up,
 * {@link FetchWarmUp}), or when the proxy arrives, never between a URL's token and its request. A Camel service:
 * started with the context, before the routes.
 */
public class ProxyClients extends ServiceSupport {

    /** The start of every generated registry name. */
    public static final String PREFIX = "proxyClient";

    /**
     * The fetch endpoint URI of the {@link ProxyClient} bound as {@code clientName} (the route's fetch,
     * {@code ScraperRoute.FETCH}): camel-http, non-2xx answers not thrown, and only options camel-http knows.
     */
    public static String fetchUri(String clientName) {
        return "http://scrape-target?throwExceptionOnFailure=false&httpClientConfigurer=#" + clientName;
    }

    private static final Logger LOG = LoggerFactory.getLogger(ProxyClients.class);

    private final CamelContext context;
    private final ProxyStats stats;
    private final boolean warmUp;
    private volatile Map<ProxyConfig, String> names = Map.of();
    private final Map<String, Endpoint> endpoints = new ConcurrentHashMap<>();
    private long next = 1;

    /**
     * @param context where the clients are bound and the endpoints made
     * @param stats   counts each proxy's stale-connection retries
     * @param warmUp  whether to warm the fetch path up when the context starts ({@link FetchWarmUp})
     */
    public ProxyClients(CamelContext context, ProxyStats stats, boolean warmUp) {
        this.context = context;
        this.stats = stats;
        this.warmUp = warmUp;
    }

    /** The registry name of the client for this proxy (as configured now), or null when it has none. */
    public String nameOf(ProxyConfig proxy) {
        return names.get(proxy);
    }

    /** Takes in the pool's list: clients for new or changed proxies, none left for those that are gone. */
    public synchronized void install(List<ProxyConfig> proxies) {
        Map<ProxyConfig, String> old = names;
        Map<ProxyConfig, String> current = new LinkedHashMap<>();
        for (ProxyConfig proxy : proxies) {
            String name = old.get(proxy);
            if (name == null) {
                name = PREFIX + next++;
                context.getRegistry().bind(name, HttpClientConfigurer.class,
                        new ProxyClient(proxy, () -> stats.staleConnection(proxy.id())));
                if (isStarted() || isStarting()) {
                    endpoint(name);
                }
            }
            current.put(proxy, name);
        }
        names = Map.copyOf(current);
        old.forEach((proxy, name) -> {
            if (!current.containsKey(proxy)) {
                retire(name);
            }
        });
    }

    @Override
    protected void doStart() {
        // before the routes start: the first URL's fetch finds its endpoint and HttpClient made, and (warm-up) the
        // classes of the whole fetch path loaded
        names.values().forEach(this::endpoint);
        if (warmUp) {
            FetchWarmUp.run(context);
        }
    }

    /** The fetch endpoint of a client, made (with its HttpClient) if it is not yet. */
    HttpEndpoint endpoint(String name) {
        HttpEndpoint endpoint = context.getEndpoint(fetchUri(name), HttpEndpoint.class);
        endpoint.getHttpClient();
        endpoints.put(name, endpoint);
        return endpoint;
    }

    private void retire(String name) {
        Endpoint endpoint = endpoints.remove(name);
        if (endpoint != null) {
            try {
                context.removeEndpoint(endpoint); // stops it: its connection pool is closed
            } catch (Exception e) {
                LOG.warn("Could not remove the fetch endpoint of {}: {}", name, e.getMessage());
            }
        }
        context.getRegistry().unbind(name);
    }

}
