package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.AsyncProducer;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * maxWaiting reached exactly by waiters for tokens and waiters for slots together, one of them moving from its slot
 * to its tokens: an exchange that need not wait still passes, one that must is refused, the count stays at the
 * bound through the move, and every place comes back when the context stops and abandons them, each once.
 */
class TokenBucketMaxWaitingMixTest extends TokenBucketRedisTestSupport {

    private final CountDownLatch letGo = new CountDownLatch(1);
    private final ExecutorService senders = Executors.newCachedThreadPool();

    private static String uri(String store) {
        return "tokenbucket:mix" + store + "?keyHeader=k&capacity=1&refillPeriod=1h&maxInFlight=1&maxWaiting=3"
                + "&maxWait=2h&stopTimeout=0&store=" + store + ("redis".equals(store) ? "&redisUri=" + redis.uri() : "");
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                errorHandler(noErrorHandler());
                for (String s : List.of("local", "redis")) {
                    from("direct:" + s).to(uri(s)).process(e -> {
                        if (e.getMessage().getHeader("hold") != null) {
                            letGo.await();
                        }
                    });
                }
            }
        };
    }

    @AfterEach
    void cleanUp() {
        letGo.countDown();
        senders.shutdownNow();
    }

    private record One(Exchange exchange, AtomicInteger calls, CountDownLatch done) {
    }

    private final List<One> all = new ArrayList<>();

    private One send(AsyncProducer producer, String key) {
        One one = new One(new DefaultExchange(context), new AtomicInteger(), new CountDownLatch(1));
        one.exchange().getMessage().setHeader("k", key);
        all.add(one);
        producer.process(one.exchange(), doneSync -> {
            one.calls().incrementAndGet();
            one.done().countDown();
        });
        return one;
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void theBoundHoldsThroughTheMixAndEveryPlaceComesBack(String store) throws Exception {
        TokenBucketEndpoint endpoint = context.getEndpoint(uri(store), TokenBucketEndpoint.class);
        AsyncProducer producer = context.getEndpoint("direct:" + store).createAsyncProducer();
        producer.start();
        CompletableFuture<Exchange> a1 = CompletableFuture.supplyAsync(() -> template.send("direct:" + store, e -> {
            e.getMessage().setHeader("k", "a");
            e.getMessage().setHeader("hold", "yes");
        }), senders);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getInFlightCount() == 1);
        One a2 = send(producer, "a"); // a slot waiter; its token too will take an hour once it has the slot
        One b1 = send(producer, "b"); // passes and ends: key b's slot free, its token gone
        assertThat(b1.done().await(10, TimeUnit.SECONDS)).isTrue();
        One b2 = send(producer, "b"); // waits an hour for its token, holding b's slot
        One b3 = send(producer, "b"); // waits for b's slot
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getWaitingCount() == 3);
        assertThat(endpoint.getSlotWaitingCount()).isEqualTo(2);

        One c1 = send(producer, "c"); // need not wait: passes though every place is taken
        assertThat(c1.done().await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(c1.exchange().getException()).isNull();
        One c2 = send(producer, "c"); // would wait for its token: refused
        One a3 = send(producer, "a"); // would queue behind a2: refused
        assertThat(c2.done().await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(a3.done().await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(c2.exchange().getException()).isInstanceOf(TokenBucketRejectedException.class);
        assertThat(a3.exchange().getException()).isInstanceOf(TokenBucketRejectedException.class);
        assertThat(endpoint.getWaitingCount()).isEqualTo(3);

        letGo.countDown(); // a1 ends: a2 takes a's slot and waits for its token, keeping its one place
        assertThat(a1.get(10, TimeUnit.SECONDS).getException()).isNull();
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getSlotWaitingCount() == 1
                && endpoint.getInFlightCount() == 2);
        assertThat(endpoint.getWaitingCount()).isEqualTo(3);
        One c3 = send(producer, "c");
        assertThat(c3.done().await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(c3.exchange().getException()).isInstanceOf(TokenBucketRejectedException.class);

        context.stop();
        for (One one : List.of(a2, b2, b3)) {
            assertThat(one.done().await(10, TimeUnit.SECONDS)).isTrue();
            assertThat(one.exchange().getException()).isInstanceOf(TokenBucketException.class);
        }
        assertThat(all).allSatisfy(one -> assertThat(one.calls().get()).isEqualTo(1));
        assertThat(endpoint.getWaitingCount()).isZero();
        assertThat(endpoint.getSlotWaitingCount()).isZero();
    }
}
