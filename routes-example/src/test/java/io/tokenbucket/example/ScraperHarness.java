package io.tokenbucket.example;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import java.util.function.Supplier;

import io.tokenbucket.camel.TokenBucketConstants;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.fetch.HostKey;
import io.tokenbucket.example.proxy.ProxyLimits;
import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.CamelContext;
import org.apache.camel.Component;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.NotifyBuilder;
import org.apache.camel.component.mock.MockEndpoint;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.PropertyBindingSupport;
import org.apache.camel.util.StringHelper;
import org.apache.camel.util.json.JsonObject;
import org.apache.camel.util.json.Jsoner;

/**
 * A scraper under test: the application's own {@link ExampleConfiguration} and route (Java or YAML) in a
 * plain Camel context, reading {@code application.properties} with test overrides, against a real
 * {@link DemoSite} on loopback; results and dead letters go to mocks.
 */
public final class ScraperHarness implements AutoCloseable {

    final DemoSite site;
    final CamelContext context = new DefaultCamelContext();
    final MockEndpoint results;
    final MockEndpoint dead;
    private final AtomicInteger sent = new AtomicInteger();

    ScraperHarness(String dsl, Path dir, DemoSite site, Map<String, String> overrides) throws Exception {
        this(dsl, dir, site, overrides, context -> { });
    }

    /** As above, with {@code beforeStart} run on the configured context before it starts (to replace a bean). */
    ScraperHarness(String dsl, Path dir, DemoSite site, Map<String, String> overrides,
                   java.util.function.Consumer<CamelContext> beforeStart) throws Exception {
        this.site = site;
        Properties properties = new Properties();
        properties.setProperty("example.dsl", dsl);
        properties.setProperty("example.proxyFile", site.proxyFile().toString());
        // one consumer: the URLs take their proxies in queue order, so the round robin is exact; once resumed after
        // example.maxInFlight, it takes URLs again within its pollTimeout
        properties.setProperty("example.queue", "seda:urls?size=10000&pollTimeout=10");
        properties.setProperty("example.results", "mock:results");
        properties.setProperty("example.deadLetter", "mock:dead");
        properties.setProperty("example.progressInterval", "0");
        properties.putAll(overrides);
        context.getPropertiesComponent().setLocation("classpath:application.properties");
        context.getPropertiesComponent().setOverrideProperties(properties);
        configureComponent(context, properties);
        new ExampleConfiguration().configure(context);
        beforeStart.accept(context);
        context.start();
        results = context.getEndpoint("mock:results", MockEndpoint.class);
        dead = context.getEndpoint("mock:dead", MockEndpoint.class);
    }

    /**
     * Sets the {@code tokenbucket} component's options from the {@code camel.component.tokenbucket.*} properties
     * ({@code application.properties}, then {@code overrides}), as Camel Main does for the application: this plain
     * context has no Main to do it. {@code ExampleAppTest} checks that Main does.
     */
    private static void configureComponent(CamelContext context, Properties overrides) {
        String prefix = "camel.component.tokenbucket.";
        Map<String, Object> unbound = new LinkedHashMap<>();
        Properties all = context.getPropertiesComponent().loadProperties(k -> k.startsWith(prefix));
        all.putAll(overrides);
        all.stringPropertyNames().stream().filter(k -> k.startsWith(prefix)).sorted().forEach(k -> unbound.put(
                StringHelper.dashToCamelCase(k.substring(prefix.length())),
                all.getProperty(k).strip()));
        Component component = context.getComponent("tokenbucket");
        // through the component's generated configurer, as Camel Main binds them; each one bound is removed
        PropertyBindingSupport.build().withCamelContext(context).withIgnoreCase(true).withRemoveParameters(true)
                .withConfigurer(component.getComponentPropertyConfigurer()).withTarget(component)
                .withProperties(unbound).bind();
        if (!unbound.isEmpty()) {
            throw new IllegalArgumentException("Not options of the tokenbucket component: " + unbound.keySet());
        }
    }

    /** Sends the URLs and waits (generously, returning as soon as it is true) until each has an outcome. */
    void scrape(List<String> urls) {
        await(send(urls), urls.size());
    }

    /** Sends the URLs; the answer is what {@link #await} waits on. */
    NotifyBuilder send(List<String> urls) {
        NotifyBuilder done = new NotifyBuilder(context).fromRoute(ScraperRoute.ROUTE_ID).whenDone(urls.size())
                .create();
        sent.addAndGet(urls.size());
        try (ProducerTemplate template = context.createProducerTemplate()) {
            urls.forEach(url -> template.sendBody("{{example.queue}}", url));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return done;
    }

    /**
     * Waits (generously, returning as soon as it is true) until the {@code count} URLs sent have an outcome, and
     * every URL sent so far has its line at the results or the dead letter: the notifier's count alone also takes
     * the template's own exchanges (sent to the route's queue, they finish as soon as they are queued), so it may
     * match before the last URL is through.
     */
    void await(NotifyBuilder done, int count) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
        boolean matched = done.matches(40, TimeUnit.SECONDS);
        // fromRoute also counts the template's own exchanges, whose from endpoint is the route's queue and which
        // complete once enqueued: so also wait until every URL sent so far has its line in a mock
        while (matched && results.getReceivedCounter() + dead.getReceivedCounter() < sent.get()) {
            if (System.nanoTime() - deadline > 0) {
                matched = false;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        if (!matched) {
            throw new AssertionError("Not every URL got an outcome: " + results.getReceivedCounter()
                    + " results, " + dead.getReceivedCounter() + " dead letters of " + count + " (" + sent.get()
                    + " sent in all); dead letters: " + dead.getReceivedExchanges().stream()
                    .map(e -> e.getMessage().getBody(String.class)).toList());
        }
    }

    /**
     * Waits until {@code value} gives an answer that {@code done} accepts: for a condition that becomes true
     * asynchronously (a penalty reaching Redis, failures being counted). Checks every 10 ms, parked in between so
     * that a busy machine's cores stay with the threads being waited for.
     *
     * @param what    what is waited for, for the failure message
     * @param timeout the deadline, generous: it is reached only when the test fails
     * @return the first answer {@code done} accepted
     * @throws AssertionError with {@code what} and the last answer, when the deadline passed first
     */
    public static <T> T awaitUntil(String what, Supplier<T> value, Predicate<T> done, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            T answer = value.get();
            if (done.test(answer)) {
                return answer;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("Waited " + timeout.toMillis() + " ms for " + what + "; last answer: "
                        + answer);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
    }

    /** The host key of the demo target's first host, as the route's buckets name it. */
    String host() {
        return HostKey.of(site.target().baseUrl());
    }

    /**
     * The milliseconds until the bucket of the pair (proxy, the demo target's first host), as this instance's
     * throttle sees it, has a token: what a 429 there penalizes.
     */
    long millisUntilPairToken(String proxyId) {
        return bucketOperation(pairKey(proxyId), "peek").getMessage()
                .getHeader(TokenBucketConstants.WAIT_ESTIMATE, Long.class);
    }

    /**
     * The adaptive rate of the pair (proxy, the demo target's first host) now, as a fraction of its limit
     * (operation {@code rate} on the throttle): 1.0 at the ceiling.
     */
    double pairRate(String proxyId) {
        return bucketOperation(pairKey(proxyId), "rate").getMessage().getHeader(TokenBucketConstants.RATE,
                Double.class);
    }

    /** The key of the pair (proxy, the demo target's first host) on the throttle. */
    String pairKey(String proxyId) {
        return ProxyLimits.pairKey(proxyId, host());
    }

    /** Whole tokens the throttle's bucket of {@code key} (a proxy's, a pair's or a host's) holds now (peek). */
    long tokens(String key) {
        return bucketOperation(key, "peek").getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class);
    }

    /**
     * Sends {@code operation} for {@code key} to the route's throttle ({@link ScraperRoute#THROTTLE}, where every
     * proxy's, pair's and host's bucket is); its answer.
     *
     * @throws IllegalStateException with the exchange's exception when the operation failed
     */
    Exchange bucketOperation(String key, String operation) {
        return bucketOperation(key, operation, Map.of());
    }

    /** {@link #bucketOperation(String, String)} with more headers (a penalty). */
    Exchange bucketOperation(String key, String operation, Map<String, Object> headers) {
        try (ProducerTemplate template = context.createProducerTemplate()) {
            Exchange answer = template.request(ScraperRoute.THROTTLE, e -> {
                e.getMessage().setHeader(ProxyStats.PROXY_HEADER, key);
                e.getMessage().setHeader(TokenBucketConstants.OPERATION, operation);
                headers.forEach(e.getMessage()::setHeader);
            });
            if (answer.getException() != null) {
                throw new IllegalStateException(answer.getException());
            }
            return answer;
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** The URLs of the demo site's URL file ({@code /page/1} ...). */
    List<String> pages(int count) {
        List<String> urls = new ArrayList<>();
        for (int i = 1; i <= count; i++) {
            urls.add(site.target().baseUrl() + "/page/" + i);
        }
        return urls;
    }

    /** The JSON lines the results endpoint received, parsed. */
    List<JsonObject> resultLines() {
        return lines(results);
    }

    /** The JSON lines the dead-letter endpoint received, parsed. */
    List<JsonObject> deadLines() {
        return lines(dead);
    }

    private static List<JsonObject> lines(MockEndpoint endpoint) {
        List<JsonObject> lines = new ArrayList<>();
        for (Exchange e : endpoint.getReceivedExchanges()) {
            lines.add((JsonObject) Jsoner.deserialize(e.getMessage().getBody(String.class), (JsonObject) null));
        }
        return lines;
    }

    ProxyStats stats() {
        return context.getRegistry().lookupByNameAndType(ProxyStats.BEAN, ProxyStats.class);
    }

    ProxyPool pool() {
        return context.getRegistry().lookupByNameAndType(ProxyPool.BEAN, ProxyPool.class);
    }

    @Override
    public void close() throws Exception {
        context.close();
    }
}
