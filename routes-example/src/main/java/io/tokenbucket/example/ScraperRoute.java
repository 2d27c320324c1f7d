package io.tokenbucket.example;

import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.camel.TokenBucketOperation;
import io.tokenbucket.camel.TokenBucketRejectedException;
import io.tokenbucket.camel.TokenBucketStoreException;
import io.tokenbucket.example.fetch.FetchOutcome;
import io.tokenbucket.example.fetch.NoTokenRetry;
import io.tokenbucket.example.fetch.ProxyChooser;
import io.tokenbucket.example.fetch.ProxyInUse;
import io.tokenbucket.example.fetch.RouteFailure;
import io.tokenbucket.example.fetch.Scrape;
import io.tokenbucket.example.fetch.ScrapeResult;
import io.tokenbucket.example.fetch.ScrapeStart;
import io.tokenbucket.example.fetch.StoreUnavailable;
import io.tokenbucket.example.proxy.ProxyClient;
import io.tokenbucket.example.proxy.ProxyClients;
import io.tokenbucket.example.proxy.ProxyLimits;
import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxyStats;
import io.tokenbucket.example.proxy.BucketSteps;
import org.apache.camel.LoggingLevel;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.model.ExpressionSubElementDefinition;
import org.apache.camel.model.OnExceptionDefinition;
import org.apache.camel.model.ProcessorDefinition;
import org.apache.camel.model.language.MethodCallExpression;

/**
 * The scraper in the Java DSL; {@code routes/scraper.yaml} is the same route in YAML.
 *
 * <p>Each URL from the queue is checked by {@link ScrapeStart} (not http or https, no host: to the dead letter at
 * once) and then tried until it has an outcome: {@link ProxyChooser} offers the healthy proxies this URL has not
 * tried (waiting without a thread when none is available), each in a group with its (proxy, host) pair, whose
 * bucket is where a 429 rests the pair, and, with {@code example.hostLimit}, names the URL's host's bucket as an
 * all-of key; {@link #THROTTLE} reserves on the group whose proxy, pair and host allow soonest, all three in one
 * atomic step at one release instant, and names its proxy in header {@code proxyId}
 * ({@code example.choose=roundrobin}: the chooser names one in round robin and the bucket waits for its proxy's,
 * pair's and host's tokens), {@link ProxyInUse} puts that proxy's client and the URL on the exchange, camel-http
 * fetches the URL through the proxy, and {@link FetchOutcome} classifies the answer, blames the proxy or the URL,
 * updates the proxy's health (health never touches a bucket) and decides: done, or another attempt. The attempt's
 * in-flight slots go back ({@code release}), and what the outcome owes the pairs' buckets runs as steps of
 * {@link #THROTTLE} ({@link BucketSteps}: a 429's {@code penalize}, a host's own 429 or 503's {@code throttled}). A
 * fetched URL goes to the results endpoint, one that failed {@code example.maxAttempts} times to the dead letter,
 * each as one JSON line ({@link ScrapeResult}).
 */
public class ScraperRoute extends RouteBuilder {

    /** The route id, the same in both DSLs. */
    public static final String ROUTE_ID = "scraper";

    /**
     * The route's policy (a {@code TokenBucketBackPressure} bound by {@code ExampleConfiguration}): past
     * {@code example.maxInFlight} URLs in flight it suspends the queue's consumer, so the rest stay in the queue,
     * where any instance can take them, instead of booking turns far ahead or retrying in one burst.
     */
    public static final String BACK_PRESSURE = "backPressure";

    /**
     * The thread pool profile of the route's error handler ({@code executorServiceRef}), which schedules the retries
     * of the throttle step (a URL booked out by {@code maxWait}, or a store failure); registered by the application's
     * configuration.
     */
    public static final String RETRY_POOL = "scrapeRetries";

    /**
     * The property that holds the throttle's {@code adaptiveKeys} ({@link ProxyLimits#ADAPTIVE_KEYS}), set by
     * {@code ExampleConfiguration} with {@code example.adaptive} only: the component refuses {@code adaptiveKeys}
     * without {@code adaptive=true}, and the optional placeholder {@code {{?...}}} leaves the option out when the
     * property is absent.
     */
    public static final String ADAPTIVE_KEYS_PROPERTY = "scraper.adaptiveKeys";

    /**
     * The throttle: every bucket of the scraper, in one endpoint and one atomic step per attempt. Its keys
     * ({@link ProxyLimits}, also their limits, {@code limitResolver=#proxyLimits}): each proxy's id, at the proxy's
     * own {@code limit=} or {@code example.proxyLimit}; each (proxy, host) pair's
     * {@code "pair <proxy id> <host key>"}, at {@code example.pairLimit} or its proxy's rate, and with
     * {@code example.adaptive} at a rate that adapts (AIMD, tuned by the component's own {@code adaptive*} options,
     * {@code camel.component.tokenbucket.adaptive-*} in {@code application.properties}; for the pairs alone:
     * {@code adaptiveKeys}): the host's own 429s and 503s cut it
     * ({@link ProxyPool#throttled}), tokens granted raise it back towards that limit, so each pair finds the rate
     * the host allows that address; and with {@code example.hostLimit} each target host's {@code "host <host key>"}.
     * {@link ProxyChooser} names them: a group per candidate proxy, {@code [proxy, pair]}, and the host as an all-of
     * key; the group that allows soonest is charged with the host, at one release instant, or nothing is.
     * {@code requireKey} makes a missing proxy id an error instead of a silently shared bucket.
     * The {@code penalize} and {@code throttled} operations an outcome owes a pair ({@link BucketSteps}) are steps to
     * this same endpoint.
     *
     * <p>{@code maxWait} is {@code example.pairMaxWait} (with {@code example.adaptive}, unset:
     * {@code ExampleConfiguration.ADAPTIVE_PAIR_MAX_WAIT}), or, unset, the component's ({@code
     * camel.component.tokenbucket.max-wait}, unset: none): how far ahead a URL may book its proxy's, pair's and
     * host's turn. A URL that would wait longer consumes nothing and is tried again when that turn comes into reach, at
     * most about {@code example.storeRetryDelay} later ({@link NoTokenRetry}), so a cut of a pair's rate reaches the
     * next bookings and a stall of this JVM releases no long backlog at once. A store failure follows the component's
     * {@code onStoreError} (fail, by default: the same error handler tries the step again): one step takes every token
     * or none, so there is no token already spent that an {@code allow} of the pairs would have to let through.
     */
    public static final String THROTTLE = "tokenbucket:proxies?keyHeader=" + ProxyStats.PROXY_HEADER
            + "&requireKey=true&limitResolver=#" + ProxyLimits.BEAN
            + "&limits={{example.proxyLimit}}"
            + "&adaptive={{example.adaptive}}&adaptiveKeys={{?" + ADAPTIVE_KEYS_PROPERTY + "}}"
            + "&maxWait={{?example.pairMaxWait}}";

    /**
     * The fetch: camel-http GETs the URL of headers {@code CamelHttpUri} and {@code CamelHttpRawQuery}
     * ({@link ProxyInUse}) through the proxy whose {@link ProxyClient} the URI names (property
     * {@value Scrape#PROXY_CLIENT}, a generated registry name): one endpoint, one HttpClient and one connection
     * pool per proxy ({@link ProxyClients}). Nothing else varies, and nothing of a URL or a proxy line is in the
     * URI, which {@code toD} and camel-http resolve (Simple, {@code {{...}}} placeholders). Non-2xx answers do not
     * throw: {@link FetchOutcome} reads the status. Only options camel-http knows: {@code toD}'s camel-http
     * optimisation moves any other option into header {@code CamelHttpQuery}, which would replace the URL's own query.
     */
    public static final String FETCH = ProxyClients.fetchUri("${exchangeProperty." + Scrape.PROXY_CLIENT + "}");

    /**
     * When a failure no other handler takes goes to the dead letter ({@link RouteFailure}): without a broker, and not
     * a {@code TokenBucketException}.
     */
    public static final String ROUTE_FAILURE_HANDLED = "'{{example.broker}}' == ''"
            + " && ${exception} !is 'io.tokenbucket.camel.TokenBucketException'";

    /**
     * Appends to {@code step} the steps an outcome owes the pairs' buckets ({@link BucketSteps}, exchange property
     * {@value BucketSteps#PROPERTY}), each a step of {@link #THROTTLE} on the pair's key: a 429's rest (operation
     * {@code penalize}) and, with {@code example.adaptive}, the host's own refusal (operation {@code throttled}). A
     * failure is logged (node {@code logId}); with the freest choice the pair then does not rest (its bucket is where
     * its rest is kept). After each attempt, and when the URL's attempts end in a handler ({@link FetchOutcome#ended}).
     *
     * @return {@code step}
     */
    private ProcessorDefinition<?> bucketSteps(ProcessorDefinition<?> step, String logId) {
        return step.split(exchangeProperty(BucketSteps.PROPERTY))
                .removeHeaders("*")
                .setHeader(ProxyStats.PROXY_HEADER, simple("${body[key]}"))
                .setHeader(TokenBucketConstants.OPERATION, simple("${body[operation]}"))
                .setHeader(TokenBucketConstants.PENALTY, simple("${body[penalty]}"))
                .doTry()
                    .to(THROTTLE)
                .doCatch(Exception.class)
                    .log(LoggingLevel.WARN, "Could not ${body[operation]} the bucket of ${body[key]}: "
                            + "${exception.message}").id(logId)
                .end()
            .end()
            .removeProperty(BucketSteps.PROPERTY);
    }

    @Override
    public void configure() {
        // a URL waiting for a retry is a task of the error handler's pool: as many as the queue holds may wait. A
        // throttle step that got no token notes when, and sets how long until it is tried again (NoTokenRetry: Camel
        // runs it as the step fails, before it reads the delay)
        errorHandler(defaultErrorHandler().executorServiceRef(RETRY_POOL).onExceptionOccurredRef(NoTokenRetry.BEAN));
        // no token: the bucket store (Redis) failed and onStoreError=fail admitted nothing, or (with maxWait,
        // example.pairMaxWait) every proxy, pair or the host is booked further ahead than that. The throttle step is
        // tried again later (without holding a thread while it waits); a URL that gets no token after all the tries
        // goes to the dead letter
        OnExceptionDefinition noToken = onException(TokenBucketStoreException.class,
                TokenBucketRejectedException.class)
            .asyncDelayedRedelivery()
            .handled(true)
            .process(StoreUnavailable.BEAN);
        // tried again while the URL has gone less than example.storeRetries x example.storeRetryDelay without a
        // token; each time when the refused turn comes into reach, or example.storeRetryDelay after a store failure,
        // with Camel's jitter (NoTokenRetry sets the delay). The bean's method as a model expression, as in YAML
        noToken.setRetryWhile(new ExpressionSubElementDefinition(new MethodCallExpression(NoTokenRetry.BEAN,
                "retry")));
        // the URL's attempts are over: the rests its earlier 429s still owe (FetchOutcome.ended), as after an attempt
        bucketSteps(noToken.filter(simple("{{example.throttle}}")), "no-token-bucket-step-error").end()
            .to("{{example.deadLetter}}");
        // any other exception that escapes a step, with a seda: queue: the URL goes to the dead letter with it, at
        // once, never lost. Not from a broker, which delivers the URL again (example.brokerDeliveries) before its
        // own dead letter; not a TokenBucketException (the route stops: its waiters fail with it, as documented)
        OnExceptionDefinition failed = onException(Exception.class)
            .onWhen(simple(ROUTE_FAILURE_HANDLED))
            .handled(true)
            .process(RouteFailure.BEAN);
        bucketSteps(failed.filter(simple("{{example.throttle}}")), "failed-bucket-step-error").end()
            .to("{{example.deadLetter}}");

        ProcessorDefinition<?> attempted = from("{{example.queue}}").routeId(ROUTE_ID).routePolicyRef(BACK_PRESSURE)
            // the URL checked: one that is not fetched has its outcome already, and the loop does not run
            .process(ScrapeStart.BEAN)
            .loopDoWhile(simple("${exchangeProperty." + Scrape.DONE + "} != true"))
                // the proxies this URL may take, each with its (proxy, host) pair (candidate groups) and, with
                // example.hostLimit, its host's bucket (all-of)
                .process(ProxyChooser.BEAN)
                // the one bucket step (example.throttle=false leaves it out, to show the 429s it prevents): the
                // freest proxy with its pair and the host's token, atomically, at one release instant
                .filter(simple("{{example.throttle}}"))
                    .to(THROTTLE)
                .end()
                .doTry()
                    .process(ProxyInUse.BEAN)
                    .toD(FETCH)
                .doCatch(Exception.class)
                    // the exception stays in property CamelExceptionCaught for FetchOutcome
                    .log("${exchangeProperty." + Scrape.PROXY + "}: ${exception.message}").id("fetch-error")
                .end()
                .process(FetchOutcome.BEAN)
                // the attempt is over: the in-flight slots it took (a proxy's Ninflight, example.hostInFlight) go
                // back now, not when the URL is done, so the next attempt's proxy takes its own
                .filter(simple("{{example.throttle}}"))
                    .setHeader(TokenBucketConstants.OPERATION, constant(TokenBucketOperation.release.name()))
                    .to(THROTTLE)
                    .removeHeader(TokenBucketConstants.OPERATION);
        // what the outcome owes the pairs' buckets (BucketSteps), each a step of this same throttle on the pair's key:
        // a 429's rest (operation penalize) and, with example.adaptive, the host's own refusal (operation throttled)
        bucketSteps(attempted, "bucket-step-error")
                .end()
            .end()
            .choice()
                .when(exchangeProperty(Scrape.OUTCOME).isEqualTo(Scrape.FETCHED))
                    .to("{{example.results}}")
                .otherwise()
                    .to("{{example.deadLetter}}");
    }
}
