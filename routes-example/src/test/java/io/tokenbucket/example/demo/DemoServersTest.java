package io.tokenbucket.example.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The demo servers behave as the real ones they stand for, on the wire: what a proxy in each mode answers and
 * whether it keeps the connection, and the nginx-like target's limit. Raw sockets, so nothing is interpreted.
 */
class DemoServersTest {

    @Test
    void aClosingProxyAnswersHttp11WithoutAWordAboutClosingAndThenCloses() throws Exception {
        try (DemoTarget target = new DemoTarget(1000, 1000);
             DemoProxy proxy = new DemoProxy("p1", "scraper", "s3cret", DemoProxy.Mode.CLOSE)) {
            try (Socket socket = connect(proxy)) {
                String response = exchange(socket, target, "/page/1", "scraper:s3cret");
                assertThat(response).startsWith("HTTP/1.1 200 ").doesNotContainIgnoringCase("connection:");
                assertThat(socket.getInputStream().read()).as("after the response").isEqualTo(-1);
            }
            assertThat(proxy.forwarded()).isEqualTo(1);
        }
    }

    @Test
    void anHttp10ProxyAnswersHttp10AndCloses() throws Exception {
        try (DemoTarget target = new DemoTarget(1000, 1000);
             DemoProxy proxy = new DemoProxy("p1", "scraper", "s3cret", DemoProxy.Mode.HTTP10)) {
            try (Socket socket = connect(proxy)) {
                String response = exchange(socket, target, "/page/1", "scraper:s3cret");
                assertThat(response).startsWith("HTTP/1.0 200 ").contains("Content-Length: ");
                assertThat(socket.getInputStream().read()).as("after the response").isEqualTo(-1);
            }
            // its own answers too, like tinyproxy's
            try (Socket socket = connect(proxy)) {
                assertThat(exchange(socket, target, "/page/2", "scraper:wrong")).startsWith("HTTP/1.0 407 ");
            }
            assertThat(proxy.challenged()).isEqualTo(1);
        }
    }

    @Test
    void aKeepAliveProxyServesTwoRequestsOnOneConnectionAndChecksTheExactCredentials() throws Exception {
        String password = ") & {{env:HOME}} @ : % + \u00fc";
        try (DemoTarget target = new DemoTarget(1000, 1000);
             DemoProxy proxy = new DemoProxy("p1", "us@er", password)) {
            try (Socket socket = connect(proxy)) {
                assertThat(exchange(socket, target, "/page/1", "us@er:" + password)).startsWith("HTTP/1.1 200 ");
                assertThat(exchange(socket, target, "/page/2?q=1", "us@er:" + password)).startsWith("HTTP/1.1 200 ");
            }
            assertThat(proxy.connections()).isEqualTo(1);
            assertThat(target.hits()).extracting(DemoTarget.Hit::target).containsExactly("/page/1", "/page/2?q=1");
            // the proxy line encodes what a URL's user info cannot hold as it is
            assertThat(proxy.line()).startsWith("http://us%40er:%29%20%26%20%7B%7Benv%3AHOME%7D%7D%20%40%20%3A%20"
                    + "%25%20%2B%20%C3%BC@127.0.0.1:");
        }
    }

    @Test
    void theNginxLikeTargetLimitsThePagesOfEachClientNamedByVia() throws Exception {
        // rate=1r/s burst=3: a client's first four requests pass however slowly they come (nginx's excess only ever
        // drains), a fifth within the same second is refused. How the limit counts is DemoTargetLimitsTest's; this
        // is the wiring: /page/ requests, per Via client, 429 with Retry-After
        try (DemoTarget target = DemoTarget.nginxLike(1, 3)) {
            List<String> responses = new ArrayList<>();
            try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port(target))) {
                for (int i = 1; i <= 5; i++) {
                    responses.add(exchange(socket, "GET /page/" + i + " HTTP/1.1\r\nHost: t\r\n"
                            + "Via: 1.1 p1\r\n\r\n"));
                }
                // another client has a bucket of its own
                responses.add(exchange(socket, "GET /page/6 HTTP/1.1\r\nHost: t\r\nVia: 1.1 p2\r\n\r\n"));
            }
            List<Integer> statuses = responses.stream().map(DemoServersTest::status).toList();
            assertThat(statuses.subList(0, 4)).as("p1's first four").containsOnly(200);
            assertThat(statuses.get(5)).as("p2's first").isEqualTo(200);
            assertThat(target.hits()).extracting(DemoTarget.Hit::client)
                    .containsExactly("p1", "p1", "p1", "p1", "p1", "p2");
            // the fifth's excess is 4000 less the whole milliseconds since the first (the limiter's own reckoning,
            // from the arrival stamps): refused below a second; after a second or more (a stalled machine) it may pass
            List<DemoTarget.Hit> hits = target.hits();
            long spanMs = TimeUnit.NANOSECONDS.toMillis(hits.get(4).nanos())
                    - TimeUnit.NANOSECONDS.toMillis(hits.get(0).nanos());
            if (spanMs < 1000) {
                assertThat(statuses.get(4)).as("p1's fifth, %d ms after its first", spanMs).isEqualTo(429);
                assertThat(responses.get(4)).contains("Retry-After: 1\r\n");
                assertThat(hits.get(4).status()).isEqualTo(429);
            }
        }
    }

    @Test
    void theHiddenLimitCountsEachSourceAddressOnEachHostAndTheTargetSeesOneAddressPerProxy() throws Exception {
        // 2 pages per client address per host in any second, 429 without Retry-After beyond it
        try (DemoTarget target = DemoTarget.hiddenPerIp(2, 2, false);
             DemoProxy p1 = new DemoProxy("p1", "u", "pw", DemoProxy.Mode.KEEPALIVE, DemoSite.sourceAddress(1));
             DemoProxy p2 = new DemoProxy("p2", "u", "pw", DemoProxy.Mode.KEEPALIVE, DemoSite.sourceAddress(2))) {
            List<String> hosts = target.baseUrls();
            assertThat(hosts).hasSize(2);
            assertThat(hosts.get(0)).startsWith("http://127.0.0.2:");
            assertThat(hosts.get(1)).startsWith("http://127.0.0.3:");
            List<String> responses = new ArrayList<>();
            try (Socket socket = connect(p1)) {
                for (int i = 1; i <= 3; i++) {
                    responses.add(exchange(socket, hosts.get(0), "/page/" + i, "u:pw"));
                }
                responses.add(exchange(socket, hosts.get(1), "/page/4", "u:pw")); // another host
            }
            try (Socket socket = connect(p2)) {
                responses.add(exchange(socket, hosts.get(0), "/page/5", "u:pw")); // another address
            }
            List<DemoTarget.Hit> hits = target.hits();
            assertThat(hits).extracting(DemoTarget.Hit::ip)
                    .containsExactly("127.0.0.11", "127.0.0.11", "127.0.0.11", "127.0.0.11", "127.0.0.12");
            assertThat(hits).extracting(DemoTarget.Hit::host).containsExactly(host(hosts.get(0)),
                    host(hosts.get(0)), host(hosts.get(0)), host(hosts.get(1)), host(hosts.get(0)));
            List<Integer> statuses = responses.stream().map(DemoServersTest::status).toList();
            assertThat(statuses.subList(0, 2)).containsOnly(200);
            assertThat(statuses.subList(3, 5)).as("p1 on the other host, p2 on the first").containsOnly(200);
            long spanMs = TimeUnit.NANOSECONDS.toMillis(hits.get(2).nanos() - hits.get(0).nanos());
            if (spanMs < 1000) { // a stalled machine may spread them over more than the window
                assertThat(statuses.get(2)).as("p1's third page on the first host, %d ms after its first", spanMs)
                        .isEqualTo(429);
                assertThat(responses.get(2)).doesNotContain("Retry-After");
            }
        }
    }

    private static String host(String baseUrl) {
        return baseUrl.substring("http://".length());
    }

    private static Socket connect(DemoProxy proxy) throws IOException {
        return new Socket(InetAddress.getLoopbackAddress(), proxy.port());
    }

    private static int port(DemoTarget target) {
        return Integer.parseInt(target.baseUrl().substring(target.baseUrl().lastIndexOf(':') + 1));
    }

    private static int status(String response) {
        return Integer.parseInt(response.substring(9, 12));
    }

    /** One proxied GET on the socket; returns the response head and body. */
    private static String exchange(Socket socket, DemoTarget target, String path, String credentials)
            throws IOException {
        return exchange(socket, target.baseUrl(), path, credentials);
    }

    private static String exchange(Socket socket, String baseUrl, String path, String credentials)
            throws IOException {
        String auth = Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8));
        return exchange(socket, "GET " + baseUrl + path + " HTTP/1.1\r\nHost: " + host(baseUrl)
                + "\r\nProxy-Authorization: Basic " + auth + "\r\n\r\n");
    }

    /** Writes a request and reads one response, delimited by its Content-Length. */
    private static String exchange(Socket socket, String request) throws IOException {
        socket.getOutputStream().write(request.getBytes(StandardCharsets.UTF_8));
        socket.getOutputStream().flush();
        InputStream in = socket.getInputStream();
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("closed before the end of the response head: " + head);
            }
            head.write(b);
        }
        String text = head.toString(StandardCharsets.ISO_8859_1);
        int length = 0;
        for (String line : text.split("\r\n")) {
            if (line.toLowerCase().startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).strip());
            }
        }
        return text + new String(in.readNBytes(length), StandardCharsets.UTF_8);
    }
}
