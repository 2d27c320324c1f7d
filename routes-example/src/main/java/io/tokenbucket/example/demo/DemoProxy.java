package io.tokenbucket.example.demo;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.io.Content;
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
 * answer, the 407, and the answers of {@link #answerNext}. {@link #stop()} kills it mid-run; {@link #start()}
 * brings it back on the same port.
 */
public final class DemoProxy implements AutoCloseable {

    private final String id;
    private final String username;
    private final String password;
    private final Server server = new Server();
    private final ServerConnector connector;
    private int ownAnswers;
    private int ownStatus;

    /**
     * @param id       the proxy id, also its {@code Via} name
     * @param username required user, or null for an open proxy
     * @param password required password
     */
    public DemoProxy(String id, String username, String password) throws Exception {
        this.id = id;
        this.username = username;
        this.password = password;
        connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        server.addConnector(connector);
        ProxyHandler.Forward forward = new ProxyHandler.Forward() {
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
                if (!authorised(request.getHeaders().get(HttpHeader.PROXY_AUTHORIZATION))) {
                    return answer(407, response, callback);
                }
                int own = ownAnswer(); // after the check: HttpClient's first try without credentials is not counted
                if (own != 0) {
                    return answer(own, response, callback);
                }
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

    /** The proxy line for a proxy file: {@code http://user:password@127.0.0.1:PORT id=ID}. */
    public String line() {
        String auth = username == null ? "" : username + ":" + password + "@";
        return "http://" + auth + "127.0.0.1:" + port() + " id=" + id;
    }

    /** The port it listens on (kept across stop and start). */
    public int port() {
        return connector.getLocalPort() > 0 ? connector.getLocalPort() : connector.getPort();
    }

    /** The proxy id. */
    public String id() {
        return id;
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
}
