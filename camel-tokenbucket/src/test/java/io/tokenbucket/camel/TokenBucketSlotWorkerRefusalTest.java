package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A waiter for an in-flight slot that gets its slot when the worker pool refuses to continue it (a bounded pool the
 * user gave, full): it fails saying so, and gives back the slot and the waiting place it took, so the next exchange of
 * its key passes at once instead of finding the slot taken by nobody (for ever on the local store, until the lease
 * expires on Redis); so does an exchange whose slot Redis granted when the pool refuses to continue it; and a waiter
 * admitted by an exchange that gave its slot back early and goes on on the pool fails at once too, not after that
 * exchange's route. One slot; the step after the endpoint holds its slot until the test opens the gate named by the
 * exchange's body.
 */
@TokenBucketRedisTestSupport.OwnRedis
class TokenBucketSlotWorkerRefusalTest extends TokenBucketRedisTestSupport {

    private final TokenBucketGates gates = new TokenBucketGates();
    private final List<String> order = gates.order();
    private volatile boolean refusing;

    /** The worker pool: two threads, or a refusal of every task while {@link #refusing}. */
    private final ExecutorService worker = new ThreadPoolExecutor(2, 2, 0, TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>()) {
        @Override
        public void execute(Runnable task) {
            if (refusing) {
                throw new RejectedExecutionException("the test's pool is full");
            }
            super.execute(task);
        }
    };

    @AfterEach
    void stopThreads() {
        worker.shutdownNow();
    }

    private static String uri(String store) {
        return "tokenbucket:refused" + store + "?keyHeader=k&limits=1 in flight&maxWait=30s&store=" + store
                + (store.equals("redis") ? "&redisUri=" + redis.uri() + "&inFlightLease=60s" : "");
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        context.getComponent("tokenbucket", TokenBucketComponent.class).setWorkerPool(worker);
        return new RouteBuilder() {
            @Override
            public void configure() {
                for (String store : List.of("local", "redis")) {
                    from("direct:" + store).to(uri(store)).process(gates);
                }
                // gives its slot back, then goes on (at a second gate) on the thread it continued on
                from("direct:early").to(uri("redis")).process(gates)
                        .setHeader(TokenBucketConstants.OPERATION, constant("release")).to(uri("redis"))
                        .setBody(simple("${body}-on")).process(gates);
            }
        };
    }

    private TokenBucketEndpoint endpoint(String store) {
        return context.getEndpoint(uri(store), TokenBucketEndpoint.class);
    }

    private Future<Exchange> send(String store, String body) {
        gates.close(body);
        return template.asyncSend("direct:" + store, e -> {
            e.getMessage().setBody(body);
            e.getMessage().setHeader("k", "a");
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void aWaiterAdmittedWhenTheWorkerPoolRefusesGivesItsSlotAndPlaceBack(String store) throws Exception {
        Future<Exchange> h = send(store, "h");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("h"));
        Future<Exchange> w = send(store, "w");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 1);

        refusing = true;
        gates.open("h"); // h ends; its release admits w, whose continuation the pool refuses
        assertThat(h.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(w.get(10, TimeUnit.SECONDS).getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("worker pool");
        refusing = false;

        assertThat(order).containsExactly("h");
        assertThat(endpoint(store).getSlotWaitingCount()).isZero();
        assertThat(endpoint(store).getWaitingCount()).as("waiting places").isZero();
        // the slot w got is free again: the next exchange of the key passes at once
        Future<Exchange> n = send(store, "n");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("n"));
        assertThat(endpoint(store).getSlotWaitingCount()).isZero();
        gates.open("n");
        assertThat(n.get(10, TimeUnit.SECONDS).getException()).isNull();
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getInFlightCount() == 0);
    }

    @Test
    void aWaiterAdmittedWhileTheReleasingExchangeGoesOnFailsAtOnceWhenThePoolRefuses() throws Exception {
        String store = "redis";
        gates.close("h");
        gates.close("h-on");
        // paused, Redis answers h after the producer's call: h goes on on a pool task, which its route then holds
        redis.command("CLIENT", "PAUSE", "300", "WRITE");
        Future<Exchange> h = template.asyncSend("direct:early", e -> {
            e.getMessage().setBody("h");
            e.getMessage().setHeader("k", "a");
        });
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("h"));
        Future<Exchange> w = send(store, "w");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getSlotWaitingCount() == 1);

        refusing = true;
        // paused again, h's release and w's try are answered on Redis's I/O thread, never on h's thread: there w's
        // failure would wait for h's current step anyway (Camel queues a callback behind the step its thread runs)
        redis.command("CLIENT", "PAUSE", "300", "WRITE");
        gates.open("h"); // h gives its slot back, admitting w, and waits at its second gate, on that pool task
        assertThat(w.get(10, TimeUnit.SECONDS).getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("worker pool");
        refusing = false;
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("h-on")); // w did not wait for it
        assertThat(order).containsExactly("h", "h-on");
        gates.open("h-on");
        assertThat(h.get(10, TimeUnit.SECONDS).getException()).isNull();

        Future<Exchange> n = send(store, "n");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("n"));
        gates.open("n");
        assertThat(n.get(10, TimeUnit.SECONDS).getException()).isNull();
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint(store).getInFlightCount() == 0);
        assertThat(endpoint(store).getWaitingCount()).as("waiting places").isZero();
    }

    @Test
    void anExchangeRedisGrantedASlotWhenTheWorkerPoolRefusesGivesItsSlotAndPlaceBack() throws Exception {
        refusing = true;
        // Redis answers on its I/O thread, and the exchange that got its slot goes on on the pool: paused, Redis
        // cannot answer within the producer's call, where the exchange would go on on its caller's thread
        redis.command("CLIENT", "PAUSE", "300", "WRITE");
        Future<Exchange> x = send("redis", "x");
        assertThat(x.get(10, TimeUnit.SECONDS).getException()).isInstanceOf(TokenBucketException.class)
                .hasMessageContaining("worker pool");
        refusing = false;

        assertThat(order).isEmpty();
        assertThat(endpoint("redis").getWaitingCount()).as("waiting places").isZero();
        Future<Exchange> n = send("redis", "n");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("n"));
        gates.open("n");
        assertThat(n.get(10, TimeUnit.SECONDS).getException()).isNull();
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint("redis").getInFlightCount() == 0);
    }
}
