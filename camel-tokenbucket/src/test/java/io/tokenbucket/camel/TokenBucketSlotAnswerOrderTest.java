package io.tokenbucket.camel;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.producer.TokenBucketProducer;
import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Exchanges that Redis refused for want of an in-flight slot queue in the order of Redis's answers, which is the order
 * of their reservations, however the worker pool schedules its tasks: here a pool that holds its tasks and then runs
 * them last first, as two threads of a real pool may. One slot; the step after the endpoint holds its slot until the
 * test opens the gate named by the exchange's body.
 */
class TokenBucketSlotAnswerOrderTest extends TokenBucketRedisTestSupport {

    private final TokenBucketGates gates = new TokenBucketGates();
    private final List<String> order = gates.order();
    private final List<Runnable> held = new CopyOnWriteArrayList<>();
    private volatile boolean holding;

    /**
     * The worker pool: two threads, but while {@link #holding}, the producer's continuations of exchanges the
     * store answered go into {@link #held} (the slot queue's polls and the like run).
     */
    private final ExecutorService worker = new ThreadPoolExecutor(2, 2, 0, TimeUnit.MILLISECONDS,
            new LinkedBlockingQueue<>()) {
        @Override
        public void execute(Runnable task) {
            if (holding && task.getClass().getName().startsWith(TokenBucketProducer.class.getName() + "$$")) {
                held.add(task);
            } else {
                super.execute(task);
            }
        }
    };

    @AfterEach
    void stopThreads() {
        worker.shutdownNow();
    }

    private static String uri() {
        return "tokenbucket:answered?keyHeader=k&limits=1 in flight&maxWait=30s&store=redis&redisUri=" + redis.uri()
                + "&inFlightLease=5s";
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        context.getComponent("tokenbucket", TokenBucketComponent.class).setWorkerPool(worker);
        return new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:answered").to(uri()).process(gates);
            }
        };
    }

    private TokenBucketEndpoint endpoint() {
        return context.getEndpoint(uri(), TokenBucketEndpoint.class);
    }

    private Future<Exchange> send(String body) {
        gates.close(body);
        return template.asyncSend("direct:answered", e -> {
            e.getMessage().setBody(body);
            e.getMessage().setHeader("k", "a");
        });
    }

    @Test
    void exchangesRefusedASlotQueueInTheOrderRedisAnsweredThemWhateverThePoolRunsFirst() throws Exception {
        Future<Exchange> h = send("h");
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.contains("h"));

        holding = true;
        // each is answered (refused: h holds the slot) before the next is sent; its answer waits in the pool or in
        // the queue of slot waiters
        Future<Exchange> w1 = send("w1");
        await().atMost(10, TimeUnit.SECONDS).until(() -> held.size() + endpoint().getSlotWaitingCount() == 1);
        Future<Exchange> w2 = send("w2");
        await().atMost(10, TimeUnit.SECONDS).until(() -> held.size() + endpoint().getSlotWaitingCount() == 2);
        holding = false;
        List<Runnable> lastFirst = new ArrayList<>(held);
        Collections.reverse(lastFirst);
        lastFirst.forEach(Runnable::run);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint().getSlotWaitingCount() == 2);

        gates.open("h");
        assertThat(h.get(10, TimeUnit.SECONDS).getException()).isNull();
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.size() == 2);
        assertThat(order).containsExactly("h", "w1");
        gates.open("w1");
        assertThat(w1.get(10, TimeUnit.SECONDS).getException()).isNull();
        await().atMost(10, TimeUnit.SECONDS).until(() -> order.size() == 3);
        gates.open("w2");
        assertThat(w2.get(10, TimeUnit.SECONDS).getException()).isNull();
        assertThat(order).containsExactly("h", "w1", "w2");
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint().getInFlightCount() == 0);
    }
}
