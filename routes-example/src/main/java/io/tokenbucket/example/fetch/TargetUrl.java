package io.tokenbucket.example.fetch;

import java.net.IDN;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;

import io.tokenbucket.example.proxy.ProxyConfig;
import org.apache.camel.util.UnsafeUriCharactersEncoder;

/**
 * A URL to fetch, checked and written the way a browser sends it (the WHATWG URL standard, for what a scraper
 * meets): the fragment is dropped (it never leaves a browser), dot segments are removed, the host is lower-cased
 * (an internationalised one in its ASCII form), and every character that may not appear in a request target
 * (non-ASCII, as UTF-8, space, {@code " < > ` { } | \ ^}, controls, a {@code %} that starts no escape) is
 * percent-encoded; a valid {@code %XX} escape is kept as it is (nothing is encoded twice). The URL is data: it
 * reaches camel-http only as the headers {@code CamelHttpUri} ({@link #base}: scheme, authority and path) and
 * {@code CamelHttpRawQuery} ({@link #rawQuery}). camel-http resolves Camel property placeholders in the first,
 * which therefore never holds {@code {{}: a brace in the path is percent-encoded (as a browser does), and the
 * query is not resolved at all.
 *
 * <p>camel-http then applies its own encoder (Camel's {@code UnsafeUriCharactersEncoder}), which also encodes
 * {@code ~} (as {@code %7E}, the same character by RFC 3986) and, in the query, {@code { } | \ ^ `}; what the
 * target receives is {@link #requestTarget()}.
 *
 * <p>Refused, with the reason ({@link Refused}): anything but {@code http} and {@code https}, no host, a user
 * name or password in the URL (a scraper does not send those; the URL as shown then hides the password), a
 * port outside 1..65535, and URLs longer than {@value #MAX_LENGTH} characters.
 *
 * @param given    the URL as given (stripped)
 * @param base     scheme, host, port and path, encoded: the {@code CamelHttpUri} header
 * @param rawQuery the query without {@code ?}, encoded, or null when the URL has none: {@code CamelHttpRawQuery}
 */
public record TargetUrl(String given, String base, String rawQuery) {

    /** The longest URL fetched; longer ones are refused (most servers answer 414 beyond 8 KiB). */
    public static final int MAX_LENGTH = 8192;

    /** Characters a browser percent-encodes in a path (besides controls, space and non-ASCII). */
    private static final String PATH_ENCODED = "\"<>`{}|\\^";
    /** Characters a browser percent-encodes in the query of an http(s) URL (besides controls, space, non-ASCII). */
    private static final String QUERY_ENCODED = "\"<>'";
    /** Characters that may not appear in a host. */
    private static final String HOST_FORBIDDEN = " #%/:<>?@[\\]^|\"{}`";

    /** A URL that is not fetched: the reason, and the URL as it may be shown (its password masked). */
    public static final class Refused extends IllegalArgumentException {
        private final String shown;

        /**
         * @param reason why the URL is not fetched
         * @param shown  the URL as it may be shown (no password in it)
         */
        public Refused(String reason, String shown) {
            super(reason);
            this.shown = shown;
        }

        /** The URL as it may be written to a dead letter: as given, or without its password. */
        public String shown() {
            return shown;
        }
    }

    /**
     * Checks and encodes one URL.
     *
     * @param text the URL as given; surrounding white space is ignored, and so are tabs and line breaks inside it
     *             (as a browser does)
     * @throws Refused naming the reason
     */
    public static TargetUrl parse(String text) {
        String given = text == null ? "" : text.strip();
        if (given.length() > MAX_LENGTH) {
            String start = given.substring(0, 100);
            throw new Refused("longer than " + MAX_LENGTH + " characters", start.indexOf('@') < 0 ? start + "..."
                    : "(" + given.length() + " characters, not shown)");
        }
        String url = given.replaceAll("[\t\n\r]", "");
        int hash = url.indexOf('#');
        if (hash >= 0) {
            url = url.substring(0, hash); // the fragment is the browser's own: never sent
        }
        int colon = url.indexOf(':');
        String scheme = colon > 0 ? url.substring(0, colon).toLowerCase(Locale.ROOT) : "";
        if (!scheme.matches("[a-z][a-z0-9+.-]*")) {
            throw new Refused("not a URL (no scheme such as http:)", given);
        }
        if (!scheme.equals("http") && !scheme.equals("https")) {
            throw new Refused("only http and https URLs are fetched, not " + (scheme.length() > 20
                    ? scheme.substring(0, 20) + "..." : scheme) + ":", given);
        }
        if (!url.startsWith("//", colon + 1)) {
            throw new Refused("no host (an http URL starts with http://host)", given);
        }
        int authorityStart = colon + 3;
        int authorityEnd = authorityStart;
        while (authorityEnd < url.length() && "/?".indexOf(url.charAt(authorityEnd)) < 0) {
            authorityEnd++;
        }
        String authority = url.substring(authorityStart, authorityEnd);
        if (authority.indexOf('@') >= 0) {
            throw new Refused("a user name or password in the URL is not sent", ProxyConfig.withoutPassword(url));
        }
        String hostAndPort = host(authority, given);
        int queryStart = url.indexOf('?', authorityEnd);
        String path = url.substring(authorityEnd, queryStart < 0 ? url.length() : queryStart);
        String query = queryStart < 0 ? null : url.substring(queryStart + 1);
        String base = scheme + "://" + hostAndPort + removeDotSegments(encode(path.isEmpty() ? "/" : path,
                PATH_ENCODED));
        String rawQuery = query == null ? null : encode(query, QUERY_ENCODED);
        TargetUrl target = new TargetUrl(given, base, rawQuery);
        try {
            // what camel-http will make of it must be a URL with this host, or the fetch would fail as if the
            // proxy had
            URI sent = new URI(UnsafeUriCharactersEncoder.encodeHttpURI(base));
            if (sent.getHost() == null) {
                throw new Refused("'" + hostAndPort + "' is not a host name", given);
            }
            if (rawQuery != null) {
                new URI("http://h/?" + UnsafeUriCharactersEncoder.encodeHttpURI(rawQuery));
            }
        } catch (URISyntaxException e) {
            throw new Refused("not a URL (" + e.getReason() + ")", given);
        }
        return target;
    }

    /**
     * The request target the site receives, as camel-http writes it: the encoded path and, when the URL has a
     * query, {@code ?} and the query.
     */
    public String requestTarget() {
        String path = URI.create(UnsafeUriCharactersEncoder.encodeHttpURI(base)).getRawPath();
        return rawQuery == null ? path : path + "?" + UnsafeUriCharactersEncoder.encodeHttpURI(rawQuery);
    }

    private static String host(String authority, String given) {
        String[] hostAndPort = HostKey.split(authority);
        String host = hostAndPort[0];
        String port = hostAndPort[1];
        if (host.isEmpty()) {
            throw new Refused("no host (an http URL starts with http://host)", given);
        }
        if (!port.isEmpty()) {
            int number = HostKey.portNumber(port);
            if (number < 0) {
                throw new Refused("port '" + (port.length() > 10 ? port.substring(0, 10) + "..." : port)
                        + "' is not 1 to 65535", given);
            }
            port = ":" + number;
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            return host.toLowerCase(Locale.ROOT) + port; // an IPv6 literal, checked by java.net.URI later
        }
        try {
            host = IDN.toASCII(host, IDN.ALLOW_UNASSIGNED).toLowerCase(Locale.ROOT);
        } catch (IllegalArgumentException e) {
            throw new Refused("not a host name (" + e.getMessage() + ")", given);
        }
        for (int i = 0; i < host.length(); i++) {
            char c = host.charAt(i);
            if (c <= ' ' || c >= 127 || HOST_FORBIDDEN.indexOf(c) >= 0) {
                throw new Refused("the host holds a character a host cannot hold", given);
            }
        }
        return host + port;
    }

    /**
     * Percent-encodes as UTF-8 every character outside printable ASCII, every one of {@code alsoEncoded}, and a
     * {@code %} that does not start a {@code %XX} escape; leaves everything else, valid escapes included.
     */
    private static String encode(String text, String alsoEncoded) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); ) {
            int c = text.codePointAt(i);
            int next = i + Character.charCount(c);
            if (c == '%' && isHex(text, i + 1) && isHex(text, i + 2)) {
                out.append('%');
            } else if (c <= ' ' || c >= 127 || c == '%' || alsoEncoded.indexOf(c) >= 0) {
                for (byte b : new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8)) {
                    out.append('%').append(Character.toUpperCase(Character.forDigit((b >> 4) & 0xf, 16)))
                            .append(Character.toUpperCase(Character.forDigit(b & 0xf, 16)));
                }
            } else {
                out.append((char) c);
            }
            i = next;
        }
        return out.toString();
    }

    private static boolean isHex(String text, int index) {
        return index < text.length() && Character.digit(text.charAt(index), 16) >= 0;
    }

    /**
     * RFC 3986 section 5.2.4 on an encoded path, with {@code %2e} read as {@code .} (as browsers do): {@code /a/./b}
     * and {@code /a/x/../b} become {@code /a/b}.
     */
    private static String removeDotSegments(String path) {
        if (!path.contains(".") && !path.toLowerCase(Locale.ROOT).contains("%2e")) {
            return path;
        }
        String[] segments = path.substring(1).split("/", -1);
        Deque<String> kept = new ArrayDeque<>();
        for (int i = 0; i < segments.length; i++) {
            String segment = segments[i].toLowerCase(Locale.ROOT).replace("%2e", ".");
            boolean last = i == segments.length - 1;
            if (segment.equals(".")) {
                if (last) {
                    kept.addLast("");
                }
            } else if (segment.equals("..")) {
                kept.pollLast();
                if (last) {
                    kept.addLast("");
                }
            } else {
                kept.addLast(segments[i]);
            }
        }
        return "/" + String.join("/", kept);
    }
}
