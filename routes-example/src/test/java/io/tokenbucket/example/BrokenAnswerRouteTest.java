package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import io.tokenbucket.example.demo.DemoSite;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Answers that break off after their headers, forwarded by a proxy as they come: a body cut short (the target
 * closed mid-page), a body that never ends (a tarpit, a stuck stream: a chunk now and then, for ever, so no read
 * ever waits {@code example.responseTimeout} for data), and one that streams without end as fast as it can (it
 * would fill the heap long before any deadline). Each attempt must fail, be retried, and the URL end with a
 * reason a person understands; the other URLs are fetched. The proxy is a plain socket server on loopback that
 * forwards such answers for their paths and a short page for the others, and counts the requests per path.
 */
class BrokenAnswerRouteTest {

    @TempDir
    Path dir;

    @Test
    void aBodyCutShortFailsItsAttemptAndTheUrlIsTriedAgain() throws Exception {
        try (BreakingProxy proxy = new BreakingProxy();
             DemoSite site = new DemoSite(dir, 1, "10/100ms", 0, 1000, 1000)) {
            Path proxies = Files.writeString(dir.resolve("breaking-proxies.txt"), proxy.line() + "\n");
            try (ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of(
                    "example.proxyFile", proxies.toString(), "example.maxAttempts", "2"))) {
                String cut = site.target().baseUrl() + "/cut-short";
                List<String> urls = List.of(cut, site.target().baseUrl() + "/page/1");
                scraper.scrape(urls);

                assertThat(Stream.concat(scraper.resultLines().stream(), scraper.deadLines().stream())
                        .map(line -> line.getString("url"))).containsExactlyInAnyOrderElementsOf(urls);
                // the proxy that forwarded what it got is not to blame for it; the URL had its two attempts
                assertThat(scraper.deadLines()).singleElement().satisfies(line -> {
                    assertThat(line.getString("url")).isEqualTo(cut);
                    assertThat(line.getString("reason")).contains("Premature end of Content-Length delimited")
                            .endsWith("via t1");
                    assertThat(line.getInteger("attempts")).isEqualTo(2);
                });
                assertThat(proxy.requests).containsEntry("/cut-short", 2).containsEntry("/page/1", 1);
                assertThat(scraper.pool().health()).containsEntry("t1", "healthy");
            }
        }
    }

    /**
     * camel-http replaces the message before it reads the body, so a body that breaks off takes the attempt's
     * headers with it: the proxy's id and the throttle's wait must come from what was noted before the fetch.
     */
    @ParameterizedTest
    @ValueSource(strings = {"java", "yaml"})
    void aBodyCutShortKeepsItsAttemptsProxyAndWait(String dsl) throws Exception {
        try (BreakingProxy proxy = new BreakingProxy();
             DemoSite site = new DemoSite(dir, 1, "10/100ms", 0, 1000, 1000)) {
            // one token a second: the second attempt waits for its token, most of a second
            Path proxies = Files.writeString(dir.resolve("breaking-proxies.txt"), proxy.line() + " limit=1/1s\n");
            List<String> logged = new CopyOnWriteArrayList<>();
            try (ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of(
                    "example.proxyFile", proxies.toString(), "example.maxAttempts", "2"),
                    context -> context.getCamelContextExtension().addLogListener((exchange, logger, message) -> {
                        logged.add(message);
                        return message;
                    }))) {
                scraper.scrape(List.of(site.target().baseUrl() + "/cut-short"));

                assertThat(proxy.requests).containsEntry("/cut-short", 2);
                assertThat(scraper.deadLines()).singleElement().satisfies(line -> {
                    assertThat(line.getInteger("attempts")).isEqualTo(2);
                    assertThat(line.getLong("waitedMs")).isPositive();
                });
                assertThat(logged.stream().filter(m -> m.contains("Premature end"))).hasSize(2)
                        .allSatisfy(m -> assertThat(m).startsWith("t1: "));
            }
        }
    }

    @Test
    void anAnswerThatNeverEndsFailsItsAttemptAfterTheResponseTimeout() throws Exception {
        try (BreakingProxy proxy = new BreakingProxy();
             DemoSite site = new DemoSite(dir, 1, "10/100ms", 0, 1000, 1000)) {
            Path proxies = Files.writeString(dir.resolve("breaking-proxies.txt"), proxy.line() + "\n");
            try (ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of(
                    "example.proxyFile", proxies.toString(), "example.responseTimeout", "1000",
                    "example.maxAttempts", "2"))) {
                String endless = site.target().baseUrl() + "/never-ends";
                List<String> urls = List.of(endless, site.target().baseUrl() + "/page/1");
                long start = System.nanoTime();
                scraper.scrape(urls);

                assertThat(Stream.concat(scraper.resultLines().stream(), scraper.deadLines().stream())
                        .map(line -> line.getString("url"))).containsExactlyInAnyOrderElementsOf(urls);
                assertThat(scraper.deadLines()).singleElement().satisfies(line -> {
                    assertThat(line.getString("url")).isEqualTo(endless);
                    assertThat(line.getString("reason")).contains("did not end within 1000 ms").endsWith("via t1");
                    assertThat(line.getInteger("attempts")).isEqualTo(2);
                });
                assertThat(scraper.resultLines()).singleElement()
                        .satisfies(line -> assertThat(line.getInteger("status")).isEqualTo(200));
                assertThat(proxy.requests).containsEntry("/never-ends", 2).containsEntry("/page/1", 1);
                // two attempts of about a second each; generous for a noisy machine
                assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start)).isLessThan(20);
            }
        }
    }

    @Test
    void anAnswerThatFloodsFailsItsAttemptPastEightMebibytes() throws Exception {
        try (BreakingProxy proxy = new BreakingProxy();
             DemoSite site = new DemoSite(dir, 1, "10/100ms", 0, 1000, 1000)) {
            Path proxies = Files.writeString(dir.resolve("breaking-proxies.txt"), proxy.line() + "\n");
            try (ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of(
                    "example.proxyFile", proxies.toString(), "example.responseTimeout", "0",
                    "example.maxAttempts", "2"))) {
                String floods = site.target().baseUrl() + "/floods";
                List<String> urls = List.of(floods, site.target().baseUrl() + "/page/1");
                scraper.scrape(urls);

                assertThat(Stream.concat(scraper.resultLines().stream(), scraper.deadLines().stream())
                        .map(line -> line.getString("url"))).containsExactlyInAnyOrderElementsOf(urls);
                // no response timeout, so no deadline: only the size ends each attempt
                assertThat(scraper.deadLines()).singleElement().satisfies(line -> {
                    assertThat(line.getString("url")).isEqualTo(floods);
                    assertThat(line.getString("reason")).contains("longer than 8388608 bytes").endsWith("via t1");
                    assertThat(line.getInteger("attempts")).isEqualTo(2);
                });
                assertThat(proxy.requests).containsEntry("/floods", 2).containsEntry("/page/1", 1);
            }
        }
    }

    /**
     * A forward proxy that answers {@code /cut-short} with 10 of the 100 bytes it announces and closes,
     * {@code /never-ends} with a chunked body that never ends, {@code /floods} with one that never ends as fast as it
     * can, anything else 200.
     */
    static final class BreakingProxy implements AutoCloseable {
        final Map<String, Integer> requests = new ConcurrentHashMap<>();
        private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        private final AtomicInteger threads = new AtomicInteger();

        BreakingProxy() throws IOException {
            Thread accept = new Thread(this::accept, "breaking-proxy");
            accept.setDaemon(true);
            accept.start();
        }

        String line() {
            return "http://127.0.0.1:" + server.getLocalPort() + " id=t1";
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    Socket socket = server.accept();
                    Thread connection = new Thread(() -> serve(socket), "breaking-" + threads.incrementAndGet());
                    connection.setDaemon(true);
                    connection.start();
                } catch (IOException closed) {
                    return;
                }
            }
        }

        private void serve(Socket socket) {
            try (socket) {
                BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(),
                        StandardCharsets.ISO_8859_1));
                OutputStream out = socket.getOutputStream();
                for (String request = in.readLine(); request != null; request = in.readLine()) {
                    while (!in.readLine().isEmpty()) {
                        // the request's headers
                    }
                    String target = request.split(" ")[1];
                    String path = target.replaceFirst("^http://[^/]*", "");
                    requests.merge(path, 1, Integer::sum);
                    if (path.equals("/cut-short")) {
                        out.write("HTTP/1.1 200 OK\r\nVia: 1.1 t1\r\nContent-Length: 100\r\n\r\nonly ten b"
                                .getBytes(StandardCharsets.ISO_8859_1));
                        return;
                    }
                    if (path.equals("/floods")) {
                        out.write(("HTTP/1.1 200 OK\r\nVia: 1.1 t1\r\nContent-Type: text/html\r\n"
                                + "Transfer-Encoding: chunked\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                        byte[] chunk = ("10000\r\n" + "x".repeat(65536) + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
                        while (!server.isClosed()) {
                            out.write(chunk);
                        }
                        return;
                    }
                    if (path.equals("/never-ends")) {
                        out.write(("HTTP/1.1 200 OK\r\nVia: 1.1 t1\r\nContent-Type: text/html\r\n"
                                + "Transfer-Encoding: chunked\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                        while (!server.isClosed()) {
                            out.write("1\r\nx\r\n".getBytes(StandardCharsets.ISO_8859_1));
                            out.flush();
                            // the target's pace, not a synchronisation: far below the response timeout
                            Thread.sleep(100);
                        }
                        return;
                    }
                    out.write("HTTP/1.1 200 OK\r\nVia: 1.1 t1\r\nContent-Length: 2\r\n\r\nok"
                            .getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                }
            } catch (IOException | InterruptedException | RuntimeException gone) {
                // the client closed the connection
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }
}
