package io.tokenbucket.example.proxy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Where the proxy list comes from: a file ({@code example.proxyFile}, watched for changes) or the text of a
 * property ({@code example.proxies}, fixed). One proxy per line (or per comma in the property), in the
 * format of {@link ProxyConfig#parse}; blank lines and lines starting with {@code #} are skipped.
 */
public abstract class ProxySource {

    /** The proxies, in file order. */
    public abstract List<ProxyConfig> read();

    /** Whether {@link #read()} would now give something else than last time. */
    public abstract boolean changed();

    /**
     * A source for a proxy file: re-read when its modification time or size changes, but not while it has no bytes
     * (being rewritten in place; a list emptied on purpose has a comment line).
     */
    public static ProxySource file(Path file) {
        return new FileSource(file);
    }

    /**
     * A fixed source from a property value: proxies separated by commas or new lines. A comma separates only where
     * the next proxy's {@code scheme://} follows: a line's own commas ({@code limit=4/1s,8inflight}, one in a
     * password) stay in it.
     */
    public static ProxySource text(String text) {
        List<ProxyConfig> configs = parseAll(String.join("\n", String.valueOf(text).split(NEXT_PROXY)));
        return new ProxySource() {
            @Override
            public List<ProxyConfig> read() {
                return configs;
            }

            @Override
            public boolean changed() {
                return false;
            }

            @Override
            public String toString() {
                return "example.proxies";
            }
        };
    }

    /** A comma that the next proxy's {@code scheme://} follows. */
    private static final String NEXT_PROXY = ",(?=\\s*[A-Za-z][A-Za-z0-9+.-]*://)";

    static List<ProxyConfig> parseAll(String text) {
        List<ProxyConfig> configs = new ArrayList<>();
        // a byte order mark (Windows editors save UTF-8 with one) is no character of the first line
        for (String line : (text.startsWith("\uFEFF") ? text.substring(1) : text).split("\\R")) {
            String l = line.strip();
            if (!l.isEmpty() && !l.startsWith("#")) {
                configs.add(ProxyConfig.parse(l));
            }
        }
        return configs;
    }

    private static final class FileSource extends ProxySource {
        private final Path file;
        private volatile Object stamp;

        FileSource(Path file) {
            this.file = file;
        }

        @Override
        public List<ProxyConfig> read() {
            try {
                Object before = stamp();
                List<ProxyConfig> configs = parseAll(Files.readString(file));
                stamp = before; // the stamp from before reading: a write during the read is seen next time
                return configs;
            } catch (IOException e) {
                throw new UncheckedIOException("Cannot read the proxy file example.proxyFile=" + file, e);
            }
        }

        /** A file of no bytes is one being written in place (truncated, then written): not changed yet. */
        @Override
        public boolean changed() {
            Object now = stamp();
            return !Objects.equals(stamp, now) && !(now instanceof List<?> l && Long.valueOf(0).equals(l.get(1)));
        }

        private Object stamp() {
            try {
                FileTime modified = Files.getLastModifiedTime(file);
                return List.of(modified, Files.size(file));
            } catch (IOException e) {
                return null; // a file being replaced may be missing for a moment: read() will say so
            }
        }

        @Override
        public String toString() {
            return file.toString();
        }
    }
}
