package io.tokenbucket.camel;

import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import io.tokenbucket.camel.producer.TokenBucketProducer;
import org.apache.camel.AsyncCallback;
import org.apache.camel.AsyncProducer;
import org.apache.camel.Exchange;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What one exchange costs the glue, guarded so that stages and wrappers do not creep back: an admission the local
 * store answers at once completes on the calling thread, two glue frames below {@code process}; a rejection
 * carries no stack trace.
 *
 * <p>{@code -Dtest=TokenBucketHopsTest} prints its figures (frames, bytes per immediate, candidate, rejected and
 * delayed exchange). Bytes are those the calling
 * thread allocates for an exchange sent again and again, after a warm-up; the delayed figure counts every
 * thread, the timer's and the workers' included.
 */
class TokenBucketHopsTest extends TokenBucketTestSupport {

    private static final int ROUNDS = 50_000;
    private static final AsyncCallback NOTHING = doneSync -> { };

    private final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private AsyncProducer producer(String uri) throws Exception {
        AsyncProducer producer = context.getEndpoint(uri).createAsyncProducer();
        producer.start();
        return producer;
    }

    /** Bytes the calling thread allocates per {@code process} of {@code exchange}, after as many for warm-up. */
    private double bytesPerExchange(AsyncProducer producer, Exchange exchange) throws Exception {
        long thread = Thread.currentThread().getId();
        for (int i = 0; i < ROUNDS; i++) {
            producer.process(exchange, NOTHING);
        }
        long before = threads.getThreadAllocatedBytes(thread);
        for (int i = 0; i < ROUNDS; i++) {
            producer.process(exchange, NOTHING);
        }
        return (threads.getThreadAllocatedBytes(thread) - before) / (double) ROUNDS;
    }

    /** The frames between {@code process} and the callback, innermost first. */
    private static List<StackTraceElement> framesBelowProcess(StackTraceElement[] stack) {
        for (int i = 0; i < stack.length; i++) {
            if (stack[i].getClassName().equals(TokenBucketProducer.class.getName())
                    && stack[i].getMethodName().equals("process")) {
                return List.of(stack).subList(1, i); // frame 0 is the callback itself
            }
        }
        throw new AssertionError("process is not on the stack: " + List.of(stack));
    }

    @Test
    void anImmediateAdmissionCompletesOnTheCallingThreadWithoutStagesOrWrappers() throws Exception {
        AsyncProducer producer = producer("tokenbucket:hops?capacity=1000000000&refillPeriod=1s&keyHeader=k");
        Exchange exchange = new DefaultExchange(context);
        exchange.getMessage().setHeader("k", "key-1");
        AtomicReference<StackTraceElement[]> atDone = new AtomicReference<>();
        boolean sync = producer.process(exchange, doneSync -> atDone.set(new Throwable().getStackTrace()));

        List<StackTraceElement> frames = framesBelowProcess(atDone.get());
        double bytes = bytesPerExchange(producer, exchange);
        assertThat(exchange.getException()).isNull();
        System.out.printf("immediate admission: %d frames between process and the callback %s; %.0f bytes%n",
                frames.size(), frames, bytes);
        assertThat(sync).isTrue();
        assertThat(frames).hasSizeLessThanOrEqualTo(2)
                .allMatch(f -> f.getClassName().equals(TokenBucketProducer.class.getName()));
        // bytes are printed, not asserted: what the JIT removes depends on the machine and its load (60 to 100 with
        // C2, 170 with C1 alone), and memory targets are the benchmarks' (RouteOverhead -prof gc)

        Exchange candidates = new DefaultExchange(context);
        candidates.getMessage().setHeader(TokenBucketConstants.CANDIDATES, List.of("a", "b", "c"));
        System.out.printf("immediate admission on 3 candidates: %.0f bytes%n", bytesPerExchange(producer, candidates));
        assertThat(candidates.getException()).isNull();
    }

    @Test
    void aRejectionCarriesNoStackTrace() throws Exception {
        AsyncProducer producer = producer("tokenbucket:hops-rejected?capacity=1&refillPeriod=1h&mode=reject");
        Exchange first = new DefaultExchange(context);
        producer.process(first, NOTHING);
        assertThat(first.getException()).isNull();
        Exchange rejected = new DefaultExchange(context);
        double bytes = bytesPerExchange(producer, rejected);
        System.out.printf("rejection: %.0f bytes%n", bytes);
        assertThat(rejected.getException()).isInstanceOf(TokenBucketRejectedException.class);
        assertThat(rejected.getException().getStackTrace()).isEmpty();
    }

    @Test
    void delayedExchangesAllComplete() throws Exception {
        // a token every 10 microseconds and a bucket of one: nearly every exchange of a burst waits a little
        AsyncProducer producer = producer("tokenbucket:hops-delayed?capacity=1&refillAmount=100000&refillPeriod=1s");
        int count = 20_000;
        for (int round = 0; round < 2; round++) { // the first round warms up
            Exchange[] exchanges = new Exchange[count];
            for (int i = 0; i < count; i++) {
                exchanges[i] = new DefaultExchange(context);
            }
            CountDownLatch done = new CountDownLatch(count);
            LongAdder delayed = new LongAdder();
            AsyncCallback callback = doneSync -> {
                if (!doneSync) {
                    delayed.increment();
                }
                done.countDown();
            };
            long before = allThreadsAllocated();
            for (Exchange exchange : exchanges) {
                producer.process(exchange, callback);
            }
            assertThat(done.await(60, TimeUnit.SECONDS)).isTrue();
            long bytes = allThreadsAllocated() - before;
            System.out.printf("delayed: %d of %d exchanges waited; %.0f bytes per exchange, all threads%n",
                    delayed.sum(), count, bytes / (double) count);
            assertThat(List.of(exchanges)).allMatch(e -> e.getException() == null);
        }
    }

    private long allThreadsAllocated() {
        long sum = 0;
        for (long bytes : threads.getThreadAllocatedBytes(threads.getAllThreadIds())) {
            sum += Math.max(bytes, 0);
        }
        return sum;
    }
}
