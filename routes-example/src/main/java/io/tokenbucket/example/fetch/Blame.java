package io.tokenbucket.example.fetch;

import java.net.ConnectException;
import java.net.MalformedURLException;
import java.net.NoRouteToHostException;
import java.net.URISyntaxException;
import java.net.UnknownHostException;

import org.apache.hc.client5.http.ConnectTimeoutException;
import org.apache.hc.client5.http.RedirectException;
import org.apache.hc.client5.http.UnsupportedSchemeException;

/**
 * Whom a failed attempt counts against; the rules are in {@link FetchOutcome}'s Javadoc. Through a forward
 * proxy the scraper only ever connects to the proxy (the proxy resolves and connects to the target), which is
 * why a failure to connect is always the proxy's.
 */
public enum Blame {

    /** The proxy: counts against its health now. */
    PROXY,
    /** The URL only: another attempt on another proxy, no proxy blamed. */
    URL,
    /**
     * The URL for now; the proxy only once the same URL gets its answer through another proxy (then the target
     * was fine and this proxy was not). Nobody is blamed when the URL fails everywhere.
     */
    UNCLEAR;

    /** The blame for an attempt that ended with this status, given whether the response carries {@code Via}. */
    static Blame ofStatus(int status, boolean via) {
        if (status == 407) {
            return PROXY;
        }
        // RFC 9110 7.6.3: a proxy MUST add Via to what it forwards; so a 5xx with Via is the target's own. Without
        // Via the proxy made it, but a proxy's 502/503/504 or tinyproxy's 500 mostly means it could not reach the
        // target, or the target closed on it: unclear
        return via ? URL : UNCLEAR;
    }

    /** The blame for an attempt that ended with this exception (or one of its causes). */
    static Blame ofError(Throwable error) {
        for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
            // ConnectTimeoutException is a SocketTimeoutException: test it before anything that would be unclear
            if (e instanceof ConnectException || e instanceof ConnectTimeoutException
                    || e instanceof NoRouteToHostException || e instanceof UnknownHostException) {
                return PROXY; // refused, timed out, unreachable or unknown: the proxy's address, never the target's
            }
            if (e instanceof IllegalArgumentException || e instanceof URISyntaxException
                    || e instanceof MalformedURLException || e instanceof UnsupportedSchemeException
                    || e instanceof RedirectException) {
                return URL; // camel-http's "Invalid url", a URL that does not parse, ftp://, a redirect loop
            }
        }
        // a reset or a close without an answer after the proxy accepted, a response timeout, anything else
        return UNCLEAR;
    }
}
