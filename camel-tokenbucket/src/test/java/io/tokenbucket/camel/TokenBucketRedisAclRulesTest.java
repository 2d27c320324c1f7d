package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.testsupport.redis.RedisClusterHandle;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.health.HealthCheck;
import org.apache.camel.health.HealthCheckHelper;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The least a Redis ACL user needs, as the reference's operator section lists it: with exactly these rights each
 * kind of endpoint works (a rate endpoint with its peek, the script sent again after {@code SCRIPT FLUSH} and the
 * readiness check, as one user; an in-flight limit whose release wakes a waiter through the released channel, as
 * another), and Redis logs no denial ({@code ACL LOG} is empty but for Lettuce's {@code CLIENT SETINFO} on 6.2).
 */
class TokenBucketRedisAclRulesTest {

    /** The ACL rule of the operator section for a rate endpoint with {@code keyPrefix=tb:}. */
    static final String RATE_RULE = "resetkeys resetchannels -@all +evalsha +eval +time +get +set +del ~tb:*";
    /** What an endpoint with an in-flight limit needs besides {@link #RATE_RULE}: its released channel. */
    static final String IN_FLIGHT_RULE = "+publish +subscribe &tb:*";
    /** Both: any endpoint. */
    static final String RULE = RATE_RULE + " " + IN_FLIGHT_RULE;
    /**
     * What a Redis Cluster needs besides {@link #RULE}: Lettuce reads the topology ({@code CLUSTER NODES}, each node's
     * {@code INFO}, on connections it names), and a publish/subscribe connection asks its node's id.
     */
    static final String CLUSTER_RULE = "+cluster|nodes +cluster|myid +info +client|setname";
    private static final String ADMIN_PASSWORD = "admin-Pa55word";
    private static final String PASSWORD = "tb-Pa55";

    private RedisHandle redis;
    private CamelContext camel;

    @BeforeEach
    void start() throws Exception {
        redis = RedisServers.standalone("requirepass " + ADMIN_PASSWORD,
                "user rate on >" + PASSWORD + " " + RATE_RULE, "user slots on >" + PASSWORD + " " + RULE);
        String server = "@" + redis.host() + ":" + redis.port() + ")";
        String options = "store=redis&keyPrefix=tb:&redisUri=RAW(redis://";
        camel = new DefaultCamelContext();
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:rate").to("tokenbucket:rate?" + options + "rate:" + PASSWORD + server
                        + "&capacity=5&mode=reject");
                from("direct:slots").to("tokenbucket:slots?" + options + "slots:" + PASSWORD + server
                        + "&maxInFlight=1&maxWait=10s")
                        .delay(300);
            }
        });
        camel.start();
    }

    @AfterEach
    void stop() {
        camel.stop();
        redis.close();
    }

    @Test
    void everyKindOfEndpointWorksWithTheDocumentedRuleAndRedisDeniesNothing() throws Exception {
        ProducerTemplate template = camel.createProducerTemplate();
        assertThat(template.request("direct:rate", e -> { }).getException()).isNull();
        redis.command("SCRIPT", "FLUSH"); // the next call gets NOSCRIPT and sends the script itself (EVAL)
        assertThat(template.request("direct:rate", e -> { }).getException()).isNull();
        Exchange peek = template.request("direct:rate",
                e -> e.getIn().setHeader(TokenBucketConstants.OPERATION, "peek"));
        assertThat(peek.getException()).isNull();
        assertThat(peek.getIn().getHeader(TokenBucketConstants.REMAINING, Long.class)).isBetween(3L, 5L);

        // the second waits for the first's slot, and its release publishes on the released channel
        CompletableFuture<Exchange> first = template.asyncSend("direct:slots", e -> { });
        CompletableFuture<Exchange> second = template.asyncSend("direct:slots", e -> { });
        assertThat(first.get(20, TimeUnit.SECONDS).getException()).isNull();
        assertThat(second.get(20, TimeUnit.SECONDS).getException()).isNull();

        HealthCheckHelper.getHealthCheckRepository(camel, "producers").setEnabled(true);
        List<HealthCheck.Result> checks = HealthCheckHelper.invokeReadiness(camel).stream()
                .filter(r -> r.getCheck().getId().startsWith("tokenbucket-")).toList();
        System.out.println("checks " + checks.stream().map(r -> r.getCheck().getId() + "=" + r.getState()).toList());
        assertThat(checks).isNotEmpty().allMatch(r -> r.getState() == HealthCheck.State.UP);

        assertThat(denials(redis)).isEmpty();
        assertThat(String.valueOf(redis.command("KEYS", "*"))).doesNotContain("tokenbucket:");
    }

    /** A rate endpoint on a Redis Cluster needs the same rule on every node and {@link #CLUSTER_RULE}. */
    @Test
    void aClusterNeedsTheSameRuleAndTheTopology() {
        try (RedisClusterHandle cluster = RedisServers.cluster(3, "user tb on >" + PASSWORD + " " + RATE_RULE
                + " " + CLUSTER_RULE)) {
            CamelContext clustered = new DefaultCamelContext();
            clustered.start();
            try {
                String uri = "tokenbucket:rate?store=redis&keyPrefix=tb:&capacity=5&mode=reject&redisUri=RAW("
                        + "redis-cluster://tb:" + PASSWORD + "@" + cluster.seedUri().substring("redis://".length()) + ")";
                ProducerTemplate template = clustered.createProducerTemplate();
                for (int i = 0; i < 6; i++) {
                    Exchange sent = template.request(uri, e -> { });
                    if (sent.getException() != null) {
                        assertThat(sent.getException()).isInstanceOf(TokenBucketRejectedException.class);
                    }
                }
            } finally {
                clustered.stop();
            }
            cluster.nodes().forEach(node -> assertThat(denials(node)).as(node.uri()).isEmpty());
        }
    }

    /**
     * What Redis refused the ACL user ({@code ACL LOG}), but Lettuce's {@code CLIENT SETINFO} at connect: Lettuce names
     * itself and ignores a refusal, and Redis before 7.2 has no such subcommand to allow (7.0 refuses
     * {@code +client|setinfo} in a rule).
     */
    private static List<?> denials(RedisHandle node) {
        List<?> log = (List<?>) node.command("ACL", "LOG");
        System.out.println("ACL LOG of " + node.uri() + ": " + log);
        return log.stream().map(String::valueOf) // Redis 6.2 logs the command only, 7.x the subcommand too
                .filter(entry -> !entry.contains("object, client,") && !entry.contains("object, client|setinfo,"))
                .toList();
    }
}
