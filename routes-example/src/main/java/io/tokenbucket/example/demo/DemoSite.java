package io.tokenbucket.example.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The whole offline demo on loopback: a {@link DemoTarget} and {@code proxies} {@link DemoProxy} forward
 * proxies with credentials, plus the files the scraper reads: a proxy file (one line per proxy, each with its
 * own {@code limit=}) and a URL file of {@code urls} pages of the target, spread over its hosts in turn. Proxy
 * {@code p<i>} connects to the target from 127.0.0.(10+i) ({@link #sourceAddress}).
 */
public final class DemoSite implements AutoCloseable {

    private final DemoTarget target;
    private final List<DemoProxy> proxies = new ArrayList<>();
    private final Path proxyFile;
    private final Path urlFile;

    /**
     * A site whose proxies keep their connections open ({@link DemoProxy.Mode#KEEPALIVE}) and whose target
     * allows {@code targetLimit} requests per proxy in any {@code windowMillis}.
     *
     * @param dir          where the proxy and URL files are written
     * @param proxies      how many proxies (ids p1, p2, ...)
     * @param proxyLimit   each proxy's {@code limit=} in the proxy file, e.g. {@code 4/1s}; null for none
     * @param urls         how many URLs
     * @param targetLimit  requests per proxy the target allows per {@code windowMillis}
     * @param windowMillis the target's window
     */
    public DemoSite(Path dir, int proxies, String proxyLimit, int urls, int targetLimit, long windowMillis)
            throws Exception {
        this(dir, proxies, proxyLimit, urls, new DemoTarget(targetLimit, windowMillis), DemoProxy.Mode.KEEPALIVE);
    }

    /**
     * @param dir        where the proxy and URL files are written
     * @param proxies    how many proxies (ids p1, p2, ...)
     * @param proxyLimit each proxy's {@code limit=} in the proxy file, e.g. {@code 4/1s}; null for none
     * @param urls       how many URLs
     * @param target     the target site (closed with the site)
     * @param mode       how every proxy treats its client connections
     */
    public DemoSite(Path dir, int proxies, String proxyLimit, int urls, DemoTarget target, DemoProxy.Mode mode)
            throws Exception {
        this.target = target;
        for (int i = 1; i <= proxies; i++) {
            // a different password per proxy, so a mix-up would show as 407s; its own source address, so a target
            // that limits per client IP sees one per proxy
            this.proxies.add(new DemoProxy("p" + i, "scraper", "s3cret-" + i, mode, sourceAddress(i)));
        }
        proxyFile = dir.resolve("proxies.txt");
        writeProxyFile(proxyLimit);
        urlFile = dir.resolve("urls.txt");
        // the pages spread over the target's hosts in turn: /page/1 on the first, /page/2 on the second, ...
        List<String> hosts = target.baseUrls();
        Files.writeString(urlFile, IntStream.rangeClosed(1, urls)
                .mapToObj(i -> hosts.get((i - 1) % hosts.size()) + "/page/" + i)
                .collect(Collectors.joining("\n", "", "\n")));
    }

    /** The address proxy {@code p<i>} connects to targets from: 127.0.0.(10+i), for 1 to 200 proxies. */
    public static String sourceAddress(int i) {
        if (i < 1 || i > 200) {
            throw new IllegalArgumentException("a demo site has 1 to 200 proxies, was proxy " + i);
        }
        return "127.0.0." + (10 + i);
    }

    /** (Re)writes the proxy file with every proxy, each with {@code limit} when not null. */
    public void writeProxyFile(String limit) throws IOException {
        writeProxyFile(proxies, limit);
    }

    /** Writes the proxy file with the given proxies only (to show that the file is watched). */
    public void writeProxyFile(List<DemoProxy> listed, String limit) throws IOException {
        StringBuilder text = new StringBuilder("# demo proxies: http://user:password@host:port id=NAME limit=N/period\n");
        for (DemoProxy proxy : listed) {
            text.append(proxy.line()).append(limit == null ? "" : " limit=" + limit).append('\n');
        }
        Files.writeString(proxyFile, text);
    }

    /**
     * Sends one request through every proxy to the target's {@code /status/204} (which counts against no
     * limit), so that the demo servers have loaded their classes: a test of a scraper's cold start then measures
     * the scraper, not the first forward of a proxy in the test's own JVM.
     *
     * @throws IllegalStateException when a proxy does not answer 204
     */
    public void warmUp() throws IOException {
        for (DemoProxy proxy : proxies) {
            int status = proxy.get(target.baseUrl() + "/status/204");
            if (status != 204) {
                throw new IllegalStateException("proxy " + proxy.id() + " answered " + status + " to its warm-up");
            }
        }
    }

    /** The target site. */
    public DemoTarget target() {
        return target;
    }

    /** The proxies, p1 first. */
    public List<DemoProxy> proxies() {
        return proxies;
    }

    /** The proxy file. */
    public Path proxyFile() {
        return proxyFile;
    }

    /** The URL file. */
    public Path urlFile() {
        return urlFile;
    }

    @Override
    public void close() throws Exception {
        for (DemoProxy proxy : proxies) {
            proxy.close();
        }
        target.close();
    }
}
