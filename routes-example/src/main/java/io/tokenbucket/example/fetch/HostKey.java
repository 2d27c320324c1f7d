package io.tokenbucket.example.fetch;

import java.net.IDN;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Locale;

/**
 * The key of a URL's target host for the per-host bucket ({@code tokenbucket:hosts}, {@code example.hostLimit})
 * and for the (proxy, host) pairs: two URLs a site's rate limiter would count as one host get one key.
 *
 * <ul>
 * <li>the host lower-cased, an internationalised name in its ASCII (punycode) form, a trailing dot dropped
 *     ({@code Bücher.Example.} and {@code xn--bcher-kva.example} are one host);</li>
 * <li>the port kept unless it is the scheme's default (80 for http, 443 for https): {@code example.org:80} is
 *     {@code example.org}, {@code example.org:8080} is another host;</li>
 * <li>an IPv6 literal in brackets in its full form ({@code [::1]} and {@code [0:0:0:0:0:0:0:1]} are one host),
 *     read without any lookup;</li>
 * <li>a user name or password in the URL plays no part.</li>
 * </ul>
 * Hostile input is refused with the reason ({@link IllegalArgumentException}): no host, a host longer than
 * {@value #MAX_HOST} characters (the DNS limit), a port that is not 1 to 65535. So a key is at most
 * {@value #MAX_KEY} characters whatever the URL. Pure and immutable: no lookup, no I/O.
 */
public final class HostKey {

    /** The longest host name a key holds (RFC 1035's 253 characters, in the ASCII form). */
    public static final int MAX_HOST = 253;
    /** The longest key: a host, {@code :} and a port of 5 digits; IPv6 literals are shorter. */
    public static final int MAX_KEY = MAX_HOST + 6;

    private HostKey() {
    }

    /** The host key of a URL already checked by {@link TargetUrl}. */
    public static String of(TargetUrl url) {
        return of(url.base());
    }

    /**
     * The host key of {@code url}.
     *
     * @throws IllegalArgumentException naming the reason when the URL has no usable host
     */
    public static String of(String url) {
        if (url == null) {
            throw new IllegalArgumentException("no URL");
        }
        int colon = url.indexOf(':');
        if (colon < 1 || !url.startsWith("//", colon + 1)) {
            throw new IllegalArgumentException("no host: a URL starts with scheme://host");
        }
        String scheme = url.substring(0, colon).toLowerCase(Locale.ROOT);
        int start = colon + 3;
        int end = start;
        while (end < url.length() && "/?#".indexOf(url.charAt(end)) < 0) {
            end++;
        }
        String authority = url.substring(start, end);
        int at = authority.lastIndexOf('@');
        if (at >= 0) {
            authority = authority.substring(at + 1); // user info is no part of the host
        }
        String[] hostAndPort = split(authority);
        String host = hostAndPort[0];
        String port = hostAndPort[1];
        if (host.isEmpty()) {
            throw new IllegalArgumentException("no host in the URL");
        }
        if (host.length() > MAX_HOST + 2) { // checked before any work on it: IDN conversion is not free
            throw new IllegalArgumentException("a host longer than " + MAX_HOST + " characters ("
                    + host.length() + ")");
        }
        String normalised = host.startsWith("[") ? ipv6(host) : name(host);
        return normalised + port(scheme, port);
    }

    /**
     * An authority without user info split at its port's colon: {@code {host, port}}, the port empty when there
     * is none; the colons of an IPv6 literal ({@code [::1]:8080}) are the host's.
     */
    static String[] split(String authority) {
        int portColon = authority.lastIndexOf(':');
        if (portColon >= 0 && authority.indexOf(']', portColon) < 0) {
            return new String[] {authority.substring(0, portColon), authority.substring(portColon + 1)};
        }
        return new String[] {authority, ""};
    }

    private static String name(String host) {
        String ascii;
        try {
            ascii = IDN.toASCII(host, IDN.ALLOW_UNASSIGNED).toLowerCase(Locale.ROOT);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("not a host name (" + e.getMessage() + ")");
        }
        if (ascii.endsWith(".")) {
            ascii = ascii.substring(0, ascii.length() - 1);
        }
        if (ascii.isEmpty() || ascii.length() > MAX_HOST) {
            throw new IllegalArgumentException("a host name of 1 to " + MAX_HOST + " characters, was "
                    + ascii.length());
        }
        for (int i = 0; i < ascii.length(); i++) {
            char c = ascii.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_')) {
                throw new IllegalArgumentException("the host holds a character a host name cannot hold");
            }
        }
        return ascii;
    }

    private static String ipv6(String bracketed) {
        if (!bracketed.endsWith("]") || bracketed.length() < 4) {
            throw new IllegalArgumentException("an IPv6 literal is [address]");
        }
        String literal = bracketed.substring(1, bracketed.length() - 1);
        for (int i = 0; i < literal.length(); i++) {
            char c = literal.charAt(i);
            // hex digits, colons and the dots of an embedded IPv4 only: InetAddress then parses and never looks up
            if (Character.digit(c, 16) < 0 && c != ':' && c != '.') {
                throw new IllegalArgumentException("not an IPv6 address");
            }
        }
        try {
            InetAddress address = InetAddress.getByName("[" + literal + "]");
            // ::ffff:a.b.c.d is the IPv4 host a.b.c.d, and Java reads it as such
            return address instanceof Inet6Address ? "[" + address.getHostAddress() + "]" : address.getHostAddress();
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("not an IPv6 address");
        }
    }

    /**
     * The number of a URL's port text, shared with {@link TargetUrl}.
     *
     * @return 1 to 65535, or -1 when the text is not such a number (empty, more than 5 characters, not all digits, 0)
     */
    static int portNumber(String port) {
        int number = !port.isEmpty() && port.length() <= 5 && port.chars().allMatch(c -> c >= '0' && c <= '9')
                ? Integer.parseInt(port) : -1;
        return number < 1 || number > 65535 ? -1 : number;
    }

    private static String port(String scheme, String port) {
        if (port.isEmpty()) {
            return "";
        }
        int number = portNumber(port);
        if (number < 0) {
            throw new IllegalArgumentException("port '" + (port.length() > 10 ? port.substring(0, 10) + "..." : port)
                    + "' is not 1 to 65535");
        }
        boolean isDefault = number == 80 && scheme.equals("http") || number == 443 && scheme.equals("https");
        return isDefault ? "" : ":" + number;
    }
}
