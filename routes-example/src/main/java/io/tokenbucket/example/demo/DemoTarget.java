package io.tokenbucket.example.demo;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.EofException;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;

/**
 * The demo's target site on 127.0.0.1, with a rate limit of its own like a real site: each client (the proxy
 * named by the last word of the {@code Via} header its forward proxy adds) may make {@code limit} requests
 * in any {@code windowMillis}; beyond that it answers 429 with {@code Retry-After: 1}. It records every
 * request (client, time, path, status), so tests measure the rate where it matters: at the target.
 *
 * <p>Paths: {@code /page/N} answers 200 with a small page (within the rate limit); {@code /status/NNN} answers
 * that status; {@code /retry-after/VALUE} answers 429 with {@code Retry-After: VALUE} (URL-decoded, so
 * {@code /retry-after/Sun,%2006%20Nov%201994%2008:49:37%20GMT} sends a date); {@code /slow/MS} answers 200 after
 * {@code MS} milliseconds (at most {@value #MAX_SLOW_MS}); {@code /reset} closes the connection without an answer
 * (its hit has status {@value #NO_ANSWER}). The last three are the hostile or failing targets the scraper must
 * not blame its proxies for.
 */
public final class DemoTarget implements AutoCloseable {

    /**
     * One request as the target saw it.
     *
     * @param client the proxy it came through (last {@code Via} word), {@code direct} without one
     * @param nanos  {@code System.nanoTime()} when it arrived
     * @param path   the request path
     * @param status the status answered, {@value #NO_ANSWER} when the connection was closed without an answer
     */
    public record Hit(String client, long nanos, String path, int status) {
    }

    /** The status of a {@link Hit} that got no answer ({@code /reset}). */
    public static final int NO_ANSWER = 0;

    /** The longest {@code /slow/MS} delay, so that a test cannot hold a server thread for long. */
    public static final long MAX_SLOW_MS = 10_000;

    private final Server server = new Server();
    private final int limit;
    private final long windowNanos;
    private final Map<String, Deque<Long>> recent = new HashMap<>();
    private final List<Hit> hits = new ArrayList<>();

    /**
     * @param limit        requests allowed per client in any window
     * @param windowMillis the window
     */
    public DemoTarget(int limit, long windowMillis) throws Exception {
        this.limit = limit;
        this.windowNanos = TimeUnit.MILLISECONDS.toNanos(windowMillis);
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        server.addConnector(connector);
        server.setHandler(new Handler.Abstract() {
            @Override
            public boolean handle(Request request, Response response, Callback callback) {
                answer(request, response, callback);
                return true;
            }
        });
        server.start();
    }

    /** The base URL, {@code http://127.0.0.1:PORT}. */
    public String baseUrl() {
        return "http://127.0.0.1:" + ((ServerConnector) server.getConnectors()[0]).getLocalPort();
    }

    private void answer(Request request, Response response, Callback callback) {
        String path = request.getHttpURI().getPath();
        String client = client(request.getHeaders().get(HttpHeader.VIA));
        long arrived = System.nanoTime();
        if (path.equals("/reset")) {
            record(new Hit(client, arrived, path, NO_ANSWER));
            // no status line, no headers: the proxy in front sees its connection closed under it
            request.getConnectionMetaData().getConnection().getEndPoint().close();
            callback.failed(new EofException("closed without an answer")); // Eof: Jetty logs no stack trace
            return;
        }
        int status;
        String retryAfter = "1";
        if (path.startsWith("/status/")) {
            status = Integer.parseInt(path.substring("/status/".length()));
        } else if (path.startsWith("/retry-after/")) {
            status = 429;
            retryAfter = URLDecoder.decode(path.substring("/retry-after/".length()), StandardCharsets.UTF_8);
        } else if (path.startsWith("/slow/")) {
            status = 200;
            long millis = Math.min(MAX_SLOW_MS, Long.parseLong(path.substring("/slow/".length())));
            record(new Hit(client, arrived, path, status)); // recorded on arrival: the client may give up first
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        } else if (path.startsWith("/page/")) {
            status = admit(client, arrived) ? 200 : 429;
        } else {
            status = 404;
        }
        if (!path.startsWith("/slow/")) {
            record(new Hit(client, arrived, path, status));
        }
        response.setStatus(status);
        if (status == 429) {
            response.getHeaders().put(HttpHeader.RETRY_AFTER, retryAfter);
        }
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/html; charset=utf-8");
        String body = status == 200 ? "<html><body><h1>" + path + "</h1>" + "<p>lorem ipsum</p>".repeat(
                1 + Math.floorMod(path.hashCode(), 20)) + "</body></html>\n" : "status " + status + "\n";
        Content.Sink.write(response, true, body, callback);
    }

    private synchronized boolean admit(String client, long now) {
        Deque<Long> times = recent.computeIfAbsent(client, c -> new ArrayDeque<>());
        while (!times.isEmpty() && now - times.peekFirst() >= windowNanos) {
            times.pollFirst();
        }
        if (times.size() >= limit) {
            return false;
        }
        times.addLast(now);
        return true;
    }

    private static String client(String via) {
        if (via == null || via.isBlank()) {
            return "direct";
        }
        String[] words = via.strip().split("[\\s,]+");
        return words[words.length - 1];
    }

    private synchronized void record(Hit hit) {
        hits.add(hit);
        notifyAll();
    }

    /** Every request so far, in arrival order. */
    public synchronized List<Hit> hits() {
        return List.copyOf(hits);
    }

    /** How many 429s the target answered, per client. */
    public synchronized Map<String, Long> tooManyByClient() {
        Map<String, Long> counts = new TreeMap<>();
        hits.stream().filter(h -> h.status == 429).forEach(h -> counts.merge(h.client, 1L, Long::sum));
        return counts;
    }

    /**
     * Waits until the target has seen {@code count} requests (for tests that act "mid-run").
     *
     * @return false when the timeout passed first
     */
    public synchronized boolean awaitHits(int count, long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        while (hits.size() < count) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        return true;
    }

    @Override
    public void close() throws Exception {
        server.stop();
    }

    /** For logs: the base URL and the limit. */
    @Override
    public String toString() {
        return baseUrl() + " (" + limit + " requests per client per " + TimeUnit.NANOSECONDS.toMillis(windowNanos)
                + " ms)";
    }

}
