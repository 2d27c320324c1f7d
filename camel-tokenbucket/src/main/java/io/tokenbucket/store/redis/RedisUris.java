package io.tokenbucket.store.redis;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import io.lettuce.core.RedisURI;

/**
 * Reads the Redis URIs of the {@code redisUri} option with Lettuce's {@link RedisURI}, and never guesses.
 *
 * <p>The authority of a URI ends at its first {@code /}, {@code ?} or {@code #}; the user info is everything in it
 * before its last {@code @}. Within that user info, the characters a URI does not allow there but that cannot end
 * it ({@code @}, a space, a {@code %} that starts no escape) are percent-encoded before Lettuce reads the URI, so a
 * password such as {@code a:b@c d%} works as written. A password holding {@code / ? #} must be percent-encoded:
 * written as it is, it ends the authority early, and a URI in which an {@code @} follows the authority (in its
 * path, query or fragment) is refused rather than read with a host that is part of the password.
 *
 * <p>Supports {@code redis://}, {@code rediss://}, {@code redis-sentinel://} and the other schemes Lettuce reads,
 * plus {@code redis-cluster://[userinfo@]h1:p1,h2:p2} (and {@code rediss-cluster://}), the seed nodes of a cluster.
 * No message here quotes a URI: it may hold a password.
 */
final class RedisUris {

    private RedisUris() {
    }

    /** The scheme of {@code uri}, the text before {@code ://}; empty when there is none. */
    static String scheme(String uri) {
        return uri.substring(0, Math.max(0, uri.indexOf("://")));
    }

    /** Whether {@code scheme} names a Redis Cluster by its seeds. */
    static boolean isCluster(String scheme) {
        return scheme.equals("redis-cluster") || scheme.equals("rediss-cluster");
    }

    /** What may be shown of {@code uri}: rebuilt from the parsed URI, credentials as {@code ***}. */
    static RedisUriText describe(String uri) {
        try {
            String scheme = scheme(uri);
            List<RedisURI> nodes = isCluster(scheme) ? clusterSeeds(uri) : List.of(parse(uri));
            return RedisUriText.of(uri, nodes, scheme);
        } catch (RuntimeException unparsable) {
            return RedisUriText.unparsable(uri);
        }
    }

    /**
     * Lettuce's parse of {@code uri}, its user info encoded as described on this class.
     *
     * @throws IllegalArgumentException saying what is wrong without quoting the URI
     */
    static RedisURI parse(String uri) {
        String encoded = withEncodedUserInfo(uri);
        URI syntax;
        try {
            syntax = new URI(encoded);
        } catch (URISyntaxException e) {
            throw refused(e.getReason() + " at index " + e.getIndex());
        }
        if (has(syntax.getRawPath(), '@') || has(syntax.getRawQuery(), '@') || has(syntax.getRawFragment(), '@')) {
            throw refused("an @ follows its host part, so a password holding / ? or # would be read as the host;"
                    + " percent-encode such a password (/ as %2F, ? as %3F, # as %23)");
        }
        String scheme = scheme(uri);
        if (syntax.getHost() == null && !scheme.contains("socket") && !scheme.contains("sentinel")) {
            // a socket has no host, and Lettuce reads a Sentinel's several hosts itself
            throw refused("no host can be read from it (a host name holds letters, digits, '-' and '.' only, or"
                    + " is an IPv6 address in brackets)");
        }
        try {
            return RedisURI.create(syntax);
        } catch (RuntimeException e) {
            throw refused(e.getClass().getSimpleName() + (e.getMessage() == null ? ""
                    : ": " + RedisUriText.unparsable(uri).redact(e.getMessage())));
        }
    }

    /**
     * {@code redis-cluster://[userinfo@]h1:p1,h2:p2[/...]} as one {@code redis://[userinfo@]h:p[/...]} per seed
     * ({@code rediss://} for {@code rediss-cluster}).
     */
    static List<RedisURI> clusterSeeds(String uri) {
        String scheme = scheme(uri);
        String rest = uri.substring(scheme.length() + 3);
        int end = authorityEnd(rest, 0);
        String authority = rest.substring(0, end);
        String tail = rest.substring(end);
        int at = authority.lastIndexOf('@');
        String userInfo = at >= 0 ? authority.substring(0, at + 1) : "";
        String base = scheme.startsWith("rediss") ? "rediss://" : "redis://";
        List<RedisURI> seeds = new ArrayList<>();
        for (String hostPort : authority.substring(at + 1).split(",")) {
            if (!hostPort.isBlank()) {
                seeds.add(parse(base + userInfo + hostPort.trim() + tail));
            }
        }
        if (seeds.isEmpty()) {
            throw refused("it names no cluster node after " + scheme + "://");
        }
        return seeds;
    }

    /**
     * {@code uri} with the user info of its authority percent-encoded where a URI does not allow a character that
     * cannot end it: every {@code @} but the last, spaces and controls, a {@code %} that starts no escape, and
     * {@code [ ]}. Valid escapes are kept, so an encoded password stays as it was.
     */
    static String withEncodedUserInfo(String uri) {
        int start = uri.indexOf("://");
        if (start < 0) {
            return uri;
        }
        start += 3;
        int end = authorityEnd(uri, start);
        int at = uri.lastIndexOf('@', end - 1);
        if (at < start) {
            return uri;
        }
        String userInfo = uri.substring(start, at);
        StringBuilder encoded = new StringBuilder(userInfo.length() + 16);
        for (int i = 0; i < userInfo.length(); i++) {
            char c = userInfo.charAt(i);
            boolean escape = c == '%' && isHex(userInfo, i + 1) && isHex(userInfo, i + 2);
            if (c == '@' || c == '[' || c == ']' || c <= ' ' || c == 0x7f || c == '%' && !escape) {
                for (byte b : String.valueOf(c).getBytes(StandardCharsets.UTF_8)) {
                    encoded.append('%').append(String.format("%02X", b & 0xff));
                }
            } else {
                encoded.append(c);
            }
        }
        return uri.substring(0, start) + encoded + uri.substring(at);
    }

    /** Where the authority that starts at {@code from} ends: its first {@code / ? #}, or the end of the text. */
    private static int authorityEnd(String text, int from) {
        for (int i = from; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '/' || c == '?' || c == '#') {
                return i;
            }
        }
        return text.length();
    }

    private static boolean has(String text, char c) {
        return text != null && text.indexOf(c) >= 0;
    }

    private static boolean isHex(String text, int index) {
        return index < text.length() && Character.digit(text.charAt(index), 16) >= 0;
    }

    private static IllegalArgumentException refused(String why) {
        return new IllegalArgumentException("redisUri is not a valid Redis URI: " + why + " (the URI is not shown:"
                + " it may hold a password)");
    }
}
