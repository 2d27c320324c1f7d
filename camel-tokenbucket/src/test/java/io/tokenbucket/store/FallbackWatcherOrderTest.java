package io.tokenbucket.store;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the {@link FallbackBucketStore.Watcher} hears when a failure and an answer of the primary complete at once, on
 * two threads (a store timeout fires on the timer's thread while another call's answer arrives on the I/O thread):
 * the answer that follows the failure is always told, so a WARN that Redis does not answer is always followed by the
 * INFO that it answers again.
 */
class FallbackWatcherOrderTest {

    private static final Limits LIMITS = Limits.of(Limit.of(10, 10, TimeUnit.SECONDS.toNanos(1)));

    @Test
    void anAnswerThatRacesAFailureIsToldAfterIt() throws Exception {
        LinkedBlockingQueue<CompletableFuture<Outcome>> calls = new LinkedBlockingQueue<>();
        BucketStore primary = new BucketStore() {
            @Override
            public CompletableFuture<Outcome> execute(StoreCommand command) {
                CompletableFuture<Outcome> call = new CompletableFuture<>();
                calls.add(call);
                return call;
            }
        };
        List<String> heard = new CopyOnWriteArrayList<>();
        CountDownLatch failing = new CountDownLatch(1);
        CountDownLatch goOn = new CountDownLatch(1);
        AtomicLong now = new AtomicLong();
        FallbackBucketStore store = new FallbackBucketStore(primary, FallbackBucketStore.ALLOW_ALL, now::get,
                new FallbackBucketStore.Watcher() {
                    @Override
                    public void failed(Throwable cause) {
                        failing.countDown();
                        try {
                            goOn.await(10, TimeUnit.SECONDS); // a watcher at its work (a log line) when...
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        heard.add("failed");
                    }

                    @Override
                    public void answered() {
                        heard.add("answered");
                    }
                });
        CompletableFuture<Outcome> timedOut = store.reserve("a", LIMITS, 1, 0).toCompletableFuture();
        CompletableFuture<Outcome> answered = store.reserve("b", LIMITS, 1, 0).toCompletableFuture();
        CompletableFuture<Outcome> first = calls.take();
        CompletableFuture<Outcome> second = calls.take();
        Thread timer = new Thread(() -> first.completeExceptionally(new TimeoutException("no answer in 300 ms")));
        timer.start();
        assertThat(failing.await(10, TimeUnit.SECONDS)).isTrue();
        second.complete(Outcome.granted(9)); // ...another call's answer arrives
        goOn.countDown();
        timer.join(10_000);
        assertThat(timedOut.get(10, TimeUnit.SECONDS).granted()).isTrue(); // the policy's answer
        assertThat(answered.get(10, TimeUnit.SECONDS).granted()).isTrue();

        now.addAndGet(FallbackBucketStore.PROBE_INTERVAL_NANOS); // the primary is tried again, and answers
        CompletableFuture<Outcome> next = store.reserve("c", LIMITS, 1, 0).toCompletableFuture();
        calls.take().complete(Outcome.granted(9));
        assertThat(next.get(10, TimeUnit.SECONDS).granted()).isTrue();
        assertThat(heard).as("what the watcher heard, in order").last().isEqualTo("answered");
    }
}
