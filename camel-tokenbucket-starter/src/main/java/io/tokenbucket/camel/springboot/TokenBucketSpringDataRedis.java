package io.tokenbucket.camel.springboot;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import io.lettuce.core.RedisCredentials;
import io.lettuce.core.RedisCredentialsProvider;
import io.lettuce.core.RedisURI;
import io.tokenbucket.store.redis.RedisConnections;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails.Node;
import org.springframework.boot.autoconfigure.data.redis.RedisProperties;
import org.springframework.boot.context.properties.bind.BindResult;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationContext;

/**
 * The Redis that the Spring Boot application describes, as the component's {@code redisUri}: Spring Boot's
 * {@link RedisConnectionDetails} bean when there is one (with spring-data-redis, or a service connection), else
 * {@code spring.data.redis.*} bound here as Spring Boot binds it ({@link RedisProperties}: {@code url}, or
 * {@code host}, {@code port}, {@code database}; {@code username}, {@code password}, {@code ssl.enabled};
 * {@code sentinel.*}; {@code cluster.nodes}).
 *
 * <p>The nodes are built as Lettuce {@link RedisURI}s with {@link RedisURI.Builder} and written as the text the
 * component reads, every character of a user or password other than letters, digits and {@code - . _ ~}
 * percent-encoded, so that a password holding {@code @ / : % +} reaches Redis as written.
 */
final class TokenBucketSpringDataRedis {

    private static final String PREFIX = "spring.data.redis";

    /**
     * The Redis found: {@code redisUri} holds its credentials (never log it; {@code source} says where it came
     * from).
     */
    record Found(String redisUri, String source) {
    }

    private TokenBucketSpringDataRedis() {
    }

    /**
     * The application's Redis: from its {@link RedisConnectionDetails} bean, else from {@code spring.data.redis.*};
     * null when it has neither.
     *
     * @throws IllegalStateException naming the property when a setting cannot be passed to the component
     */
    static Found find(ApplicationContext context) {
        BindResult<RedisProperties> bound = Binder.get(context.getEnvironment()).bind(PREFIX, RedisProperties.class);
        RedisProperties properties = bound.orElseGet(RedisProperties::new);
        boolean ssl = properties.getSsl().isEnabled()
                || properties.getUrl() != null && properties.getUrl().startsWith("rediss:");
        RedisConnectionDetails details = context.getBeanProvider(RedisConnectionDetails.class).getIfUnique();
        if (details != null) {
            return new Found(text(details, ssl), "Spring Boot's RedisConnectionDetails");
        }
        if (!bound.isBound()) {
            return null;
        }
        return new Found(text(fromProperties(properties), ssl), PREFIX + ".*");
    }

    /** What may be shown of a {@code redisUri}: the component's own masking ({@code redis://***@host:6379}). */
    static String describe(String redisUri) {
        return RedisConnections.describe(redisUri).described();
    }

    /** The component's {@code redisUri} text for {@code details}: standalone, Sentinel or cluster. */
    static String text(RedisConnectionDetails details, boolean ssl) {
        RedisConnectionDetails.Cluster cluster = details.getCluster();
        if (cluster != null) {
            List<RedisURI> seeds = new ArrayList<>();
            for (Node node : cluster.getNodes()) {
                seeds.add(authenticated(RedisURI.Builder.redis(node.host(), node.port()).withSsl(ssl), details));
            }
            return write(ssl ? "rediss-cluster" : "redis-cluster", seeds);
        }
        RedisConnectionDetails.Sentinel sentinel = details.getSentinel();
        if (sentinel != null) {
            if (sentinel.getPassword() != null || sentinel.getUsername() != null) {
                throw new IllegalStateException(PREFIX + ".sentinel.username and .password cannot be passed on to"
                        + " the tokenbucket component in a URI: give it a Lettuce client (redis-client) instead");
            }
            List<Node> nodes = sentinel.getNodes();
            RedisURI.Builder builder = RedisURI.Builder.sentinel(nodes.get(0).host(), nodes.get(0).port(),
                    sentinel.getMaster());
            for (Node node : nodes.subList(1, nodes.size())) {
                builder.withSentinel(node.host(), node.port());
            }
            builder.withDatabase(sentinel.getDatabase()).withSsl(ssl);
            return write(ssl ? "rediss-sentinel" : "redis-sentinel", List.of(authenticated(builder, details)));
        }
        RedisConnectionDetails.Standalone standalone = details.getStandalone();
        RedisURI.Builder builder = RedisURI.Builder.redis(standalone.getHost(), standalone.getPort())
                .withDatabase(standalone.getDatabase()).withSsl(ssl || standalone.getSslBundle() != null);
        RedisURI uri = authenticated(builder, details);
        return write(uri.isSsl() ? "rediss" : "redis", List.of(uri));
    }

    /** {@code spring.data.redis.*} as connection details, read as Spring Boot reads them (the url wins). */
    static RedisConnectionDetails fromProperties(RedisProperties properties) {
        String username;
        String password;
        RedisConnectionDetails.Standalone standalone;
        if (properties.getUrl() != null) {
            URI url = url(properties.getUrl());
            String userInfo = url.getUserInfo();
            int colon = userInfo == null ? -1 : userInfo.indexOf(':');
            username = colon > 0 ? userInfo.substring(0, colon) : null;
            password = userInfo == null ? null : colon >= 0 ? userInfo.substring(colon + 1) : userInfo;
            standalone = RedisConnectionDetails.Standalone.of(url.getHost(), url.getPort() < 0 ? 6379 : url.getPort(),
                    database(url));
        } else {
            username = properties.getUsername();
            password = properties.getPassword();
            standalone = RedisConnectionDetails.Standalone.of(properties.getHost(), properties.getPort(),
                    properties.getDatabase());
        }
        RedisConnectionDetails.Sentinel sentinel = properties.getSentinel() == null ? null : new Sentinel(properties);
        RedisConnectionDetails.Cluster cluster = properties.getCluster() == null ? null
                : () -> properties.getCluster().getNodes().stream().map(TokenBucketSpringDataRedis::node).toList();
        return new RedisConnectionDetails() {
            @Override
            public String getUsername() {
                return username;
            }

            @Override
            public String getPassword() {
                return password;
            }

            @Override
            public Standalone getStandalone() {
                return standalone;
            }

            @Override
            public Sentinel getSentinel() {
                return sentinel;
            }

            @Override
            public Cluster getCluster() {
                return cluster;
            }
        };
    }

    /**
     * {@code spring.data.redis.url} parsed. Java's own messages quote the text, which holds the password, so a text
     * that is no URL with a host (mostly a password holding {@code @ / : % # ?} or a space as it is) fails naming
     * the property only.
     *
     * @throws IllegalStateException naming the property and how to write it
     */
    private static URI url(String text) {
        URI url;
        try {
            url = new URI(text);
        } catch (URISyntaxException e) {
            throw notAUrl("it does not parse at character " + e.getIndex());
        }
        if (url.getHost() == null) {
            throw notAUrl("no host could be read from it");
        }
        return url;
    }

    /** The database of a {@code spring.data.redis.url}: its path, {@code /3}; 0 without one. */
    private static int database(URI url) {
        String path = url.getPath() == null ? "" : url.getPath();
        if (path.isEmpty() || path.equals("/")) {
            return 0;
        }
        if (!path.matches("/[0-9]{1,9}/?")) {
            throw notAUrl("its path is no database number");
        }
        return Integer.parseInt(path.replace("/", ""));
    }

    private static IllegalStateException notAUrl(String why) {
        return new IllegalStateException(PREFIX + ".url is not a Redis URL, redis[s]://[[user]:password@]host[:port]"
                + "[/database] (" + why + "; its text is not shown, it may hold a password): a user or password"
                + " holding @ / : % # ? or a space must be percent-encoded, or given as " + PREFIX + ".username and "
                + PREFIX + ".password");
    }

    private static RedisURI authenticated(RedisURI.Builder builder, RedisConnectionDetails details) {
        if (details.getPassword() != null && details.getUsername() != null) {
            builder.withAuthentication(details.getUsername(), details.getPassword());
        } else if (details.getPassword() != null) {
            builder.withPassword(details.getPassword().toCharArray());
        }
        return builder.build();
    }

    /**
     * {@code scheme://[user:password@]host:port[,host:port...][/database][#master]} from the parsed nodes (one, or
     * a cluster's seeds, or the first node's Sentinels), the user and password percent-encoded.
     */
    private static String write(String scheme, List<RedisURI> nodes) {
        RedisURI first = nodes.get(0);
        StringBuilder text = new StringBuilder(scheme).append("://");
        RedisCredentialsProvider provider = first.getCredentialsProvider();
        RedisCredentials credentials = provider == null ? null : provider.resolveCredentials().toFuture().join();
        if (credentials != null && credentials.hasPassword()) {
            if (credentials.hasUsername()) {
                text.append(encode(credentials.getUsername()));
            }
            // a leading ':' even without a user: Lettuce reads "a:b" as user a, password b
            text.append(':').append(encode(new String(credentials.getPassword()))).append('@');
        }
        List<RedisURI> hosts = first.getSentinels().isEmpty() ? nodes : first.getSentinels();
        for (int i = 0; i < hosts.size(); i++) {
            RedisURI host = hosts.get(i);
            text.append(i == 0 ? "" : ",").append(hostText(host.getHost())).append(':').append(host.getPort());
        }
        if (first.getDatabase() != 0) {
            text.append('/').append(first.getDatabase());
        }
        if (first.getSentinelMasterId() != null) {
            text.append('#').append(encode(first.getSentinelMasterId()));
        }
        return text.toString();
    }

    private static String hostText(String host) {
        return host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
    }

    /** Every byte of {@code text} in UTF-8 but letters, digits and {@code - . _ ~} as {@code %XX}. */
    static String encode(String text) {
        StringBuilder encoded = new StringBuilder(text.length() * 3);
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            if (c < 0x80 && (Character.isLetterOrDigit(c) || c == '-' || c == '.' || c == '_' || c == '~')) {
                encoded.append(c);
            } else {
                encoded.append('%').append(String.format("%02X", b & 0xff));
            }
        }
        return encoded.toString();
    }

    private static Node node(String hostPort) {
        int colon = hostPort.lastIndexOf(':');
        return new Node(hostPort.substring(0, colon).replace("[", "").replace("]", ""),
                Integer.parseInt(hostPort.substring(colon + 1)));
    }

    /** {@code spring.data.redis.sentinel.*}, with the database of {@code spring.data.redis.database}. */
    private record Sentinel(RedisProperties properties) implements RedisConnectionDetails.Sentinel {

        @Override
        public int getDatabase() {
            return properties.getDatabase();
        }

        @Override
        public String getMaster() {
            return properties.getSentinel().getMaster();
        }

        @Override
        public List<Node> getNodes() {
            return properties.getSentinel().getNodes().stream().map(TokenBucketSpringDataRedis::node).toList();
        }

        @Override
        public String getUsername() {
            return properties.getSentinel().getUsername();
        }

        @Override
        public String getPassword() {
            return properties.getSentinel().getPassword();
        }
    }
}
