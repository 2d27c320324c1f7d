package io.tokenbucket.example.proxy;

import java.io.IOException;

import org.apache.hc.client5.http.HttpRequestRetryStrategy;
import org.apache.hc.client5.http.protocol.HttpClientContext;
import org.apache.hc.core5.http.EndpointDetails;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.Method;
import org.apache.hc.core5.http.NoHttpResponseException;
import org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.hc.core5.util.TimeValue;

/**
 * HttpClient's retry decision for the fetches: only for a GET that met a stale pooled connection.
 *
 * <p>Many proxies (tinyproxy, squid in some setups, commercial gateways) close their client connection after
 * every response without saying so; HttpClient keeps the connection in its pool and the next request on it gets
 * no answer at all ({@code NoHttpResponseException: The target server failed to respond}). On such a connection
 * the proxy never read the request, so sending it again on another connection is still one request at the target
 * for one token. That is the only case retried: the failure is {@link NoHttpResponseException} (the connection
 * closed before a single byte of a response) and the connection had already carried a request before this one
 * (its request count, {@link EndpointDetails#getRequestCount()}, is above 1). On a fresh connection the proxy may
 * have forwarded the request before failing, and a retry would be a second request at the target for one token,
 * so that failure goes to the route ({@code FetchOutcome}: an unclear failure, see {@code Blame}, and another
 * attempt). The request is sent again as often as it meets such a connection (HttpClient leases the next one from
 * the pool, which may have been closed too when several fetches run through the proxy at once; each dead one is
 * discarded), at most {@value #MAX_RETRIES} times, and stops at the first failure on a fresh connection. No answer
 * is ever retried here: a 429 or 503 must reach {@code FetchOutcome}, which rests the proxy, and HttpClient's
 * default would silently repeat it on the same proxy after the {@code Retry-After}.
 *
 * <p>A retry here is no attempt and no proxy failure (the route never sees it); {@code onRetry} counts it.
 */
public final class StaleConnectionRetry implements HttpRequestRetryStrategy {

    /** A bound only: every retry needs another dead pooled connection, and each is discarded when it fails. */
    static final int MAX_RETRIES = 10;

    private final Runnable onRetry;

    /** @param onRetry called for each retry (the stats' stale-connection count) */
    public StaleConnectionRetry(Runnable onRetry) {
        this.onRetry = onRetry;
    }

    @Override
    public boolean retryRequest(HttpRequest request, IOException exception, int execCount, HttpContext context) {
        boolean retry = execCount <= MAX_RETRIES && Method.GET.isSame(request.getMethod())
                && exception instanceof NoHttpResponseException && reused(context);
        if (retry) {
            onRetry.run();
        }
        return retry;
    }

    /** Whether the connection the request failed on had carried a request before (set by HttpClient on sending). */
    static boolean reused(HttpContext context) {
        EndpointDetails connection = HttpClientContext.castOrCreate(context).getEndpointDetails();
        return connection != null && connection.getRequestCount() > 1;
    }

    @Override
    public boolean retryRequest(HttpResponse response, int execCount, HttpContext context) {
        return false;
    }

    @Override
    public TimeValue getRetryInterval(HttpResponse response, int execCount, HttpContext context) {
        return TimeValue.ZERO_MILLISECONDS;
    }
}
