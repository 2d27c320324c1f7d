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
 * {@code Via: 1.1 <id>} to what it forwards, which is how {@link DemoTarget} tells the proxies apart although
 * they all connect from 127.0.0.1. {@link #stop()} kills it mid-run; {@link #start()} brings it back on the
 * same port.
 */
public final class DemoProxy implements AutoCloseable {

    private final String id;
    private final String username;
    private final String password;
    private final Server server = new Server();
    private final ServerConnector connector;

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
        ProxyHandler.Forward forward = new ProxyHandler.Forward();
        forward.setViaHost(id);
        server.setHandler(new Handler.Wrapper(forward) {
            @Override
            public boolean handle(Request request, Response response, Callback callback) throws Exception {
                if (authorised(request.getHeaders().get(HttpHeader.PROXY_AUTHORIZATION))) {
                    return super.handle(request, response, callback);
                }
                response.setStatus(407);
                response.getHeaders().put(HttpHeader.PROXY_AUTHENTICATE, "Basic realm=\"demo-proxy\"");
                Content.Sink.write(response, true, "proxy authentication required\n", callback);
                return true;
            }
        });
        server.start();
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
