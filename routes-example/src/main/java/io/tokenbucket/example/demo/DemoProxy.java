package io.tokenbucket.example.demo;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hc.core5.net.PercentCodec;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.ManagedSelector;
import org.eclipse.jetty.io.SocketChannelEndPoint;
import org.eclipse.jetty.proxy.ProxyHandler;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;

/**
 * A real HTTP forward proxy on 127.0.0.1: Jetty's {@link ProxyHandler.Forward} behind a Basic
 * {@code Proxy-Authorization} check (407 with a {@code Proxy-Authenticate} challenge otherwise). It adds
 * {@code Via: 1.1 <id>} to what it forwards, both ways: to the request, which is how {@link DemoTarget} tells
 * the proxies apart although they all connect from 127.0.0.1, and to the target's response, as RFC 9110
 * §7.6.3 asks and tinyproxy and squid do (Jetty's handler alone adds it to requests only). What the proxy
 * answers itself has no {@code Via}: Jetty's 502 when the target cannot be reached or closes without an
 * answer, the 407, and the answers of {@link #answerNext}. Given a source address, it connects to targets from
 * that address (Linux's loopback takes all of 127.0.0.0/8), so that a target sees one client IP per proxy, as it
 * does with a real fleet. {@link #stop()} kills it mid-run; {@link #start()}
 * brings it back on the same port. Its {@link Mode} makes it behave like the proxies of a real fleet
 * ({@link Mode#CLOSE}: tinyproxy).
 */
public final class DemoProxy implements AutoCloseable {

    /**
     * How the proxy treats its client connection. Debian's tinyproxy 1.11, seen by hand: it relays the target's
     * {@code HTTP/1.1 200} without any {@code Connection} header and closes the connection a few milliseconds
     * after the response; its own answers (407) are {@code HTTP/1.0} with {@code Connection: close}. A client
     * that pools connections then finds the connection closed when it reuses it.
     */
    public enum Mode {
        /** Keeps the connection open between requests (HTTP/1.1 persistent connections): Jetty's default. */
        KEEPALIVE,
        /**
         * Closes the connection after every response without announcing it (no {@code Connection: close}),
         * as tinyproxy does: the response says HTTP/1.1, so the client may pool the connection, and its next
         * request on it meets a closed socket.
         */
        CLOSE,
        /**
         * Answers with the status line {@code HTTP/1.0} and closes the connection after every response, as an
         * HTTP/1.0 proxy does (no keep-alive: the client must not reuse the connection).
         */
        HTTP10;

        /** The mode named {@code keepalive}, {@code close} or {@code http10} (any case). */
        public static Mode of(String name) {
            try {
                return valueOf(name.strip().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("A demo proxy mode is keepalive, close or http10, was '" + name
                        + "'");
            }
        }
    }

    private final String id;
    private final String username;
    private final String password;
    private final Mode mode;
    private final Server server = new Server();
    private final ServerConnector connector;
    private final AtomicLong forwarded = new AtomicLong();
    private final AtomicLong challenged = new AtomicLong();
    private final AtomicLong connections = new AtomicLong();
    private int ownAnswers;
    private int ownStatus;

    /**
     * A proxy that keeps its connections open ({@link Mode#KEEPALIVE}).
     *
     * @param id       the proxy id, also its {@code Via} name
     * @param username required user, or null for an open proxy
     * @param password required password
     */
    public DemoProxy(String id, String username, String password) throws Exception {
        this(id, username, password, Mode.KEEPALIVE);
    }

    /**
     * @param id       the proxy id, also its {@code Via} name
     * @param username required user, or null for an open proxy
     * @param password required password (any characters: the proxy line encodes them)
     * @param mode     how it treats its client connections
     */
    public DemoProxy(String id, String username, String password, Mode mode) throws Exception {
        this(id, username, password, mode, null);
    }

    /**
     * @param id            the proxy id, also its {@code Via} name
     * @param username      required user, or null for an open proxy
     * @param password      required password (any characters: the proxy line encodes them)
     * @param mode          how it treats its client connections
     * @param sourceAddress the local address it connects to targets from (e.g. {@code 127.0.0.11}); null for the
     *                      system's choice
     */
    public DemoProxy(String id, String username, String password, Mode mode, String sourceAddress)
            throws Exception {
        this.id = id;
        this.username = username;
        this.password = password;
        this.mode = mode;
        connector = mode == Mode.HTTP10 ? new Http10Connector(server) : new ServerConnector(server);
        connector.setHost("127.0.0.1");
        DemoTarget.acceptWhatRealServersAccept(connector);
        connector.addBean(new Connection.Listener() {
            @Override
            public void onOpened(Connection connection) {
                connections.incrementAndGet();
            }
        });
        server.addConnector(connector);
        ProxyHandler.Forward forward = new ProxyHandler.Forward() {
            @Override
            protected void configureHttpClient(org.eclipse.jetty.client.HttpClient httpClient) {
                super.configureHttpClient(httpClient);
                if (sourceAddress != null) {
                    httpClient.setBindAddress(new InetSocketAddress(sourceAddress, 0));
                }
            }

            @Override
            protected org.eclipse.jetty.client.Response.CompleteListener newServerToProxyResponseListener(
                    Request clientToProxyRequest, org.eclipse.jetty.client.Request proxyToServerRequest,
                    Response proxyToClientResponse, Callback proxyToClientCallback) {
                return new ProxyResponseListener(clientToProxyRequest, proxyToServerRequest, proxyToClientResponse,
                        proxyToClientCallback) {
                    @Override
                    public void onHeaders(org.eclipse.jetty.client.Response serverToProxyResponse) {
                        super.onHeaders(serverToProxyResponse); // copies the target's headers
                        proxyToClientResponse.getHeaders().add(HttpHeader.VIA, "1.1 " + id);
                    }
                };
            }
        };
        forward.setViaHost(id);
        server.setHandler(new Handler.Wrapper(forward) {
            @Override
            public boolean handle(Request request, Response response, Callback callback) throws Exception {
                if (mode != Mode.KEEPALIVE) {
                    // once the whole exchange is done (the response written): the socket is closed under the
                    // connection, so Jetty itself announces nothing
                    Request.addCompletionListener(request, failure -> request.getConnectionMetaData()
                            .getConnection().getEndPoint().close());
                }
                if (!authorised(request.getHeaders().get(HttpHeader.PROXY_AUTHORIZATION))) {
                    challenged.incrementAndGet();
                    return answer(407, response, callback);
                }
                int own = ownAnswer(); // after the check: a request without credentials is not counted
                if (own != 0) {
                    return answer(own, response, callback);
                }
                forwarded.incrementAndGet();
                return super.handle(request, response, callback);
            }
        });
        server.start();
    }

    /**
     * Makes the proxy answer the next {@code count} authorised requests itself with {@code status}, without
     * forwarding them and without {@code Via}: 407 (with a challenge) is a proxy refusing credentials it took
     * before, 503 an overloaded or broken proxy. {@code Integer.MAX_VALUE}: until called again with 0.
     */
    public synchronized void answerNext(int count, int status) {
        ownAnswers = count;
        ownStatus = status;
    }

    private synchronized int ownAnswer() {
        if (ownAnswers <= 0) {
            return 0;
        }
        if (ownAnswers != Integer.MAX_VALUE) {
            ownAnswers--;
        }
        return ownStatus;
    }

    private static boolean answer(int status, Response response, Callback callback) {
        response.setStatus(status);
        if (status == 407) {
            response.getHeaders().put(HttpHeader.PROXY_AUTHENTICATE, "Basic realm=\"demo-proxy\"");
        }
        Content.Sink.write(response, true, status == 407 ? "proxy authentication required\n"
                : "proxy error " + status + "\n", callback);
        return true;
    }

    private boolean authorised(String header) {
        if (username == null) {
            return true;
        }
        String expected = "Basic " + Base64.getEncoder()
                .encodeToString((username + ":" + password).getBytes(StandardCharsets.UTF_8));
        return expected.equals(header);
    }

    /**
     * The proxy line for a proxy file: {@code http://user:password@127.0.0.1:PORT id=ID}, the user and the
     * password percent-encoded (UTF-8) wherever they hold anything but letters, digits and {@code -._~}.
     */
    public String line() {
        String auth = username == null ? ""
                : PercentCodec.RFC3986.encode(username) + ":" + PercentCodec.RFC3986.encode(password) + "@";
        return "http://" + auth + "127.0.0.1:" + port() + " id=" + id;
    }

    /**
     * Sends one GET for {@code url} through this proxy, with its credentials, on a connection of its own, and
     * returns the status: for a test that must not measure the first forward of the proxy (Jetty's client loads
     * its classes then), {@link DemoSite#warmUp()}.
     */
    public int get(String url) throws IOException {
        URI target = URI.create(url);
        String auth = username == null ? "" : "Proxy-Authorization: Basic " + Base64.getEncoder()
                .encodeToString((username + ":" + password).getBytes(StandardCharsets.UTF_8)) + "\r\n";
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port())) {
            socket.getOutputStream().write(("GET " + url + " HTTP/1.1\r\nHost: " + target.getRawAuthority()
                    + "\r\n" + auth + "Connection: close\r\n\r\n").getBytes(StandardCharsets.UTF_8));
            String response = new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            return Integer.parseInt(response.substring(9, 12));
        }
    }

    /** The port it listens on (kept across stop and start). */
    public int port() {
        return connector.getLocalPort() > 0 ? connector.getLocalPort() : connector.getPort();
    }

    /** The proxy id. */
    public String id() {
        return id;
    }

    /** How it treats its client connections. */
    public Mode mode() {
        return mode;
    }

    /** Requests it forwarded to the target (their credentials were right). */
    public long forwarded() {
        return forwarded.get();
    }

    /** Requests it answered 407 (no credentials, or other ones than its own). */
    public long challenged() {
        return challenged.get();
    }

    /** Client connections it accepted. */
    public long connections() {
        return connections.get();
    }

    /** Stops listening: connections are refused from now on. */
    public void stop() throws Exception {
        int port = port();
        server.stop();
        connector.setPort(port); // so that start() comes back on the same port
    }

    /** Listens again after {@link #stop()}. */
    public void start() throws Exception {
        server.start();
    }

    @Override
    public void close() throws Exception {
        server.stop();
    }

    /**
     * Counts the connections, and in {@link Mode#HTTP10} writes {@code HTTP/1.0} in each status line: Jetty
     * always answers {@code HTTP/1.1}, so the version is rewritten on the way to the socket (same length, so
     * nothing else moves). A response head starts a buffer Jetty flushes; a body that began with
     * {@code HTTP/1.1 } would be changed too, which the demo target's pages never do.
     */
    private static final class Http10Connector extends ServerConnector {
        private static final byte[] STATUS_LINE = "HTTP/1.1 ".getBytes(StandardCharsets.US_ASCII);

        Http10Connector(Server server) {
            super(server);
        }

        @Override
        protected SocketChannelEndPoint newEndPoint(SocketChannel channel, ManagedSelector selector,
                                                    SelectionKey key) throws IOException {
            SocketChannelEndPoint endpoint = new SocketChannelEndPoint(channel, selector, key, getScheduler()) {
                @Override
                public boolean flush(ByteBuffer... buffers) throws IOException {
                    for (ByteBuffer buffer : buffers) {
                        if (buffer.hasRemaining()) {
                            if (!buffer.isReadOnly() && startsWithStatusLine(buffer)) {
                                buffer.put(buffer.position() + 7, (byte) '0');
                            }
                            break;
                        }
                    }
                    return super.flush(buffers);
                }
            };
            endpoint.setIdleTimeout(getIdleTimeout());
            return endpoint;
        }

        private boolean startsWithStatusLine(ByteBuffer buffer) {
            if (buffer.remaining() < STATUS_LINE.length) {
                return false;
            }
            for (int i = 0; i < STATUS_LINE.length; i++) {
                if (buffer.get(buffer.position() + i) != STATUS_LINE[i]) {
                    return false;
                }
            }
            return true;
        }
    }
}
