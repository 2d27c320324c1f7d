package io.tokenbucket.example.proxy;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.tokenbucket.math.Limits;
import org.apache.camel.util.TimeUtils;

/**
 * One proxy of the pool, parsed from a line such as
 * {@code http://user:secret@127.0.0.1:8081 id=p1 limit=4/1s,8inflight}.
 *
 * <p>{@code id} names the proxy in results, the progress table and the bucket key (default {@code host:port},
 * so that no credential ever becomes an id); {@code limit=} takes, separated by commas, {@code N/period}: this
 * proxy's own bucket of {@code N} tokens refilled {@code N} per {@code period} (default: the pool's limit), and
 * {@code Ninflight}: at most {@code N} requests through this proxy at once, across every instance sharing the
 * buckets (its provider's "N concurrent connections"). {@link #toString()} masks the password, so a config can be
 * logged as it is.
 *
 * @param id             the proxy id, the bucket key
 * @param host           proxy host
 * @param port           proxy port
 * @param username       proxy user, or null when the proxy needs no credentials
 * @param password       proxy password, or null
 * @param capacity       this proxy's bucket capacity, or 0 for the pool default
 * @param refillPeriodMs this proxy's refill period in milliseconds, or 0 for the pool default
 * @param inFlight       the most requests through this proxy at once, or 0 for no such limit
 */
public record ProxyConfig(String id, String host, int port, String username, String password, long capacity,
                          long refillPeriodMs, long inFlight) {

    /**
     * Parses one proxy line. The user and the password are the URL's user info, percent-decoded as UTF-8 (write
     * {@code @} as {@code %40}, a space as {@code %20}, {@code %} as {@code %25}; {@code +} is a plus, as in any
     * URL outside a form); they are data, sent to the proxy exactly as decoded and never read as anything else.
     *
     * @throws IllegalArgumentException naming the line (its password masked) and what is wrong with it
     */
    public static ProxyConfig parse(String line) {
        String[] parts = line.strip().split("\\s+");
        for (int i = 1; i < parts.length && parts[0].indexOf('@') < 0; i++) {
            if (parts[i].indexOf('@') >= 0 && !parts[i].startsWith("id=")) {
                // the user info went on past a space: every part of the line may hold some of the password
                throw new IllegalArgumentException("A space in a proxy's user name or password must be written %20"
                        + " (the line is not shown: it holds the password)");
            }
        }
        String shown = withoutPassword(parts[0]);
        URI uri;
        try {
            uri = new URI(parts[0]);
        } catch (URISyntaxException e) {
            // the exception's message would quote the line: its reason and position only
            throw new IllegalArgumentException("Not a proxy URL (" + e.getReason() + " at index " + e.getIndex()
                    + "): " + shown);
        }
        if (!"http".equalsIgnoreCase(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 1) {
            throw new IllegalArgumentException("A proxy must be http://[user:password@]host:port, was " + shown);
        }
        String user = null;
        String password = null;
        if (uri.getRawUserInfo() != null) {
            String[] userInfo = uri.getRawUserInfo().split(":", 2);
            user = decode(userInfo[0], shown);
            password = userInfo.length > 1 ? decode(userInfo[1], shown) : "";
            // what HTTP Basic (RFC 7617) cannot carry; HttpClient would refuse to send it, on every fetch
            if (user.indexOf(':') >= 0) {
                throw new IllegalArgumentException("A proxy user name cannot contain ':' (HTTP Basic authentication"
                        + " splits user and password at the first one): " + shown);
            }
            if ((user + password).chars().anyMatch(Character::isISOControl)) {
                throw new IllegalArgumentException("A proxy user name or password cannot contain control characters: "
                        + shown);
            }
        }
        String id = uri.getHost() + ":" + uri.getPort();
        long capacity = 0;
        long periodMs = 0;
        long inFlight = 0;
        for (int i = 1; i < parts.length; i++) {
            String option = parts[i];
            if (option.startsWith("id=") && option.length() > 3) {
                id = option.substring(3);
            } else if (option.startsWith("limit=") && option.length() > 6) {
                for (String item : option.substring(6).split(",", -1)) {
                    Matcher slots = IN_FLIGHT.matcher(item);
                    if (slots.matches() && inFlight == 0) {
                        inFlight = inFlight(slots.group(1), option);
                    } else if (item.contains("/") && capacity == 0) {
                        long[] rate = rate(item, "limit", option);
                        capacity = rate[0];
                        periodMs = rate[1];
                    } else {
                        throw new IllegalArgumentException("limit must be N/period, Ninflight or both separated by"
                                + " a comma (4/1s,8inflight), each once, was " + option);
                    }
                }
            } else {
                throw new IllegalArgumentException("Unknown proxy option '" + option + "' in " + shown
                        + " (known: id=NAME, limit=N/period,Ninflight)");
            }
        }
        return new ProxyConfig(id, uri.getHost(), uri.getPort(), user, password, capacity, periodMs, inFlight);
    }

    /**
     * A rate {@code N/period} ({@code 4/1s}): {@code N} tokens, all of them refilled per {@code period}; as
     * {@code {N, period in milliseconds}}.
     *
     * @param name  what the text is, for the error ({@code limit}, {@code example.proxyLimit})
     * @param shown the text as the error shows it
     * @throws IllegalArgumentException naming {@code name} and {@code shown} unless N and the period are at least 1
     */
    public static long[] rate(String text, String name, String shown) {
        String[] parts = text.strip().split("/", 2);
        long periodMs = -1;
        long n = -1;
        if (parts.length == 2) {
            try {
                n = Long.parseLong(parts[0].strip());
                periodMs = TimeUtils.toMilliSeconds(parts[1].strip());
            } catch (RuntimeException e) { // Camel's duration parser also throws index errors on some text
                n = -1;
            }
        }
        if (n < 1 || periodMs < 1) {
            throw new IllegalArgumentException(name + " must be N/period with N and the period at least 1 (4/1s),"
                    + " was " + shown);
        }
        return new long[] {n, periodMs};
    }

    private static final Pattern IN_FLIGHT = Pattern.compile("(\\d+)inflight", Pattern.CASE_INSENSITIVE);

    /** The N of {@code Ninflight}: 1 to {@link Limits#MAX_IN_FLIGHT}. */
    private static long inFlight(String digits, String option) {
        long n = number(digits, option);
        if (n < 1 || n > Limits.MAX_IN_FLIGHT) {
            throw new IllegalArgumentException("limit's Ninflight must be 1 to " + Limits.MAX_IN_FLIGHT + ", was "
                    + option);
        }
        return n;
    }

    private static long number(String digits, String option) {
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("limit must be N/period, Ninflight or both (4/1s,8inflight), with N"
                    + " a whole number a long holds, was " + option);
        }
    }

    /** The proxy as a URL with the password replaced by {@code ***}: safe for logs. */
    public String masked() {
        String auth = username == null ? "" : username + ":***@";
        return "http://" + auth + host + ":" + port;
    }

    /** Whether the proxy is given credentials. */
    public boolean hasCredentials() {
        return username != null;
    }

    @Override
    public String toString() {
        return id + "=" + masked();
    }

    /**
     * {@code text} with this proxy's password replaced by {@code ***} wherever it occurs: for messages (an
     * exception's) that might quote it. Masked from the parsed password, not by guessing where a password is.
     */
    public String maskIn(String text) {
        return password == null || password.isEmpty() || text == null ? text : text.replace(password, "***");
    }

    /**
     * A URL (a proxy line's, or a target's that carries credentials: {@code TargetUrl}) as it may be shown: the
     * password (what follows the first {@code :} of the user info, which ends at the last {@code @} of the
     * authority) replaced by {@code ***}. Text without {@code ://} that holds an {@code @} is not shown at all:
     * where its password ends cannot be told.
     */
    public static String withoutPassword(String url) {
        int scheme = url.indexOf("://");
        if (scheme < 0) {
            return url.indexOf('@') < 0 ? url : "(not shown: no scheme://)";
        }
        int start = scheme + 3;
        int end = start;
        while (end < url.length() && "/?#".indexOf(url.charAt(end)) < 0) {
            end++;
        }
        int at = url.lastIndexOf('@', end - 1);
        if (at < start) {
            return url;
        }
        int colon = url.indexOf(':', start);
        if (colon < 0 || colon > at) {
            return url;
        }
        return url.substring(0, colon + 1) + "***" + url.substring(at);
    }

    /**
     * Percent-decoding as in a URL: {@code %XX} are UTF-8 bytes, every other character (also {@code +}) is itself.
     * Neither {@code URLDecoder} (a form's: {@code +} is a space) nor HttpCore's {@code PercentCodec} (it takes any
     * other character for one byte, so a {@code ü} written as it is comes out as U+FFFD).
     */
    private static String decode(String s, String shown) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int i = 0;
        while (i < s.length()) {
            int escape = s.indexOf('%', i);
            if (escape != i) { // a run of plain characters, surrogate pairs included
                int end = escape < 0 ? s.length() : escape;
                bytes.writeBytes(s.substring(i, end).getBytes(StandardCharsets.UTF_8));
                i = end;
                continue;
            }
            int value = i + 2 < s.length() ? hex(s.charAt(i + 1)) * 16 + hex(s.charAt(i + 2)) : -1;
            if (value < 0) {
                throw new IllegalArgumentException("A '%' in the user info must start an escape such as %40: "
                        + shown);
            }
            bytes.write(value);
            i += 3;
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    private static int hex(char c) {
        int digit = Character.digit(c, 16);
        return digit < 0 ? -1000 : digit;
    }
}
