package io.tokenbucket.example.demo;

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
 * <p>Paths: {@code /page/N} answers 200 with a small page; {@code /status/NNN} answers that status.
 */
public final class DemoTarget implements AutoCloseable {

    /** One request as the target saw it. */
    public record Hit(String client, long nanos, String path, int status) {
    }

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
        int status;
        if (path.startsWith("/status/")) {
            status = Integer.parseInt(path.substring("/status/".length()));
        } else if (path.startsWith("/page/")) {
            status = admit(client, System.nanoTime()) ? 200 : 429;
        } else {
            status = 404;
        }
        record(new Hit(client, System.nanoTime(), path, status));
        response.setStatus(status);
        if (status == 429) {
            response.getHeaders().put(HttpHeader.RETRY_AFTER, "1");
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
