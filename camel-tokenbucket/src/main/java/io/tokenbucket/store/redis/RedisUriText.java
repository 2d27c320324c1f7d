package io.tokenbucket.store.redis;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import io.lettuce.core.RedisCredentials;
import io.lettuce.core.RedisCredentialsProvider;
import io.lettuce.core.RedisURI;

/**
 * What may be shown of a Redis URI, taken from the URI as Lettuce parses it ({@link RedisURI}), never by a pattern
 * over its text: a password may hold any character ({@code @ / : % +}, spaces, letters of any script), and no
 * pattern tells its end from the host's start the way the parser does.
 *
 * <p>{@link #described()} rebuilds the URI from its parsed parts (scheme, hosts, ports, database, Sentinel master)
 * with {@code ***} for any user and password; a text that does not parse is not shown at all. {@link #redact}
 * removes the URI's secrets (user, password, their percent-encoded forms, and the URI text itself) from any other
 * text, such as a failure's message, before it is shown.
 */
public final class RedisUriText {

    private static final String MASK = "***";
    private static final int MIN_REDACTED = 4;

    private final String described;
    private final List<String> secrets;

    private RedisUriText(String described, Set<String> secrets) {
        this.described = described;
        // longest first, so that a secret containing another is removed whole; a secret of fewer than
        // MIN_REDACTED characters is no secret a text could be searched for (removing every 'o' garbles all)
        this.secrets = secrets.stream().filter(s -> s.length() >= MIN_REDACTED)
                .sorted(Comparator.comparingInt(String::length).reversed()).toList();
    }

    /**
     * What may be shown of {@code uri}, parsed as {@code nodes} (one, or the seeds of a {@code redis-cluster://});
     * {@code scheme} is the scheme to show. {@link RedisConnections#describe} makes them.
     */
    static RedisUriText of(String uri, List<RedisURI> nodes, String scheme) {
        Set<String> secrets = new LinkedHashSet<>();
        secrets.add(uri);
        boolean credentials = false;
        for (RedisURI node : nodes) {
            credentials |= collectSecrets(node, secrets);
        }
        RedisURI first = nodes.get(0);
        List<RedisURI> hosts = first.getSentinels().isEmpty() ? nodes : first.getSentinels();
        String authority = hosts.stream().map(h -> h.getSocket() != null ? h.getSocket() : h.getHost() + ":"
                + h.getPort()).collect(Collectors.joining(","));
        String database = first.getDatabase() != 0 ? "/" + first.getDatabase() : "";
        String master = first.getSentinelMasterId() != null ? "#" + first.getSentinelMasterId() : "";
        return new RedisUriText(scheme + "://" + (credentials ? MASK + "@" : "") + authority + database + master,
                secrets);
    }

    /** A text that could not be parsed: nothing of it is shown, and all of it is a secret. */
    static RedisUriText unparsable(String uri) {
        return new RedisUriText("a Redis URI that does not parse (" + uri.length() + " characters, not shown)",
                Set.of(uri));
    }

    /** The URI without credentials, or a note that it does not parse. */
    public String described() {
        return described;
    }

    /** {@code text} with every secret of the URI replaced by {@code ***}; null stays null. */
    public String redact(String text) {
        if (text == null) {
            return null;
        }
        String redacted = text;
        for (String secret : secrets) {
            redacted = redacted.replace(secret, MASK);
        }
        return redacted;
    }

    @Override
    public String toString() {
        return described;
    }

    /** Adds the node's user and password (as given, and percent-encoded); returns whether it has either. */
    private static boolean collectSecrets(RedisURI node, Set<String> secrets) {
        boolean found = false;
        List<RedisURI> all = new ArrayList<>(node.getSentinels());
        all.add(node);
        for (RedisURI uri : all) {
            RedisCredentialsProvider provider = uri.getCredentialsProvider();
            // a URI's credentials come back at once (a constant Mono): resolved without blocking on anything
            RedisCredentials credentials = provider == null ? null
                    : provider instanceof RedisCredentialsProvider.ImmediateRedisCredentialsProvider immediate
                    ? immediate.resolveCredentialsNow() : provider.resolveCredentials().toFuture().join();
            if (credentials == null) {
                continue;
            }
            if (credentials.hasUsername() && !credentials.getUsername().isEmpty()) {
                found = true;
                addWithEncodings(credentials.getUsername(), secrets);
            }
            if (credentials.hasPassword() && credentials.getPassword().length > 0) {
                found = true;
                addWithEncodings(new String(credentials.getPassword()), secrets);
            }
        }
        return found;
    }

    private static void addWithEncodings(String secret, Set<String> secrets) {
        secrets.add(secret);
        secrets.add(URLEncoder.encode(secret, StandardCharsets.UTF_8));
        secrets.add(URLEncoder.encode(secret, StandardCharsets.UTF_8).replace("+", "%20"));
    }
}
