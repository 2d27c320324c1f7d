package io.tokenbucket.example.proxy;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.apache.camel.CamelContext;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.Producer;
import org.apache.camel.component.http.HttpClientConfigurer;
import org.apache.camel.support.service.ServiceHelper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes a fresh JVM's first fetches leave as soon after their token as later ones do. The first request through
 * camel-http and HttpClient loads and links a few thousand classes and takes a few hundred milliseconds; a URL
 * whose token was granted waits that long before its request is written, while the URLs granted after it do not,
 * so the target sees the first requests of a new instance bunched together (several in the interval the bucket
 * gave one). A target that limits as tightly as the bucket (nginx {@code limit_req} at the same rate) then
 * answers 429 in the first second of every instance.
 *
 * <p>So before the routes start, {@link #run} sends two requests through a camel-http fetch endpoint set up
 * exactly like the proxies' ({@link ProxyClient}: a proxy with credentials, preemptive Basic, the retry strategy)
 * whose "proxy" is a small HTTP server inside this JVM on the loopback interface: the second request takes the
 * pooled connection. Nothing reaches a proxy or a target, and no token is taken.
 */
final class FetchWarmUp {

    private static final Logger LOG = LoggerFactory.getLogger(FetchWarmUp.class);
    private static final String USER = "warm-up";
    private static final String PASSWORD = "warm-up";

    private FetchWarmUp() {
    }

    /**
     * Warms the fetch path; a failure is logged, never thrown (the scraper works without it, only its first
     * requests are late).
     *
     * @return how long it took, in milliseconds
     */
    static long run(CamelContext context) {
        long start = System.nanoTime();
        HttpServer proxy = null;
        String name = ProxyClients.PREFIX + "WarmUp";
        Endpoint endpoint = null;
        Producer producer = null;
        try {
            proxy = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            proxy.createContext("/", FetchWarmUp::answer);
            proxy.start();
            ProxyConfig config = new ProxyConfig("warm-up", proxy.getAddress().getAddress().getHostAddress(),
                    proxy.getAddress().getPort(), USER, PASSWORD, 0, 0, 0);
            context.getRegistry().bind(name, HttpClientConfigurer.class, new ProxyClient(config, () -> { }));
            endpoint = context.getEndpoint(ProxyClients.fetchUri(name));
            producer = endpoint.createProducer();
            ServiceHelper.startService(producer);
            for (int i = 0; i < 2; i++) {
                Exchange exchange = endpoint.createExchange();
                exchange.getMessage().setHeader(Exchange.HTTP_URI, "http://warm-up.invalid/warm-up");
                exchange.getMessage().setHeader(Exchange.HTTP_RAW_QUERY, "q=1");
                exchange.getMessage().setHeader(Exchange.HTTP_METHOD, "GET");
                producer.process(exchange);
                Integer status = exchange.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE, Integer.class);
                if (exchange.getException() != null || status == null || status != 200) {
                    LOG.warn("The fetch path warm-up got {} instead of 200: the first fetches may be late",
                            exchange.getException() != null ? exchange.getException().toString() : status);
                    break;
                }
            }
        } catch (Exception e) {
            LOG.warn("The fetch path warm-up failed, the first fetches may be late: {}", e.toString());
        } finally {
            ServiceHelper.stopAndShutdownService(producer);
            if (endpoint != null) {
                try {
                    context.removeEndpoint(endpoint);
                } catch (Exception e) {
                    LOG.debug("Warm-up endpoint not removed", e);
                }
            }
            context.getRegistry().unbind(name);
            if (proxy != null) {
                proxy.stop(0);
            }
        }
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        LOG.info("Fetch path warmed up in {} ms", millis);
        return millis;
    }

    /** The loopback "proxy": 200 to a request with the warm-up credentials, 407 otherwise. */
    private static void answer(HttpExchange exchange) throws IOException {
        String expected = "Basic " + Base64.getEncoder()
                .encodeToString((USER + ":" + PASSWORD).getBytes(StandardCharsets.UTF_8));
        boolean authorised = expected.equals(exchange.getRequestHeaders().getFirst("Proxy-Authorization"));
        byte[] body = (authorised ? "warm\n" : "proxy authentication required\n").getBytes(StandardCharsets.UTF_8);
        if (!authorised) {
            exchange.getResponseHeaders().add("Proxy-Authenticate", "Basic realm=\"warm-up\"");
        }
        exchange.getResponseHeaders().add("Content-Type", "text/plain; charset=utf-8");
        exchange.sendResponseHeaders(authorised ? 200 : 407, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }
}
