package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker pool the application gave, made by Camel's ExecutorServiceManager with its default profile (rejection
 * policy CallerRuns), shut down while an exchange waits for its tokens: when the timer releases it, the pool drops
 * the hand-off's task (the JDK's CallerRunsPolicy runs nothing once shut down). The exchange must still complete,
 * failed with TokenBucketException, as the workerPool option says of a task the pool refuses.
 */
class TokenBucketUserPoolShutDownTest extends TokenBucketRedisTestSupport {

    private ExecutorService pool;

    private static String uri(String store) {
        return "tokenbucket:userPool" + store + "?keyHeader=k&capacity=1&refillAmount=1&refillPeriod=1s&maxWait=30s"
                + "&store=" + store + (store.equals("redis") ? "&redisUri=" + redis.uri() : "");
    }

    @Override
    protected RoutesBuilder createRouteBuilder() {
        pool = context.getExecutorServiceManager().newThreadPool(this, "userWorker", 2, 2);
        context.getComponent("tokenbucket", TokenBucketComponent.class).setWorkerPool(pool);
        context.getShutdownStrategy().setTimeout(2);
        return new RouteBuilder() {
            @Override
            public void configure() {
                for (String store : List.of("local", "redis")) {
                    from("direct:" + store).to(uri(store));
                }
            }
        };
    }

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    @ParameterizedTest
    @ValueSource(strings = {"local", "redis"})
    void anExchangeReleasedAfterTheUsersPoolShutDownFailsInsteadOfNeverCompleting(String store) throws Exception {
        Exchange first = template.request("direct:" + store, e -> e.getMessage().setHeader("k", "a"));
        assertThat(first.getException()).isNull();
        // the bucket is empty for about a second: the second exchange waits for its token on the timer
        CompletableFuture<Exchange> second = template.asyncSend("direct:" + store,
                e -> e.getMessage().setHeader("k", "a"));
        context.getExecutorServiceManager().shutdown(pool);
        Exchange done = second.get(20, TimeUnit.SECONDS); // a TimeoutException here: the exchange never completed
        assertThat(done.getException()).isInstanceOf(TokenBucketException.class);
    }
}
