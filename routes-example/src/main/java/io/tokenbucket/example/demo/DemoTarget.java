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
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.UriCompliance;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.EofException;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;

/**
 * The demo's target site, with a rate limit of its own like a real site. Either one host, 127.0.0.1, that limits
 * each client named by the last word of the {@code Via} header its forward proxy adds: at most {@code limit}
 * requests in any {@code windowMillis} ({@link #DemoTarget(int, long)}), or nginx's {@code limit_req}
 * ({@link #nginxLike}); or several hosts on loopback addresses of their own (127.0.0.2, 127.0.0.3, ...), each of
 * which limits every client IP address on its own, a limit the scraper is not told ({@link #hiddenPerIp}): what
 * a real site's rate limiter does, which sees addresses, not proxy names. Beyond its limit it answers 429, with
 * {@code Retry-After: 1} (or, for {@link #hiddenPerIp} without it, none). It records every request (client, its
 * address, the host it reached, time, raw path and query, status), so tests measure the rate, and what was asked
 * for, where it matters: at the target.
 *
 * <p>Paths: {@code /page/...} answers 200 with a small page (the only paths that count against the limit);
 * {@code /status/NNN} answers that status; {@code /retry-after/VALUE} answers 429 with {@code Retry-After: VALUE}
 * (URL-decoded, so {@code /retry-after/Sun,%2006%20Nov%201994%2008:49:37%20GMT} sends a date); {@code /busy/N/...}
 * answers its first {@code N} requests (per path) 429 without {@code Retry-After} ({@code /busy/N/retry-after-S/...}:
 * with {@code Retry-After: S}), then 200: a host whose rate is being found; {@code /delay/MS}
 * answers 200 after {@code MS} milliseconds (at most {@value #MAX_DELAY_MS}; recorded on arrival, since the client
 * may give up first); {@code /reset} closes the connection without an answer (its hit has status
 * {@value #NO_ANSWER}). The last three are the hostile or failing targets the scraper must not blame its proxies
 * for.
 */
public final class DemoTarget implements AutoCloseable {

    /**
     * One request as the target saw it.
     *
     * @param client the proxy it came through ({@code direct} without a {@code Via} header)
     * @param nanos  {@code System.nanoTime()} when it arrived
     * @param path   the path as sent, still percent-encoded ({@code /page/p%C3%A4ge})
     * @param status the status answered, {@value #NO_ANSWER} when the connection was closed without an answer
     * @param query  the query as sent, still percent-encoded ({@code u=9&x=a%20b}); null when there was none
     * @param ip     the address the request came from (a demo proxy's own source address, {@link DemoProxy})
     * @param host   the host it reached, {@code address:port} (one of {@link #baseUrls()})
     */
    public record Hit(String client, long nanos, String path, int status, String query, String ip, String host) {

        /** The request target as sent: the path and, when there was one, {@code ?} and the query. */
        public String target() {
            return query == null ? path : path + "?" + query;
        }
    }

    /** Decides, per client, whether a request is admitted; called under the target's lock. */
    interface Limiter {
        /** Whether {@code client}'s request arriving at {@code nanos} ({@code System.nanoTime()}) is admitted. */
        boolean admit(String client, long nanos);
    }

    /** The status of a {@link Hit} that got no answer ({@code /reset}). */
    public static final int NO_ANSWER = 0;

    /** The longest {@code /delay/MS}. */
    public static final long MAX_DELAY_MS = 10_000;

    /** The most hosts a {@link #hiddenPerIp} target serves (127.0.0.2 to 127.0.0.33). */
    public static final int MAX_HOSTS = 32;

    private final Server server = new Server();
    private final Limiter limiter;
    private final String description;
    private final boolean perIp;
    private final boolean retryAfter;
    private final int hiddenLimit;
    private final List<Hit> hits = new ArrayList<>();
    private final java.util.Set<String> headerNames = new java.util.TreeSet<>();

    /**
     * A target that allows each client {@code limit} requests in any window of {@code windowMillis}.
     *
     * @param limit        requests allowed per client in any window
     * @param windowMillis the window
     */
    public DemoTarget(int limit, long windowMillis) throws Exception {
        this(new SlidingWindow(limit, TimeUnit.MILLISECONDS.toNanos(windowMillis)),
                limit + " requests per client per " + windowMillis + " ms", List.of("127.0.0.1"), true, 0);
    }

    /**
     * A site of {@code hosts} hosts, on 127.0.0.2, 127.0.0.3, ... (each its own port), each of which admits at
     * most {@code perSecond} pages from one client IP address in any second, and answers 429 beyond that: a limit
     * per (address, host), hidden from the scraper. The {@code Via} header plays no part: only a proxy that
     * connects from an address of its own ({@link DemoProxy}'s source address) has a limit of its own.
     *
     * @param perSecond  pages per client address per host in any 1 s window, at least 1
     * @param hosts      how many hosts, 1 to {@value #MAX_HOSTS}
     * @param retryAfter whether a 429 carries {@code Retry-After: 1}
     */
    public static DemoTarget hiddenPerIp(int perSecond, int hosts, boolean retryAfter) throws Exception {
        if (perSecond < 1 || hosts < 1 || hosts > MAX_HOSTS) {
            throw new IllegalArgumentException("a hidden limit needs at least 1 page per second and 1 to "
                    + MAX_HOSTS + " hosts, was " + perSecond + " and " + hosts);
        }
        return new DemoTarget(new SlidingWindow(perSecond, TimeUnit.SECONDS.toNanos(1)), perSecond
                + " pages per client address per host per second (hidden)", hostAddresses(hosts), retryAfter,
                perSecond);
    }

    /**
     * A site of {@code hosts} hosts as {@link #hiddenPerIp}, each of which limits every client IP address the way
     * nginx's {@code limit_req zone=$binary_remote_addr rate=Nr/s burst=B nodelay} does ({@link #nginxLike}): at
     * most {@code perSecond} pages per second from one address at one host in the long run, {@code burst} more
     * at once, and 429 beyond that, without {@code Retry-After} (nginx sends none). The rate is the hidden limit:
     * the scraper is not told it. What most sites run, and kinder to a sender's timing than a sliding window: a
     * request that arrives a little early is absorbed by the burst, a rate above the limit is refused once it has
     * used the burst up.
     *
     * @param perSecond pages per second per client address per host, at least 1
     * @param burst     nginx's {@code burst}, at least 0
     * @param hosts     how many hosts, 1 to {@value #MAX_HOSTS}
     */
    public static DemoTarget hiddenPerIpLikeNginx(int perSecond, int burst, int hosts) throws Exception {
        if (perSecond < 1 || burst < 0 || hosts < 1 || hosts > MAX_HOSTS) {
            throw new IllegalArgumentException("a hidden limit needs at least 1 page per second, a burst of at least"
                    + " 0 and 1 to " + MAX_HOSTS + " hosts, was " + perSecond + ", " + burst + " and " + hosts);
        }
        return new DemoTarget(new LimitReq(perSecond, burst), "like nginx limit_req rate=" + perSecond + "r/s burst="
                + burst + " per client address per host (hidden)", hostAddresses(hosts), false, perSecond);
    }

    /** 127.0.0.2, 127.0.0.3, ...: one loopback address per host. */
    private static List<String> hostAddresses(int hosts) {
        List<String> addresses = new ArrayList<>();
        for (int i = 0; i < hosts; i++) {
            addresses.add("127.0.0." + (2 + i));
        }
        return addresses;
    }

    /**
     * A target that limits each client the way nginx's {@code limit_req zone=... rate=Nr/s burst=B nodelay}
     * does (ngx_http_limit_req_module): a leaky bucket of "excess" requests per client, drained at
     * {@code ratePerSecond}; each request adds one, a request that would make the excess exceed {@code burst} is
     * refused (and changes nothing), and a client's first request starts at excess 0. So {@code burst + 1}
     * requests pass at once, then one per {@code 1/rate} s. Like nginx it counts in whole milliseconds and
     * thousandths of a request.
     *
     * @param ratePerSecond requests per second per client, at least 1
     * @param burst         nginx's {@code burst}, at least 0
     */
    public static DemoTarget nginxLike(int ratePerSecond, int burst) throws Exception {
        if (ratePerSecond < 1 || burst < 0) {
            throw new IllegalArgumentException("rate must be at least 1 r/s and burst at least 0, were "
                    + ratePerSecond + " and " + burst);
        }
        return new DemoTarget(new LimitReq(ratePerSecond, burst), "like nginx limit_req rate=" + ratePerSecond
                + "r/s burst=" + burst + " per client", List.of("127.0.0.1"), true, 0);
    }

    private DemoTarget(Limiter limiter, String description, List<String> addresses, boolean retryAfter,
                       int hiddenLimit) throws Exception {
        this.limiter = limiter;
        this.description = description;
        this.perIp = hiddenLimit > 0;
        this.retryAfter = retryAfter;
        this.hiddenLimit = hiddenLimit;
        for (String address : addresses) {
            ServerConnector connector = new ServerConnector(server);
            connector.setHost(address);
            acceptWhatRealServersAccept(connector);
            server.addConnector(connector);
        }
        server.setHandler(new Handler.Abstract() {
            @Override
            public boolean handle(Request request, Response response, Callback callback) {
                answer(request, response, callback);
                return true;
            }
        });
        server.start();
    }

    /**
     * Lets a demo server take request targets that Jetty refuses by default as ambiguous ({@code %2F} in a path
     * segment, empty segments), as nginx, tinyproxy and most real servers do: the demo must show what a target
     * receives, not a 400 of its own.
     */
    static void acceptWhatRealServersAccept(ServerConnector connector) {
        connector.getConnectionFactory(HttpConnectionFactory.class).getHttpConfiguration()
                .setUriCompliance(UriCompliance.LEGACY);
    }

    /** The base URL of the first host, {@code http://127.0.0.1:PORT} ({@link #hiddenPerIp}: 127.0.0.2). */
    public String baseUrl() {
        return baseUrls().get(0);
    }

    /** The hidden limit of a {@link #hiddenPerIp} target, pages per client address per host per second; else 0. */
    public int hiddenLimit() {
        return hiddenLimit;
    }

    /** How far this run came to the hidden limit, as the target saw it ({@link #hiddenPerIp} targets only). */
    public Convergence convergence(List<String> clients) {
        if (hiddenLimit == 0) {
            throw new IllegalStateException("only a target with a hidden limit measures convergence; this one allows "
                    + description);
        }
        return Convergence.of(hits(), clients, hiddenLimit, server.getConnectors().length);
    }

    /** The base URL of every host, {@code http://ADDRESS:PORT}, in order. */
    public List<String> baseUrls() {
        List<String> urls = new ArrayList<>();
        for (org.eclipse.jetty.server.Connector c : server.getConnectors()) {
            ServerConnector connector = (ServerConnector) c;
            urls.add("http://" + connector.getHost() + ":" + connector.getLocalPort());
        }
        return urls;
    }

    /** Requests per {@code /busy/} path so far. */
    private final Map<String, Integer> busy = new ConcurrentHashMap<>();

    private void answer(Request request, Response response, Callback callback) {
        long arrived = System.nanoTime();
        String path = request.getHttpURI().getPath();
        String client = client(request.getHeaders().get(HttpHeader.VIA));
        String query = request.getHttpURI().getQuery();
        String ip = Request.getRemoteAddr(request);
        String host = Request.getLocalAddr(request) + ":" + Request.getLocalPort(request);
        synchronized (this) {
            request.getHeaders().forEach(field -> headerNames.add(field.getLowerCaseName()));
        }
        if (path.equals("/reset")) {
            record(new Hit(client, arrived, path, NO_ANSWER, query, ip, host));
            // no status line, no headers: the proxy in front sees its connection closed under it
            request.getConnectionMetaData().getConnection().getEndPoint().close();
            callback.failed(new EofException("closed without an answer")); // Eof: Jetty logs no stack trace
            return;
        }
        if (path.startsWith("/delay/")) {
            long millis = Math.min(MAX_DELAY_MS, Long.parseLong(path.substring("/delay/".length())));
            record(new Hit(client, arrived, path, 200, query, ip, host));
            enter(ip, host);
            request.getComponents().getScheduler().schedule(() -> {
                leave(ip, host);
                respond(response, callback, path, 200, "1");
            }, millis, TimeUnit.MILLISECONDS);
            return;
        }
        int status;
        String retryAfter = "1";
        if (path.startsWith("/status/")) {
            status = Integer.parseInt(path.substring("/status/".length()));
        } else if (path.startsWith("/retry-after/")) {
            status = 429;
            retryAfter = URLDecoder.decode(path.substring("/retry-after/".length()), StandardCharsets.UTF_8);
        } else if (path.startsWith("/busy/")) {
            String[] parts = path.substring("/busy/".length()).split("/", 3);
            status = busy.merge(path, 1, Integer::sum) <= Integer.parseInt(parts[0]) ? 429 : 200;
            retryAfter = parts.length > 1 && parts[1].startsWith("retry-after-")
                    ? parts[1].substring("retry-after-".length()) : null;
        } else if (path.startsWith("/page/")) {
            status = admit(perIp ? ip + " " + host : client, arrived) ? 200 : 429;
            retryAfter = this.retryAfter ? "1" : null;
        } else {
            status = 404;
        }
        record(new Hit(client, arrived, path, status, query, ip, host));
        respond(response, callback, path, status, retryAfter);
    }

    private static void respond(Response response, Callback callback, String path, int status, String retryAfter) {
        response.setStatus(status);
        if (status == 429 && retryAfter != null) {
            response.getHeaders().put(HttpHeader.RETRY_AFTER, retryAfter);
        }
        response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/html; charset=utf-8");
        String body = status == 200 ? "<html><body><h1>" + path + "</h1>" + "<p>lorem ipsum</p>".repeat(
                1 + Math.floorMod(path.hashCode(), 20)) + "</body></html>\n" : "status " + status + "\n";
        Content.Sink.write(response, true, body, callback);
    }

    /** Requests being answered now, and the most at once, per client address and per host ({@code /delay/} only). */
    private final Map<String, long[]> concurrent = new HashMap<>();

    private synchronized void enter(String ip, String host) {
        for (String key : new String[] {"ip " + ip, "host " + host}) {
            long[] c = concurrent.computeIfAbsent(key, k -> new long[2]);
            c[0]++;
            c[1] = Math.max(c[1], c[0]);
        }
    }

    private synchronized void leave(String ip, String host) {
        concurrent.get("ip " + ip)[0]--;
        concurrent.get("host " + host)[0]--;
    }

    /**
     * The most {@code /delay/} requests this target was answering at once from the client address {@code ip} (each
     * demo proxy has its own), or to {@code host} ({@code address:port}, as {@link Hit#host()}); 0 for none.
     */
    public synchronized long peakConcurrent(String ip, String host) {
        long[] c = concurrent.get(ip != null ? "ip " + ip : "host " + host);
        return c == null ? 0 : c[1];
    }

    private synchronized boolean admit(String client, long now) {
        return limiter.admit(client, now);
    }

    /** At most {@code limit} requests in any window; a refused request is not counted. */
    static final class SlidingWindow implements Limiter {
        private final int limit;
        private final long windowNanos;
        private final Map<String, Deque<Long>> recent = new HashMap<>();

        SlidingWindow(int limit, long windowNanos) {
            this.limit = limit;
            this.windowNanos = windowNanos;
        }

        @Override
        public boolean admit(String client, long now) {
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
    }

    /**
     * ngx_http_limit_req_module's test, line for line: {@code excess} in thousandths of a request. Also keeps each
     * client's peak excess, the highest it stored (so at most {@code burst}: a refused request stores nothing).
     */
    static final class LimitReq implements Limiter {
        private final long rate;
        private final long burst;
        private final Map<String, long[]> state = new HashMap<>(); // client -> {excess, last ms, peak excess}

        LimitReq(int ratePerSecond, int burst) {
            this.rate = ratePerSecond * 1000L;
            this.burst = burst * 1000L;
        }

        @Override
        public boolean admit(String client, long nanos) {
            long now = TimeUnit.NANOSECONDS.toMillis(nanos);
            long[] s = state.get(client);
            if (s == null) {
                state.put(client, new long[] {0, now, 0});
                return true;
            }
            long ms = Math.max(0, now - s[1]);
            long excess = Math.max(0, s[0] - rate * ms / 1000 + 1000);
            if (excess > burst) {
                return false;
            }
            s[0] = excess;
            s[1] = now;
            s[2] = Math.max(s[2], excess);
            return true;
        }

        /** The client's highest excess so far in thousandths of a request; 0 for a client not seen. */
        long peakExcess(String client) {
            long[] s = state.get(client);
            return s == null ? 0 : s[2];
        }
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

    /** The names of every request header the target has received so far, in lower case. */
    public synchronized java.util.Set<String> headerNames() {
        return java.util.Set.copyOf(headerNames);
    }

    /**
     * The highest excess nginx's test stored for {@code client} on this {@link #nginxLike} target: thousandths of a
     * request, from 0 (every request in its slot, or the first) to {@code burst * 1000}; a refused request stores
     * none, so a peak at {@code burst * 1000} leaves no slack. 0 for a client not seen.
     *
     * @throws IllegalStateException when this target is not {@link #nginxLike}
     */
    public synchronized long peakExcess(String client) {
        if (!(limiter instanceof LimitReq limitReq)) {
            throw new IllegalStateException("Only a target like nginx limit_req keeps an excess; this one allows "
                    + description);
        }
        return limitReq.peakExcess(client);
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
        return baseUrl() + " (" + description + ")";
    }

}
