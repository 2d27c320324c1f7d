package io.tokenbucket.example.fetch;

import io.tokenbucket.example.proxy.ProxyClient;
import io.tokenbucket.example.proxy.ProxyClients;

/**
 * Names of the exchange properties one URL carries through its attempts. Exchange properties rather than
 * headers on purpose: headers go out with the HTTP request and show in logs; the bookkeeping must do neither.
 * The proxy's credentials never travel on the exchange at all (each proxy's HttpClient holds its own,
 * {@link ProxyClient}).
 */
public final class Scrape {

    /** The URL to fetch (the body read from the queue). */
    public static final String URL = "scrapeUrl";
    /** {@code System.nanoTime()} when the URL was taken from the queue. */
    public static final String START_NANOS = "scrapeStartNanos";
    /** {@code System.nanoTime()} when the current attempt's fetch began (its token granted, its proxy set). */
    public static final String FETCH_NANOS = "scrapeFetchNanos";
    /** Attempts made so far (an attempt is one proxy chosen for the URL). */
    public static final String ATTEMPTS = "scrapeAttempts";
    /**
     * Attempts whose 429 was the host's word and cut the pair's adaptive rate (Integer, absent: none): the rate was
     * being found, so they are not counted in {@code example.maxAttempts}, up to that many of them
     * ({@link FetchOutcome}).
     */
    public static final String RATE_CUTS = "scrapeRateCuts";
    /** The ids of the proxies tried so far, in order ({@code List<String>}). */
    public static final String TRIED = "scrapeTried";
    /** Milliseconds waited for tokens over all attempts, the time refused for want of one included. */
    public static final String WAITED = "scrapeWaited";
    /**
     * The current attempt's proxy id and its wait for tokens in milliseconds, noted before the fetch
     * ({@link ProxyInUse}): camel-http replaces the message, headers and all, before it reads a body that may break
     * off.
     */
    public static final String PROXY = "scrapeProxy";
    /** See {@link #PROXY}. */
    public static final String ATTEMPT_WAITED = "scrapeAttemptWaited";
    /** True once the URL has its outcome; ends the attempt loop. */
    public static final String DONE = "scrapeDone";
    /** {@value #FETCHED} or {@value #DEAD}. */
    public static final String OUTCOME = "scrapeOutcome";
    /** The last HTTP status (Integer), absent when no answer came. */
    public static final String STATUS = "scrapeStatus";
    /** Why the last attempt failed. */
    public static final String REASON = "scrapeReason";
    /**
     * The proxies whose failure on this URL was unclear, each with its reason ({@code Map<String, String>}): held
     * against them only if the URL then gets its answer through another proxy ({@link FetchOutcome}).
     */
    public static final String SUSPECTS = "scrapeSuspects";

    /** The URL's host key ({@link HostKey}): its per-host bucket and its (proxy, host) pairs. */
    public static final String HOST = "scrapeHost";

    /** The URL checked and encoded for camel-http ({@link TargetUrl}); absent when it was refused. */
    public static final String TARGET = "scrapeTarget";
    /**
     * The registry name of the chosen proxy's {@link ProxyClient}, which the fetch URI names: a generated name
     * ({@link ProxyClients}), never the proxy's id or credentials, since Camel resolves that URI.
     */
    public static final String PROXY_CLIENT = "proxyClient";

    /** Outcome: fetched, delivered to the results endpoint. */
    public static final String FETCHED = "fetched";
    /** Outcome: failed on every attempt, delivered to the dead-letter endpoint. */
    public static final String DEAD = "dead";

    private Scrape() {
    }
}
