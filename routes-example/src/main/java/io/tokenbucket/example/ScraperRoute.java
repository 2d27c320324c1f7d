package io.tokenbucket.example;

import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.camel.TokenBucketStoreException;
import org.apache.camel.builder.RouteBuilder;

/**
 * The scraper in the Java DSL; {@code routes/scraper.yaml} is the same route in YAML.
 *
 * <p>Each URL from the queue is checked by {@link ScrapeStart} (not http or https, no host: to the dead letter at
 * once) and then tried until it has an outcome: with {@code example.hostLimit}, {@link #HOSTS} takes the URL's
 * host's token first ({@link HostKey}); {@link ProxyChooser} offers the healthy proxies this URL has not
 * tried and whose pair with its host does not rest (waiting without a thread when none is available),
 * {@code tokenbucket:} reserves a token on the freest of
 * them and names it in header {@code proxyId} ({@code example.choose=roundrobin}: the chooser names one in round
 * robin and the bucket waits for its token), the (proxy, host) pair's bucket {@link #PAIRS} holds it back while
 * that host's penalty lasts, {@link ProxyInUse} puts that proxy's client and the URL on the
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

    /** The header with the URL's host key ({@link HostKey}), set by {@link ProxyChooser}: the per-host bucket's key. */
    public static final String HOST_HEADER = "scrapeHost";

    /** The header with the (proxy, host) pair's key, {@code "<proxy id> <host key>"}: the pair bucket's key. */
    public static final String PAIR_HEADER = "scrapePair";

    /**
     * Per-host politeness: one bucket per target host, {@code example.hostLimit} (e.g. {@code 2/1s}) across all
     * proxies and, with Redis, all instances. Left out when {@code example.hostLimit} is empty.
     */
    public static final String HOSTS = "tokenbucket:hosts?keyHeader=" + HOST_HEADER
            + "&requireKey=true&limits={{example.hostLimit}}";

    /** Whether the route has the per-host step: a Simple predicate on the setting. */
    public static final String HOST_LIMITED = "'{{example.hostLimit}}' != ''";

    /**
     * One bucket per (proxy, host) pair, with its proxy's limit ({@link ProxyLimits}): what a 429 penalises
     * ({@link TokenBucketProxyBuckets}), so that one host's word about a proxy's address holds that proxy back at
     * that host only, on every instance sharing the store. The adaptive rate per (proxy, host) belongs here once
     * the component has it ({@code example.adaptive}).
     *
     * <p>{@code onStoreError=allow}: the pair's bucket bounds nothing the proxy's and the host's do not, so when
     * the store fails it admits. Failing there instead would hold the URL, with its proxy's token already taken,
     * until the store is back, then release it together with the proxy's new grants: more at the target than the
     * proxy's bucket allows. What an outage costs here is a penalty not kept, at most another 429.
     */
    public static final String PAIRS = "tokenbucket:pairs?keyHeader=" + PAIR_HEADER
            + "&requireKey=true&limitResolver=#" + ProxyLimits.BEAN
            + "&capacity={{example.capacity}}&refillPeriod={{example.refillPeriod}}&onStoreError=allow";

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
                // The three buckets, in the one place the component's all-of-keys acquire will replace with one step
                // (example.throttle=false leaves them out, to show the 429s they prevent). The host first, before
                // the proxy is chosen: its wait (politeness, the long one) holds no proxy token, and the proxies
                // are chosen once it is over; the proxy's wait after it delays the host's slot, so the host bound
                // at the target holds up to that wait
                .filter(simple("{{example.throttle}} && " + HOST_LIMITED))
                    .setHeader(HOST_HEADER, exchangeProperty(Scrape.HOST))
                    // toD: the endpoint is made on first use only, so an empty hostLimit makes none
                    .toD(HOSTS)
                .end()
                .process(ProxyChooser.BEAN)
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
