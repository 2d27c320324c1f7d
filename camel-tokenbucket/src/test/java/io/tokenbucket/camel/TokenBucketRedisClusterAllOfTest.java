package io.tokenbucket.camel;

import java.util.HashMap;
import java.util.Map;

import io.lettuce.core.cluster.SlotHash;
import io.tokenbucket.testsupport.redis.RedisClusterHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The adoc's hash-tag rule on a real 3-master Redis Cluster: with {@code keyPrefix={tb}:} a proxy's and a host's
 * buckets are in one slot and an all-of acquire is one script; without a tag they are not, and the exchange fails
 * with an error naming the keys instead of Redis's CROSSSLOT, having reserved nothing.
 */
class TokenBucketRedisClusterAllOfTest extends TokenBucketTestSupport {

    private static RedisClusterHandle cluster;

    @BeforeAll
    static void startCluster() {
        cluster = RedisServers.sharedCluster();
        cluster.flushAll();
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static String uri(String name, String prefix) {
        return "tokenbucket:" + name + "?store=redis&redisUri=redis-cluster://"
                + String.join(",", cluster.uris()).replace("redis://", "") + "&keyPrefix=" + prefix
                + "&keyHeader=proxyId&limits=1/1h&keyLimits=host-*=2/1h&mode=reject&storeTimeout=2s";
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                from("direct:tagged").to(uri("tagged", "{tb}:"));
                from("direct:untagged").to(uri("untagged", "tb:"));
            }
        };
    }

    private Exchange send(String uri, String proxy, String host) {
        Map<String, Object> headers = new HashMap<>();
        headers.put("proxyId", proxy);
        headers.put(TokenBucketConstants.ALL_OF, host);
        return template.request(uri, e -> e.getMessage().setHeaders(headers));
    }

    @Test
    void aHashTagInTheKeyPrefixKeepsEveryKeyOfAnAcquireInOneSlot() {
        assertThat(send("direct:tagged", "p1", "host-a").getException()).isNull();
        assertThat(send("direct:tagged", "p2", "host-a").getException()).isNull();
        assertThat(send("direct:tagged", "p3", "host-a").getException())
                .isInstanceOf(TokenBucketRejectedException.class).hasMessageContaining("with all of [host-a]");
    }

    @Test
    void keysInDifferentSlotsFailNamingThemBeforeAnythingIsSent() {
        assertThat(SlotHash.getSlot("tb:untagged:p1")).isNotEqualTo(SlotHash.getSlot("tb:untagged:host-b"));
        Exchange failed = send("direct:untagged", "p1", "host-b");
        assertThat(failed.getException()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tb:untagged:p1").hasMessageContaining("tb:untagged:host-b")
                .hasMessageContaining("keyPrefix={tb}:");
        Exchange alone = template.request("direct:untagged", e -> e.getMessage().setHeader("proxyId", "p1"));
        assertThat(alone.getException()).as("p1's token was not taken").isNull();
    }
}
