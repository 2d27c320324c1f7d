package io.tokenbucket.camel;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.console.DevConsole;
import org.apache.camel.health.HealthCheck;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.main.Main;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.util.URISupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Passwords with the characters a pattern over a URI gets wrong ({@code @ / : % +}, spaces, other scripts): each
 * authenticates as an ACL user of a real redis-server, and no part of it shows in any text the component makes
 * (the endpoint, JMX's store description, the dev console, the health check, the failure when Redis is down, the
 * start failure with a wrong password, Camel Main's property summary, the log: the component's at DEBUG, Camel's and
 * Lettuce's at WARN, as simplelogger.properties sets them). A text counts as showing the password when it holds any
 * five characters of it in a row, as written or percent-encoded.
 */
class TokenBucketRedisSecretsTest extends TokenBucketTestSupport {

    private static final String ADMIN_PASSWORD = "admin-Pa55word";
    /** An ACL user; {@code raw}: the URI writes the credentials as they are (Lettuce accepts that), else encoded. */
    record User(String name, String password, boolean raw) {
        String uri() {
            return raw ? "redis://" + name + ":" + password + "@127.0.0.1:" + redis.port() : uri(password);
        }

        /** The URI with another password, in this user's form. */
        String uri(String anotherPassword) {
            return raw ? "redis://" + name + ":" + anotherPassword + "@127.0.0.1:" + redis.port()
                    : "redis://" + encode(name) + ":" + encode(anotherPassword) + "@127.0.0.1:" + redis.port();
        }

        @Override
        public String toString() {
            return name + (raw ? " (raw)" : " (encoded)");
        }
    }

    private static final List<User> USERS = List.of(
            new User("bob", "p@ss/w:rd%+ sp#?", false),
            new User("carol", "Ünïcødé-密码-пароль", false),
            new User("dave", "a:b@c@d:e+f", true),
            new User("eve@corp", "trailing-at@", false),
            new User("frank", "%2F%40-looks-escaped", false),
            new User("grace", "p@ss w:rd%y@z", true));

    private static RedisHandle redis;
    private CapturedStderr stderr;

    static List<User> users() {
        return USERS;
    }

    @BeforeAll
    static void startRedis() {
        redis = RedisServers.standalone("requirepass " + ADMIN_PASSWORD);
        createUsers();
    }

    /** The ACL users, made at run time: a config file line could not hold a password with spaces. */
    private static void createUsers() {
        for (User user : USERS) {
            redis.command("ACL", "SETUSER", user.name(), "on", ">" + user.password(), "~*", "&*", "+@all");
        }
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @BeforeEach
    void captureStderr() {
        stderr = new CapturedStderr();
    }

    @AfterEach
    void checkTheLog() {
        stderr.close();
        for (User user : USERS) {
            assertShowsNoPassword("the log", stderr.text(), user.password());
        }
    }

    private static String encode(String text) {
        return URLEncoder.encode(text, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** Fails when {@code text} holds five characters in a row of {@code password}, as written or encoded. */
    private static void assertShowsNoPassword(String what, String text, String password) {
        for (String form : List.of(password, encode(password), URLEncoder.encode(password, StandardCharsets.UTF_8))) {
            for (int i = 0; i + 5 <= form.length(); i++) {
                assertThat(text).as("%s must not show %s of the password %s", what, form.substring(i, i + 5), password)
                        .doesNotContain(form.substring(i, i + 5));
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("users")
    void theCredentialsAuthenticateAndNoTextShowsThePassword(User user) throws Exception {
        String name = "s" + Math.abs(user.name().hashCode());
        // the URI as an option value of its own (as a component option or a map of endpoint options gives it; this
        // component has no endpoint DSL builder): inside an endpoint URI Camel decodes percent-escapes and + first,
        // and even inside RAW{...} Camel 4.18 decodes a %25
        TokenBucketEndpoint endpoint = (TokenBucketEndpoint) context.getEndpoint("tokenbucket:" + name + "?store=redis"
                + "&capacity=1&refillPeriod=1h&mode=reject&storeTimeout=300ms", Map.of("redisUri", user.uri()));
        assertThat(template.request(endpoint, e -> { }).getException()).isNull();
        assertThat(template.request(endpoint, e -> { }).getException())
                .as("the bucket is in Redis").isInstanceOf(TokenBucketRejectedException.class);
        assertThat(String.valueOf(redis.command("CLIENT", "LIST"))).contains("user=" + user.name());
        HealthCheckHelper.getHealthCheckRepository(context, "producers").setEnabled(true);

        List<String> texts = new ArrayList<>();
        texts.add(endpoint.toString());
        texts.add(URISupport.sanitizeUri(endpoint.getEndpointUri()));
        texts.add(endpoint.getStoreDescription());
        DevConsole console = PluginHelper.getDevConsoleResolver(context).resolveDevConsole("tokenbucket");
        texts.add(String.valueOf(console.call(DevConsole.MediaType.TEXT)));
        texts.add(String.valueOf(console.call(DevConsole.MediaType.JSON)));
        HealthCheck.Result up = health(name);
        assertThat(up.getState()).isEqualTo(HealthCheck.State.UP);
        texts.add(text(up));
        assertThat(endpoint.getStoreDescription()).isEqualTo("redis at redis://***@127.0.0.1:" + redis.port());

        redis.stop();
        try {
            Exchange failed = template.request(endpoint, e -> { });
            assertThat(failed.getException()).isInstanceOf(TokenBucketStoreException.class);
            texts.add(messages(failed.getException()));
            // the probe's last answer (UP, just before) is reused for a second
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10))
                    .until(() -> health(name).getState() == HealthCheck.State.DOWN);
            texts.add(text(health(name)));
        } finally {
            redis.start();
            createUsers(); // a restarted server has forgotten them
        }
        for (String text : texts) {
            assertShowsNoPassword("'" + text + "'", text, user.password());
            assertThat(text).doesNotContain(user.name() + ":");
        }
    }

    /** What a health check result shows: its message, every detail and its error's messages (it has no toString). */
    private static String text(HealthCheck.Result result) {
        return result.getMessage().orElse("") + " " + result.getDetails() + " "
                + result.getError().map(TokenBucketTestSupport::messages).orElse("");
    }

    private HealthCheck.Result health(String name) {
        return HealthCheckHelper.invokeReadiness(context).stream()
                .filter(r -> r.getCheck().getId().equals("tokenbucket-" + name)).findFirst()
                .orElseThrow(() -> new AssertionError("no health check tokenbucket-" + name));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("users")
    void aWrongPasswordFailsTheStartWithoutShowingEitherPassword(User user) {
        String wrong = new StringBuilder(user.password()).reverse() + "!x";
        String messages = "";
        // Lettuce 7.7 now and then reports the refused HELLO as "Connection closed prematurely" (plain Lettuce, no
        // Camel: 1 of 150 connects in a loop against redis-server 6.2): a race in its handshake, not a text of ours
        for (int attempt = 1; attempt <= 3 && !messages.toUpperCase().contains("WRONGPASS"); attempt++) {
            Throwable failure = catchThrowable(() -> context.getEndpoint("tokenbucket:w"
                    + Math.abs(user.name().hashCode()) + "?store=redis", Map.of("redisUri", user.uri(wrong))));
            assertThat(failure).isNotNull();
            messages = messages(failure);
            assertThat(messages).contains("cannot connect to Redis at redis://***@127.0.0.1");
            assertShowsNoPassword("the start failure", messages, wrong);
            assertShowsNoPassword("the start failure", messages, user.password());
        }
        assertThat(messages).containsIgnoringCase("WRONGPASS");
    }

    /**
     * {@code redis-uri}, the spelling Camel Main and YAML use, binds as {@code redisUri} in an endpoint URI too: Camel
     * must mask it there as well. A URI given in an endpoint URI (not RAW) is percent-encoded in the endpoint's key,
     * where no user info pattern finds the password: only the option's name can mask it.
     */
    @ParameterizedTest
    @ValueSource(strings = {"redis-uri", "REDIS-URI", "Redis-Uri"})
    void theDashedSpellingIsMaskedAsRedisUriIs(String spelling) throws Exception {
        String password = "PlainPassw0rdQ9";
        redis.command("ACL", "SETUSER", "plain", "on", ">" + password, "~*", "&*", "+@all");
        String uri = "tokenbucket:d" + Math.abs(spelling.hashCode()) + "?store=redis&capacity=1&refillPeriod=1h&mode=reject&" + spelling
                + "=redis://plain:" + password + "@127.0.0.1:" + redis.port();
        context.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:dashed").to(uri);
            }
        });
        assertThat(template.request("direct:dashed", e -> { }).getException()).isNull();
        assertThat(String.valueOf(redis.command("CLIENT", "LIST"))).contains("user=plain");
        TokenBucketEndpoint endpoint = context.getEndpoints().stream().filter(TokenBucketEndpoint.class::isInstance)
                .map(TokenBucketEndpoint.class::cast).findFirst().orElseThrow();
        for (String text : List.of(endpoint.toString(), URISupport.sanitizeUri(endpoint.getEndpointUri()),
                URISupport.sanitizeUri(endpoint.getEndpointKey()), URISupport.sanitizeUri(uri),
                String.valueOf(context.getEndpoints()))) {
            assertShowsNoPassword("'" + text + "'", text, password);
        }
    }

    @Test
    void aUriThatDoesNotParseIsNotShownAtAll() {
        String secret = "unescaped blank#and-hash";
        Throwable failure = catchThrowable(() -> context.getEndpoint("tokenbucket:unparsable?store=redis",
                Map.of("redisUri", "redis://bob:" + secret + "@127.0.0.1:" + redis.port() + "/not-a-database")));
        assertThat(failure).isNotNull();
        assertThat(messages(failure)).contains("is not a valid Redis URI").contains("the URI is not shown");
        assertShowsNoPassword("the parse failure", messages(failure), secret);
    }

    @Test
    void camelMainsPropertySummaryMasksTheRedisUri(@TempDir Path dir) throws Exception {
        User user = USERS.get(0);
        Path properties = dir.resolve("application.properties");
        Files.writeString(properties, "camel.component.tokenbucket.redis-uri = " + user.uri() + "\n"
                + "camel.component.tokenbucket.store = redis\ncamel.component.tokenbucket.capacity = 3\n");
        Main main = new Main();
        main.setDefaultPropertyPlaceholderLocation("file:" + properties);
        main.start();
        try {
            assertThat(main.getCamelContext().getComponent("tokenbucket", TokenBucketComponent.class)
                    .getConfiguration().getRedisUri()).isEqualTo(user.uri());
        } finally {
            main.stop();
        }
        assertThat(stderr.text()).contains("camel.component.tokenbucket.capacity = 3")
                .contains("camel.component.tokenbucket.redisUri = xxxxxx");
    }
}
