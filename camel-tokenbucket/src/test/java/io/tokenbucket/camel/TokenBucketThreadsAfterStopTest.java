package io.tokenbucket.camel;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Once the Camel context has stopped, no thread of the component is left: not its timer nor its workers, nor the
 * thread that connects to a Redis that was down, whether exchanges were waiting (for tokens or for slots) or Redis
 * went down and came back meanwhile. Every waiting exchange completed, once.
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketThreadsAfterStopTest extends TokenBucketRedisTestSupport {

    @Override
    public boolean isUseRouteBuilder() {
        return false;
    }

    @AfterEach
    void redisUp() {
        if (!redis.isRunning()) {
            redis.start();
        }
    }

    private static List<String> componentThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.toLowerCase(Locale.ROOT).contains("tokenbucket")).toList();
    }

    private static CamelContext started(String... uris) throws Exception {
        CamelContext camel = new DefaultCamelContext();
        camel.getShutdownStrategy().setTimeout(5);
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                for (int i = 0; i < uris.length; i++) {
                    from("direct:" + i).to(uris[i]).process(e -> { });
                }
            }
        });
        camel.start();
        return camel;
    }

    private static void stopAndAssertNoThreadLeft(CamelContext camel, List<Sent> sent) throws Exception {
        camel.stop();
        for (Sent s : sent) {
            assertThat(s.done().await(20, TimeUnit.SECONDS)).as("every exchange completed").isTrue();
        }
        Awaitility.await().atMost(20, TimeUnit.SECONDS).untilAsserted(() -> assertThat(componentThreads()).isEmpty());
    }

    @Test
    void noThreadIsLeftAfterWaitersOnBothStores() throws Exception {
        String rate = "capacity=1&refillPeriod=1h&maxWait=2h&stopTimeout=0";
        String slots = "maxInFlight=1&maxWait=1h&stopTimeout=0";
        CamelContext camel = started("tokenbucket:l1?" + rate, "tokenbucket:l2?" + slots,
                "tokenbucket:r1?store=redis&redisUri=" + redis.uri() + "&" + rate,
                "tokenbucket:r2?store=redis&redisUri=" + redis.uri() + "&" + slots);
        List<Sent> sent = List.of(sendAsync(camel, "direct:0", 50, Map.of()), sendAsync(camel, "direct:2", 50, Map.of()));
        stopAndAssertNoThreadLeft(camel, sent);
    }

    @Test
    void noThreadIsLeftWhenRedisWasDownAtStartAndCameBack() throws Exception {
        redis.stop();
        CamelContext camel = started("tokenbucket:down?store=redis&onStoreError=local&capacity=1&refillPeriod=1h"
                + "&maxWait=2h&stopTimeout=0&redisUri=" + redis.uri(),
                "tokenbucket:downSlots?store=redis&onStoreError=allow&maxInFlight=1&maxWait=1h&stopTimeout=0"
                        + "&redisUri=" + redis.uri());
        List<Sent> sent = List.of(sendAsync(camel, "direct:0", 20, Map.of()));
        redis.start();
        Sent later = sendAsync(camel, "direct:1", 5, Map.of());
        stopAndAssertNoThreadLeft(camel, List.of(sent.get(0), later));
    }

    @Test
    void noThreadIsLeftWhenRedisIsDownAtTheStop() throws Exception {
        CamelContext camel = started("tokenbucket:gone?store=redis&onStoreError=fail&maxInFlight=1&maxWait=1h"
                + "&stopTimeout=0&redisUri=" + redis.uri());
        Sent sent = sendAsync(camel, "direct:0", 20, Map.of());
        redis.stop();
        stopAndAssertNoThreadLeft(camel, List.of(sent));
    }
}
