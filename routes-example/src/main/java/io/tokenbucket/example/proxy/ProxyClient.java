package io.tokenbucket.example.proxy;

import org.apache.camel.component.http.HttpClientConfigurer;
import org.apache.hc.client5.http.auth.AuthCache;
import org.apache.hc.client5.http.auth.AuthScheme;
import org.apache.hc.client5.http.auth.AuthScope;
import org.apache.hc.client5.http.auth.UsernamePasswordCredentials;
import org.apache.hc.client5.http.impl.auth.BasicCredentialsProvider;
import org.apache.hc.client5.http.impl.auth.BasicScheme;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.core5.http.HttpHost;

/**
 * How one proxy's HttpClient is set up: camel-http calls it when it builds the client of that proxy's fetch
 * endpoint, after its own settings (so nothing of Camel's overrides it). Registered by {@link ProxyClients} under
 * a generated name that the fetch URI names; the proxy's address and credentials are Java values here and never
 * pass through an endpoint URI, so no character of a password is read as URI syntax ({@code RAW()}, {@code &}) or
 * as a Camel placeholder ({@code {{env:...}}}), and no log of an endpoint shows them.
 *
 * <ul>
 * <li>the proxy, as {@code http://host:port};</li>
 * <li>its user and password for that proxy only ({@code AuthScope} of its host and port), sent with the first
 *     request (Basic, UTF-8) instead of after a 407 challenge: half the requests to the proxy, and no extra round
 *     trip between the token and the request (camel-http starts every request with a fresh context, so HttpClient
 *     would otherwise draw a 407 before every single fetch);</li>
 * <li>HttpClient's own retries off except a stale pooled connection ({@link StaleConnectionRetry});</li>
 * <li>the whole answer within the response timeout and {@value AnswerBounds#MAX_BYTES} bytes
 *     ({@link AnswerBounds}).</li>
 * </ul>
 */
public final class ProxyClient implements HttpClientConfigurer {

    private final ProxyConfig proxy;
    private final Runnable onStaleConnection;

    /**
     * @param proxy             the proxy and its credentials
     * @param onStaleConnection called for each time a fetch is sent again on another connection (the stats)
     */
    public ProxyClient(ProxyConfig proxy, Runnable onStaleConnection) {
        this.proxy = proxy;
        this.onStaleConnection = onStaleConnection;
    }

    @Override
    public void configureHttpClient(HttpClientBuilder builder) {
        HttpHost proxyHost = new HttpHost("http", proxy.host(), proxy.port());
        builder.setProxy(proxyHost);
        builder.setRetryStrategy(new StaleConnectionRetry(onStaleConnection));
        builder.addExecInterceptorFirst("tokenbucket-answer-bounds", new AnswerBounds());
        if (proxy.hasCredentials()) {
            UsernamePasswordCredentials credentials = new UsernamePasswordCredentials(proxy.username(),
                    proxy.password().toCharArray());
            BasicCredentialsProvider provider = new BasicCredentialsProvider();
            provider.setCredentials(new AuthScope(proxyHost), credentials);
            builder.setDefaultCredentialsProvider(provider);
            AuthCache preemptive = new PreemptiveBasic(proxyHost, credentials);
            // first in the chain, so the scheme is known before the first request of every execution is sent
            builder.addExecInterceptorFirst("tokenbucket-preemptive-proxy-auth", (request, scope, chain) -> {
                scope.clientContext.setAuthCache(preemptive);
                return chain.proceed(request, scope);
            });
        }
    }

    /** The proxy this client goes through. */
    public ProxyConfig proxy() {
        return proxy;
    }

    @Override
    public String toString() {
        return "ProxyClient[" + proxy + "]"; // masked
    }

    /**
     * An auth cache that holds Basic for the proxy from the start, which is how HttpClient sends credentials
     * before being challenged; it learns nothing else (the scraper sends no credentials to targets).
     */
    private static final class PreemptiveBasic implements AuthCache {
        private final HttpHost proxy;
        private final UsernamePasswordCredentials credentials;

        PreemptiveBasic(HttpHost proxy, UsernamePasswordCredentials credentials) {
            this.proxy = proxy;
            this.credentials = credentials;
        }

        @Override
        public AuthScheme get(HttpHost host) {
            if (host == null || host.getPort() != proxy.getPort()
                    || !host.getHostName().equalsIgnoreCase(proxy.getHostName())) {
                return null;
            }
            BasicScheme basic = new BasicScheme(); // a scheme holds per-request state: one each
            basic.initPreemptive(credentials);
            return basic;
        }

        @Override
        public void put(HttpHost host, AuthScheme authScheme) {
        }

        @Override
        public void remove(HttpHost host) {
        }

        @Override
        public void clear() {
        }
    }
}
