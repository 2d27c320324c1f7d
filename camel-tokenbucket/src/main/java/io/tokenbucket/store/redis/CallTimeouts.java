package io.tokenbucket.store.redis;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.netty.util.Timeout;
import io.netty.util.Timer;

/**
 * The store timeout of one call, on the timer of the connection's Lettuce client resources (a Netty
 * {@code HashedWheelTimer}, which Lettuce's own command timeouts use): arming and cancelling it is a lock-free enqueue
 * that wakes no thread, where {@link CompletableFuture#orTimeout} puts every call in a locked delay queue and, at one
 * call in flight, wakes its timer thread for each (the queue is empty between calls, so each new call is its head).
 * The wheel ticks every 100 ms by default, so a call fails between the timeout and one tick later. A call that times
 * out is failed on the wheel's one thread, as {@code orTimeout} failed it on its own: what depends on it there only
 * hands the exchange to the worker pool, answers from the fallback store in memory, or sends a call (the lane's next,
 * a late reservation's release: non-blocking writes), so Lettuce's own timeouts on that thread are not held up.
 */
final class CallTimeouts {

    private CallTimeouts() {
    }

    /**
     * {@code call}, failed with a {@link TimeoutException} when it has not completed within {@code timeoutNanos};
     * with commands whose connection this cannot reach, {@link CompletableFuture#orTimeout}.
     */
    static <T> CompletableFuture<T> within(CompletableFuture<T> call, RedisClusterAsyncCommands<String, String> commands,
                                           long timeoutNanos) {
        Timer timer = timer(commands);
        if (timer == null) {
            return call.orTimeout(timeoutNanos, TimeUnit.NANOSECONDS);
        }
        if (call.isDone()) {
            return call;
        }
        Timeout timeout = timer.newTimeout(t -> call.completeExceptionally(new TimeoutException(
                "Redis did not answer within " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms")),
                timeoutNanos, TimeUnit.NANOSECONDS);
        call.whenComplete((value, failure) -> timeout.cancel());
        return call;
    }

    private static Timer timer(RedisClusterAsyncCommands<String, String> commands) {
        StatefulConnection<String, String> connection = commands instanceof RedisAsyncCommands<String, String> a
                ? a.getStatefulConnection()
                : commands instanceof RedisAdvancedClusterAsyncCommands<String, String> c ? c.getStatefulConnection()
                : null;
        return connection == null || connection.getResources() == null ? null : connection.getResources().timer();
    }
}
