package io.tokenbucket.example;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

import org.apache.camel.util.TimeUtils;

/**
 * One proxy of the pool, parsed from a line such as
 * {@code http://user:secret@127.0.0.1:8081 id=p1 limit=4/1s}.
 *
 * <p>{@code id} names the proxy in results, the progress table and the bucket key (default {@code host:port},
 * so that no credential ever becomes an id); {@code limit=N/period} gives this proxy its own bucket of
 * {@code N} tokens refilled {@code N} per {@code period} (default: the pool's limit). {@link #toString()}
 * masks the password, so a config can be logged as it is.
 *
 * @param id             the proxy id, the bucket key
 * @param host           proxy host
 * @param port           proxy port
 * @param username       proxy user, or null when the proxy needs no credentials
 * @param password       proxy password, or null
 * @param capacity       this proxy's bucket capacity, or 0 for the pool default
 * @param refillPeriodMs this proxy's refill period in milliseconds, or 0 for the pool default
 */
public record ProxyConfig(String id, String host, int port, String username, String password, long capacity,
                          long refillPeriodMs) {

    /**
     * Parses one proxy line.
     *
     * @throws IllegalArgumentException naming the line (masked) and what is wrong with it
     */
    public static ProxyConfig parse(String line) {
        String[] parts = line.strip().split("\\s+");
        URI uri;
        try {
            uri = new URI(parts[0]);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("Not a proxy URL: " + mask(parts[0]));
        }
        if (!"http".equalsIgnoreCase(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 1) {
            throw new IllegalArgumentException("A proxy must be http://[user:password@]host:port, was " + mask(parts[0]));
        }
        String user = null;
        String password = null;
        if (uri.getRawUserInfo() != null) {
            String[] userInfo = uri.getRawUserInfo().split(":", 2);
            user = decode(userInfo[0]);
            password = userInfo.length > 1 ? decode(userInfo[1]) : "";
        }
        String id = uri.getHost() + ":" + uri.getPort();
        long capacity = 0;
        long periodMs = 0;
        for (int i = 1; i < parts.length; i++) {
            String option = parts[i];
            if (option.startsWith("id=") && option.length() > 3) {
                id = option.substring(3);
            } else if (option.startsWith("limit=") && option.contains("/")) {
                String[] limit = option.substring(6).split("/", 2);
                capacity = Long.parseLong(limit[0]);
                periodMs = TimeUtils.toMilliSeconds(limit[1]);
                if (capacity < 1 || periodMs < 1) {
                    throw new IllegalArgumentException("limit must be N/period with N >= 1, was " + option);
                }
            } else {
                throw new IllegalArgumentException("Unknown proxy option '" + option + "' in " + mask(line)
                        + " (known: id=NAME, limit=N/period)");
            }
        }
        return new ProxyConfig(id, uri.getHost(), uri.getPort(), user, password, capacity, periodMs);
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

    /** Masks the password of a proxy URL inside any text (used for error messages about unparsable lines). */
    static String mask(String text) {
        return text.replaceAll("(?i)([a-z][a-z0-9+.-]*://[^:/@\\s]*:)[^@\\s]*@", "$1***@");
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }
}
