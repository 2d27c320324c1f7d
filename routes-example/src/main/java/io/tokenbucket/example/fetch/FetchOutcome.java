package io.tokenbucket.example.fetch;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import io.tokenbucket.example.proxy.BucketSteps;
import io.tokenbucket.example.proxy.ProxyBuckets;
import io.tokenbucket.example.proxy.ProxyConfig;
import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxyStats;
import io.tokenbucket.example.proxy.RestBackoff;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;

/**
 * The step that ends each attempt: classifies what the fetch got, tells the {@link ProxyPool} and the
 * {@link ProxyStats}, and decides whether the URL is done. Bound as {@value #BEAN}.
 *
 * <p>Who is to blame ({@link Blame}) decides what a failure costs. A proxy failure counts against the proxy's
 * health ({@code example.failuresToUnhealthy} in a row take it out for {@code example.cooldown}); every other
 * failure counts against the URL only: it is tried again on another proxy, {@code example.maxAttempts} times in
 * all, then goes to the dead letter with the reason, and no proxy is blamed. So a hostile or broken target
 * cannot bench the fleet.
 * <ul>
 * <li>the URL's own answer (2xx, 3xx, 4xx other than 407/429): done, to the results; the proxy did its job;</li>
 * <li>against the proxy: no connection to the proxy (refused, connect timeout, no route, unknown proxy host;
 *     through a forward proxy the scraper never connects to the target itself), and 407;</li>
 * <li>against the URL: a 5xx that carries {@code Via} (a proxy must add {@code Via} to what it forwards, RFC
 *     9110 §7.6.3, so this is the target's own), and errors that say the URL itself is bad (camel-http's
 *     "Invalid url", a URL that does not parse, an unsupported scheme, a redirect loop);</li>
 * <li>unclear, against the URL for now: a 5xx without {@code Via} (made by the proxy, but a proxy's 502, 503,
 *     504 or 500 mostly says that it could not reach the target or that the target closed on it), a connection
 *     reset or closed without an answer after the proxy accepted, a response timeout, and any other error. Such
 *     a failure is held against its proxy only when the same URL then gets its answer through another proxy:
 *     the target was fine, so that proxy was not ("delayed blame"). A proxy that answers 5xx to everything is
 *     thus taken out as soon as the URLs succeed elsewhere, and a dead target costs no proxy anything;</li>
 * <li>429: no failure of anyone, and with {@code example.adaptive} one that cut the pair's rate does not even
 *     spend one of the URL's {@code example.maxAttempts} (at most that many such 429s are free): while the pairs
 *     search for the host's rate, their 429s are the search, not the URL's fault. The (proxy, host) pair rests for the target's {@code Retry-After} ({@link RetryAfter}: seconds or an
 *     HTTP date, at most {@code example.maxRetryAfter}; {@code example.penalty} when absent or nonsense), longer
 *     while that pair's 429s repeat ({@link RestBackoff}): with the throttle its bucket is penalized, and in round
 *     robin (always so without the throttle) the pool rests it ({@link io.tokenbucket.example.proxy.PoolRests});
 *     the proxy goes on
 *     serving other hosts, and the URL is tried on another proxy. With {@code example.adaptive} a 429 of the
 *     target's own also cuts the pair's rate ({@link ProxyPool#throttled}), and one that names no
 *     {@code Retry-After} only does that: the pair slows down instead of stopping. A 429 is the target's own
 *     unless it carries {@code Proxy-Status} (RFC 9209: how a proxy says that an answer is its own), with or
 *     without {@code Via}: many proxies strip {@code Via} (tinyproxy's {@code DisableViaHeader}, anonymising
 *     ones), and taking their forwarded 429s for their own would leave the rate at its ceiling. A proxy's own 429
 *     rests the pair and cuts nothing. A host's 429 is the URL's own instead, not the host's word about the pair,
 *     when the same URL was refused before through another proxy and both pairs passed the host's other pages
 *     (a 2xx through the pair within {@code example.forgiveAfter}, and no other 429 through it for as long):
 *     nothing is cut, the pairs rest no longer than one {@code example.penalty}, and the URL goes on to its next
 *     attempt, or to the dead letter with a reason that says so ({@link ProxyPool#refused} has the rule). With the
 *     buckets in Redis that verdict is the fleet's ({@link UrlVerdicts}): every instance treats the page so from
 *     its first 429.</li>
 * <li>503 of the target's own (with {@code Via}): as any target 5xx, and with {@code example.adaptive} it cuts the
 *     pair's rate too. A 503 without {@code Via} cuts nothing: a proxy's own 503 mostly says it could not reach
 *     the target, nothing about the host's rate.</li>
 * </ul>
 */
public class FetchOutcome implements Processor {

    /** The registry name the routes refer to. */
    public static final String BEAN = "fetchOutcome";

    /** The exchange property with the URL's 429s from its host ({@code List<ProxyPool.Refusal>}). */
    static final String REFUSALS = "scrapeRefusals";

    private final ProxyPool pool;
    private final ProxyStats stats;
    private final int maxAttempts;
    private final RetryAfter retryAfter;
    private final boolean adaptive;
    private final boolean routeSteps;
    private final UrlVerdicts verdicts;

    /**
     * Without the adaptive rate: every 429 rests its pair.
     *
     * @param pool        told about each proxy's success, failure or penalty
     * @param stats       counts per proxy
     * @param maxAttempts attempts per URL before it goes to the dead letter, at least 1
     * @param retryAfter  how long a 429 asks its (proxy, host) pair to rest
     */
    public FetchOutcome(ProxyPool pool, ProxyStats stats, int maxAttempts, RetryAfter retryAfter) {
        this(pool, stats, maxAttempts, retryAfter, false);
    }

    /**
     * @param pool        told about each proxy's success, failure, penalty or throttling
     * @param stats       counts per proxy
     * @param maxAttempts attempts per URL before it goes to the dead letter, at least 1
     * @param retryAfter  how long a 429 asks its (proxy, host) pair to rest
     * @param adaptive    {@code example.adaptive}: a host's 429 without {@code Retry-After} only cuts the pair's
     *                    rate, it does not rest the pair
     */
    public FetchOutcome(ProxyPool pool, ProxyStats stats, int maxAttempts, RetryAfter retryAfter, boolean adaptive) {
        this(pool, stats, maxAttempts, retryAfter, adaptive, false);
    }

    /**
     * @param pool        told about each proxy's success, failure, penalty or throttling
     * @param stats       counts per proxy
     * @param maxAttempts attempts per URL before it goes to the dead letter, at least 1
     * @param retryAfter  how long a 429 asks its (proxy, host) pair to rest
     * @param adaptive    {@code example.adaptive}: a host's 429 without {@code Retry-After} only cuts the pair's
     *                    rate, it does not rest the pair
     * @param routeSteps  whether the pairs' buckets are told by the route ({@link BucketSteps}, with the throttle):
     *                    the penalties and cuts an attempt owes go on the exchange, and to the pool's own
     *                    {@link ProxyBuckets} too (the rests it keeps in round robin)
     */
    public FetchOutcome(ProxyPool pool, ProxyStats stats, int maxAttempts, RetryAfter retryAfter, boolean adaptive,
                        boolean routeSteps) {
        this(pool, stats, maxAttempts, retryAfter, adaptive, routeSteps, UrlVerdicts.NONE);
    }

    /**
     * As above, with the fleet's verdicts on URLs whose 429s are their own ({@link UrlVerdicts}): one that an
     * instance found is such a URL from its first 429 everywhere.
     */
    public FetchOutcome(ProxyPool pool, ProxyStats stats, int maxAttempts, RetryAfter retryAfter, boolean adaptive,
                        boolean routeSteps, UrlVerdicts verdicts) {
        this.verdicts = verdicts;
        this.adaptive = adaptive;
        this.routeSteps = routeSteps;
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("example.maxAttempts must be at least 1, was " + maxAttempts);
        }
        this.pool = pool;
        this.stats = stats;
        this.maxAttempts = maxAttempts;
        this.retryAfter = retryAfter;
    }

    @Override
    public void process(Exchange exchange) {
        // as noted before the fetch: a body that breaks off leaves an exchange without the attempt's headers
        String proxy = exchange.getProperty(Scrape.PROXY, String.class);
        exchange.getMessage().setHeader(ProxyStats.PROXY_HEADER, proxy);
        long waited = exchange.getProperty(Scrape.ATTEMPT_WAITED, 0L, Long.class);
        Exception error = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, Exception.class);
        Integer status = error == null ? exchange.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE, Integer.class)
                : null;
        exchange.setProperty(Scrape.STATUS, status);
        ProxyBuckets tell = tell(exchange);

        String failure;
        Blame blame;
        if (error != null || status == null) {
            failure = error == null ? "no response" : describe(error, pool.config(proxy));
            blame = error == null ? Blame.UNCLEAR : Blame.ofError(error);
        } else if (status == 429) {
            String host = exchange.getProperty(Scrape.HOST, String.class);
            String asked = exchange.getMessage().getHeader("Retry-After", String.class);
            if (exchange.getMessage().getHeader("Proxy-Status") == null) {
                failure = hostRefused(exchange, proxy, host, asked, tell);
            } else {
                // the proxy's own 429: its pair rests, nothing is cut
                failure = "HTTP 429 (rests " + pool.penalize(proxy, host, retryAfter.millis(asked), tell) + " ms)";
            }
            blame = null; // not a failure of anyone: the pair rests or slows down, the URL is tried elsewhere
            stats.tooManyRequests(proxy, waited);
        } else if (status == 407 || status >= 500) {
            boolean via = exchange.getMessage().getHeader("Via") != null;
            blame = Blame.ofStatus(status, via);
            failure = "HTTP " + status + (status == 407 || via ? "" : " from the proxy");
            if (status == 503 && via) {
                // the target's own 503 (overloaded): the pair slows down; a 503 without Via is the proxy's own
                pool.throttled(proxy, exchange.getProperty(Scrape.HOST, String.class), tell);
            }
        } else {
            fetched(exchange, proxy, waited, tell);
            return;
        }
        if (blame != null) {
            stats.failure(proxy, waited);
            if (blame == Blame.PROXY) {
                pool.failure(proxy, failure);
            } else if (blame == Blame.UNCLEAR && proxy != null) {
                suspects(exchange).putIfAbsent(proxy, failure);
            }
        }
        exchange.setProperty(Scrape.REASON, failure + " via " + proxy);
        // a 429 that cut the pair's adaptive rate was the rate being found, not a failure of the URL: up to
        // maxAttempts of them are not counted, so a URL makes at most twice maxAttempts attempts
        int free = Math.min(maxAttempts, exchange.getProperty(Scrape.RATE_CUTS, 0, Integer.class));
        boolean last = exchange.getProperty(Scrape.ATTEMPTS, 0, Integer.class) - free >= maxAttempts;
        if (status == null || status != 429 || last) {
            // no 429 of the URL's own follows any more: its 429s still pending were the host's word
            pool.settle(refusals(exchange), exchange.getProperty(Scrape.HOST, String.class), tell);
        }
        if (last) {
            deadLetter(exchange, stats);
        }
    }

    /**
     * The URL's attempts ended without this step (no token within {@code example.storeRetries}, a route failure:
     * {@link StoreUnavailable}, {@link RouteFailure}): no 429 of its own follows, so its refusals still pending were
     * the host's word and the pairs owe the rest of their rests ({@link ProxyPool#settle}). With the throttle the
     * route then runs the steps this puts on the exchange ({@link BucketSteps}), as after this step.
     */
    public void ended(Exchange exchange) {
        pool.settle(refusals(exchange), exchange.getProperty(Scrape.HOST, String.class), tell(exchange));
    }

    /** Where the pairs' penalties and cuts of this exchange's attempt go. */
    private ProxyBuckets tell(Exchange exchange) {
        return routeSteps ? BucketSteps.of(exchange, adaptive).and(pool.buckets()) : pool.buckets();
    }

    /**
     * The host's own 429 (the proxy forwarded it, Via or not), judged by {@link ProxyPool#refused}. As the host's
     * word about this proxy's address: the pair's adaptive rate is cut and the pair rests (longer when its 429s
     * keep coming), the proxy goes on serving other hosts; with the adaptive rate, a 429 that names no time is left
     * to the rate's cut, since a rest of example.penalty on top would stop the pair for longer than the overload.
     * As the URL's own (refused through two proxies while the host's other pages passed through both): nothing is
     * cut, and the pairs rest no longer than one short penalty.
     *
     * @return the attempt's failure, for the URL's reason
     */
    private String hostRefused(Exchange exchange, String proxy, String host, String asked, ProxyBuckets tell) {
        List<ProxyPool.Refusal> refusals = refusals(exchange);
        String url = exchange.getProperty(Scrape.URL, String.class);
        boolean known = verdicts.knows(url);
        ProxyPool.Refusal refusal = pool.refused(proxy, host, adaptive && asked == null ? -1
                : retryAfter.millis(asked), refusals, tell, known);
        refusals.add(refusal);
        if (refusal.alone() && !known) {
            verdicts.tell(url);
        }
        if (adaptive && !refusal.alone() && host != null && pool.config(proxy) != null) {
            // the host's word cut the pair's rate (ProxyPool#refused): this attempt is not spent
            exchange.setProperty(Scrape.RATE_CUTS, exchange.getProperty(Scrape.RATE_CUTS, 0, Integer.class) + 1);
        }
        String rest = refusal.restMillis() > 0 ? "rests " + refusal.restMillis() + " ms" : null;
        if (!refusal.alone()) {
            return "HTTP 429 (" + (rest == null ? "rate cut" : rest) + ")";
        }
        if (known) {
            return "HTTP 429 of this URL alone (so found in the fleet; " + (rest == null ? "no rest" : rest) + ")";
        }
        String through = refusals.stream().filter(ProxyPool.Refusal::passing).map(ProxyPool.Refusal::proxy).distinct()
                .collect(Collectors.joining(", "));
        return "HTTP 429 of this URL alone (refused through " + through + " while other pages of the host passed"
                + " through them; " + (rest == null ? "no rest" : rest) + ")";
    }

    /** The URL's 429s from its host so far ({@link ProxyPool#refused}): at most one per attempt. */
    @SuppressWarnings("unchecked")
    private static List<ProxyPool.Refusal> refusals(Exchange exchange) {
        List<ProxyPool.Refusal> refusals = exchange.getProperty(REFUSALS, List.class);
        if (refusals == null) {
            refusals = new ArrayList<>();
            exchange.setProperty(REFUSALS, refusals);
        }
        return refusals;
    }

    private void fetched(Exchange exchange, String proxy, long waited, ProxyBuckets tell) {
        String host = exchange.getProperty(Scrape.HOST, String.class);
        pool.success(proxy, host);
        int status = exchange.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE, 0, Integer.class);
        if (status >= 200 && status < 300) {
            pool.passed(proxy, host);
        }
        pool.settle(refusals(exchange), host, tell);
        // the target answered through this proxy, so the unclear failures of this URL through other proxies were
        // theirs; one through this same proxy was passing
        @SuppressWarnings("unchecked")
        Map<String, String> suspects = exchange.getProperty(Scrape.SUSPECTS, Map.class);
        if (suspects != null) {
            suspects.forEach((suspect, failure) -> {
                if (!suspect.equals(proxy)) {
                    pool.failure(suspect, failure + " (the URL then answered via " + proxy + ")");
                }
            });
            exchange.removeProperty(Scrape.SUSPECTS);
        }
        byte[] body = exchange.getMessage().getBody(byte[].class);
        stats.fetched(proxy, waited, body == null ? 0 : body.length);
        exchange.getMessage().setBody(ScrapeResult.fetched(exchange, body == null ? 0 : body.length));
        exchange.setProperty(Scrape.OUTCOME, Scrape.FETCHED);
        exchange.setProperty(Scrape.DONE, true);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> suspects(Exchange exchange) {
        Map<String, String> suspects = exchange.getProperty(Scrape.SUSPECTS, Map.class);
        if (suspects == null) {
            suspects = new LinkedHashMap<>(); // at most one entry per proxy tried, so at most maxAttempts
            exchange.setProperty(Scrape.SUSPECTS, suspects);
        }
        return suspects;
    }

    /** Ends the URL in the dead letter: counted, its line (with {@link Scrape#REASON}) as the body, done. */
    static void deadLetter(Exchange exchange, ProxyStats stats) {
        stats.deadLetter();
        exchange.getMessage().setBody(ScrapeResult.dead(exchange));
        exchange.setProperty(Scrape.OUTCOME, Scrape.DEAD);
        exchange.setProperty(Scrape.DONE, true);
    }

    private static String describe(Throwable error, ProxyConfig proxy) {
        // the class and the root cause's message say what happened (connection refused, read timed out); no
        // endpoint URI holds a credential, and the proxy's own password is masked in case a message quotes it
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = root.getClass().getSimpleName() + ": " + root.getMessage();
        return proxy == null ? text : proxy.maskIn(text);
    }
}
