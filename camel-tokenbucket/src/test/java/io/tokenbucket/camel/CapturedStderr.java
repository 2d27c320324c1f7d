package io.tokenbucket.camel;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** Everything this JVM writes to standard error (where slf4j-simple logs) from now until {@link #close()}. */
final class CapturedStderr implements AutoCloseable {

    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
    private final PrintStream original = System.err;

    CapturedStderr() {
        System.setErr(new PrintStream(new Tee(original, captured), true, StandardCharsets.UTF_8));
    }

    /** What was written so far. */
    String text() {
        synchronized (captured) {
            return captured.toString(StandardCharsets.UTF_8);
        }
    }

    /** Puts the original stream back. */
    @Override
    public void close() {
        System.setErr(original);
    }

    /** Writes to both streams. */
    private static final class Tee extends OutputStream {
        private final OutputStream a;
        private final ByteArrayOutputStream b;

        Tee(OutputStream a, ByteArrayOutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public void write(int c) throws IOException {
            a.write(c);
            synchronized (b) {
                b.write(c);
            }
        }

        @Override
        public void write(byte[] buf, int off, int len) throws IOException {
            a.write(buf, off, len);
            synchronized (b) {
                b.write(buf, off, len);
            }
        }
    }
}
