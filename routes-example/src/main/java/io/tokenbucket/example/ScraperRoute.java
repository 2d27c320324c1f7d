package io.tokenbucket.example;

import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.camel.TokenBucketStoreException;
import org.apache.camel.builder.RouteBuilder;

/**
 * The scraper in the Java DSL; {@code routes/scraper.yaml} is the same route in YAML.
 *
 * <p>Each URL from the queue is checked by {@link ScrapeStart} (not http or https, no host: to the dead letter at
 * once) and then tried until it has an outcome: {@link ProxyChooser} offers the healthy proxies this URL has not
 * tried and whose pair with its host does not rest (waiting without a thread when none is available) and, with
 * {@code example.hostLimit}, names the URL's host's bucket ({@link HostKey}, {@link ProxyLimits#hostKey}) as an
 * all-of key; {@code tokenbucket:} reserves a token on the freest of them, together with the host's in one atomic
 * step, and names it in header {@code proxyId} ({@code example.choose=roundrobin}: the chooser names one in round
 * robin and the bucket waits for its token), the (proxy, host) pair's bucket {@link #PAIRS} holds it back while
 * that host's penalty lasts and, with {@code example.adaptive}, at the rate the host's refusals leave it,
 * {@link ProxyInUse} puts that proxy's client and the URL on the
 * exchange, camel-http fetches the URL through the proxy, and {@link FetchOutcome} classifies the answer, blames
 * the proxy or the URL, updates the proxy's health (a 429 rests the (proxy, host) pair and penalises its bucket:
 * {@link TokenBucketProxyBuckets}; health never touches a bucket) and decides: done, or another attempt. A fetched URL
 * goes to the results endpoint, one that failed {@code example.maxAttempts} times to the dead letter, each as one
 * JSON line ({@link ScrapeResult}).
 */
public class ScraperRoute extends RouteBuilder {

    /** The route id, the same in both DSLs. */
    public static final String ROUTE_ID = "scraper";

    /**
     * The throttle: one bucket per proxy id; requireKey makes a missing proxy id an error instead of a
     * silently shared bucket. The limit is the proxy's own ({@code limit=} in the proxy file, given by
     * {@link ProxyLimits}) or the default. One static endpoint for every proxy: it takes the freest of the
     * candidates {@link ProxyChooser} offers, and {@link TokenBucketProxyBuckets} sends its {@code penalize} operation
     * to the same endpoint.
     */
    public static final String THROTTLE = "tokenbucket:proxies?keyHeader=" + ProxyStats.PROXY_HEADER
            + "&requireKey=true&limitResolver=#" + ProxyLimits.BEAN
            + "&capacity={{example.capacity}}&refillPeriod={{example.refillPeriod}}";

    /** The header with the URL's host key ({@link HostKey}), set by {@link ProxyChooser} (never sent to the target). */
    public static final String HOST_HEADER = "scrapeHost";

    /** The header with the (proxy, host) pair's key, {@code "<proxy id> <host key>"}: the pair bucket's key. */
    public static final String PAIR_HEADER = "scrapePair";

    /**
     * One bucket per (proxy, host) pair, with {@code example.pairLimit} or its proxy's limit ({@link ProxyLimits}):
     * what a 429 penalises ({@link TokenBucketProxyBuckets}), so that one host's word about a proxy's address holds
     * that proxy back at that host only, on every instance sharing the store. With {@code example.adaptive} its
     * rate adapts (AIMD, the component's {@code adaptive} options from {@code example.adaptive*}): the host's own
     * 429s and 503s cut it ({@link ProxyPool#throttled}), tokens granted raise it back towards that limit, so each
     * pair finds the rate the host allows that address. {@code example.pairMaxWait} bounds how far ahead a pair's
     * turns are booked (a URL that would wait longer is tried again, {@code example.storeRetryDelay} later), so a
     * cut reaches the next requests and a stall of this JVM releases no long backlog at once.
     *
     * <p>{@code onStoreError=allow}: the pair's bucket bounds nothing the proxy's and the host's do not, so when
     * the store fails it admits. Failing there instead would hold the URL, with its proxy's token already taken,
     * until the store is back, then release it together with the proxy's new grants: more at the target than the
     * proxy's bucket allows. What an outage costs here is a penalty not kept, at most another 429.
     */
    public static final String PAIRS = "tokenbucket:pairs?keyHeader=" + PAIR_HEADER
            + "&requireKey=true&limitResolver=#" + ProxyLimits.BEAN
            + "&capacity={{example.capacity}}&refillPeriod={{example.refillPeriod}}&onStoreError=allow"
            + "&adaptive={{example.adaptive}}&adaptiveDecrease={{example.adaptiveDecrease}}"
            + "&adaptiveIncrease={{example.adaptiveIncrease}}&adaptiveHold={{example.adaptiveHold}}"
            + "&adaptiveFloor={{example.adaptiveFloor}}&adaptiveMemory={{example.adaptiveMemory}}"
            + "&maxWait={{example.pairMaxWait}}";

    /**
     * The fetch: camel-http GETs the URL of headers {@code CamelHttpUri} and {@code CamelHttpRawQuery}
     * ({@link ProxyInUse}) through the proxy whose {@link ProxyClient} the URI names (property
     * {@value Scrape#PROXY_CLIENT}, a generated registry name): one endpoint, one HttpClient and one connection
     * pool per proxy ({@link ProxyClients}). Nothing else varies, and nothing of a URL or a proxy line is in the
     * URI, which {@code toD} and camel-http resolve (Simple, {@code {{...}}} placeholders). Non-2xx answers do not
     * throw: {@link FetchOutcome} reads the status. Only options camel-http knows: {@code toD}'s camel-http
     * optimisation moves any other option into header {@code CamelHttpQuery}, which would replace the URL's own query.
     */
    public static final String FETCH = fetchUri("${exchangeProperty." + Scrape.PROXY_CLIENT + "}");

    /** The fetch endpoint URI of the {@link ProxyClient} bound as {@code clientName}. */
    public static String fetchUri(String clientName) {
        return "http://scrape-target?throwExceptionOnFailure=false&httpClientConfigurer=#" + clientName;
    }

    @Override
    public void configure() {
        // no token: the bucket store (Redis) failed and onStoreError=fail admitted nothing, or (with the component's
        // maxWait) the proxies are booked further ahead than that. The throttle step is tried again later (without
        // holding a thread while it waits); a URL that gets no token after all the tries goes to the dead letter
        onException(TokenBucketStoreException.class, TokenBucketRejectedException.class)
            .maximumRedeliveries("{{example.storeRetries}}")
            .redeliveryDelay("{{example.storeRetryDelay}}")
            .asyncDelayedRedelivery()
            .handled(true)
            .process(StoreUnavailable.BEAN)
            .to("{{example.deadLetter}}");

        from("{{example.queue}}").routeId(ROUTE_ID)
            // the URL checked: one that is not fetched has its outcome already, and the loop does not run
            .process(ScrapeStart.BEAN)
            .loopDoWhile(simple("${exchangeProperty." + Scrape.DONE + "} != true"))
                // the proxies this URL may take (candidates) and, with example.hostLimit, its host's bucket (all-of)
                .process(ProxyChooser.BEAN)
                // The bucket steps, in the one place that becomes a single step once a candidate can be charged with
                // its own (proxy, host) pair (example.throttle=false leaves them out, to show the 429s they
                // prevent). The freest proxy and the host's token in one atomic step, at one release instant, so
                // the host bound holds at the target; then the pair's (adaptive) bucket
                .filter(simple("{{example.throttle}}"))
                    .to(THROTTLE)
                    // the pair named, the proxies' candidates dropped, the proxy's wait kept
                    .process(PairKey.BEAN)
                    .to(PAIRS)
                .end()
                .doTry()
                    .process(ProxyInUse.BEAN)
                    .toD(FETCH)
                .doCatch(Exception.class)
                    // the exception stays in property CamelExceptionCaught for FetchOutcome
                    .log("${header." + ProxyStats.PROXY_HEADER + "}: ${exception.message}").id("fetch-error")
                .end()
                .process(FetchOutcome.BEAN)
            .end()
            .choice()
                .when(exchangeProperty(Scrape.OUTCOME).isEqualTo(Scrape.FETCHED))
                    .to("{{example.results}}")
                .otherwise()
                    .to("{{example.deadLetter}}");
    }
}
