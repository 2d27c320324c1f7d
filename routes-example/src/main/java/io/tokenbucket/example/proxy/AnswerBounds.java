package io.tokenbucket.example.proxy;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketTimeoutException;

import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.classic.ExecChainHandler;
import org.apache.hc.client5.http.classic.ExecRuntime;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.io.entity.HttpEntityWrapper;
import org.apache.hc.core5.util.Timeout;

/**
 * Bounds on the whole answer of a fetch, which camel-http reads into memory: its body must end within the response
 * timeout ({@code example.responseTimeout}, camel-http's, which HttpClient applies to each wait for data only) from
 * the moment the request is sent, and hold at most {@value #MAX_BYTES} bytes. A target that trickles its body for
 * ever (a tarpit, a stuck stream) never lets a wait for data reach that timeout, so the URL would never get an
 * outcome; one that streams without end fills the heap long before the deadline. Past either bound, the read
 * discards the connection (closing the body would read it to its end) and fails with an {@link IOException} that
 * says which ({@link SocketTimeoutException} for the deadline); the route treats it as any failed read.
 */
final class AnswerBounds implements ExecChainHandler {

    /** The longest body read: 8 MiB, far above a web page. */
    static final long MAX_BYTES = 8L * 1024 * 1024;

    @Override
    public ClassicHttpResponse execute(ClassicHttpRequest request, ExecChain.Scope scope, ExecChain chain)
            throws IOException, HttpException {
        Timeout timeout = scope.clientContext.getRequestConfigOrDefault().getResponseTimeout();
        long start = System.nanoTime();
        ClassicHttpResponse response = chain.proceed(request, scope);
        HttpEntity entity = response.getEntity();
        if (entity != null && entity.isStreaming()) {
            // a response timeout of 0 (none) sets no deadline; the size is bounded all the same
            response.setEntity(new Bounded(entity, scope.execRuntime, start, timeout == null || timeout.isDisabled()
                    ? Long.MAX_VALUE : timeout.toMilliseconds()));
        }
        return response;
    }

    private static final class Bounded extends HttpEntityWrapper {
        private final ExecRuntime runtime;
        private final long start;
        private final long millis;
        private long read;

        Bounded(HttpEntity entity, ExecRuntime runtime, long start, long millis) {
            super(entity);
            this.runtime = runtime;
            this.start = start;
            this.millis = millis;
        }

        @Override
        public InputStream getContent() throws IOException {
            return new FilterInputStream(super.getContent()) {
                @Override
                public int read() throws IOException {
                    check();
                    int b = super.read();
                    count(b < 0 ? 0 : 1);
                    return b;
                }

                @Override
                public int read(byte[] b, int off, int len) throws IOException {
                    check();
                    int n = super.read(b, off, len);
                    count(Math.max(0, n));
                    return n;
                }
            };
        }

        @Override
        public void writeTo(OutputStream out) throws IOException {
            try (InputStream in = getContent()) {
                in.transferTo(out);
            }
        }

        private void check() throws SocketTimeoutException {
            if (millis != Long.MAX_VALUE && System.nanoTime() - start > millis * 1_000_000) {
                runtime.discardEndpoint();
                throw new SocketTimeoutException("the answer did not end within " + millis
                        + " ms (example.responseTimeout)");
            }
        }

        private void count(int bytes) throws IOException {
            read += bytes;
            if (read > MAX_BYTES) {
                runtime.discardEndpoint();
                throw new IOException("the answer is longer than " + MAX_BYTES + " bytes");
            }
        }
    }
}
