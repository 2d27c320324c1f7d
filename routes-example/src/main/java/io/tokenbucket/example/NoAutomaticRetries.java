package io.tokenbucket.example;

import org.apache.camel.component.http.HttpClientConfigurer;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;

/**
 * Turns off Apache HttpClient's own retries. Its default strategy silently repeats a request answered 429 or
 * 503 after the {@code Retry-After} (and retries some I/O errors) on the same proxy: the scraper would never
 * see the 429, never rest the proxy, and a dead proxy would be tried twice per attempt. Retrying is the
 * route's job ({@link FetchOutcome}), on another proxy. Bound as {@value #BEAN} and named by the fetch URI.
 */
public class NoAutomaticRetries implements HttpClientConfigurer {

    /** The registry name the fetch URI refers to. */
    public static final String BEAN = "noAutomaticRetries";

    @Override
    public void configureHttpClient(HttpClientBuilder clientBuilder) {
        clientBuilder.disableAutomaticRetries();
    }
}
