package io.tokenbucket.store.redis;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.IntStream;

import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lanes' order on a script that answers when the test says: a reservation on keys of two lanes waits for its
 * place in both, and one that times out while queued holds nothing back.
 */
class ReservationLanesTest {

    private static final Limits LIMITS = Limits.of(Limit.of(10, 1, 1_000_000));

    /** One call the lanes made: its keys, and the reply the test completes. */
    private record Call(List<String> keys, CompletableFuture<List<Long>> reply) {
    }

    private final List<Call> calls = new CopyOnWriteArrayList<>();
    /** Thrown by the next call the lanes make, instead of sending it. */
    private volatile RuntimeException throwNext;
    private ReservationLanes lanes = lanes(TimeUnit.SECONDS.toNanos(30));

    private ReservationLanes lanes(long timeoutNanos) {
        return new ReservationLanes(false, true, size -> { }, timeoutNanos, new RedisClocks(() -> null, false),
                (keys, operands, clock) -> {
                    RuntimeException thrown = throwNext;
                    if (thrown != null) {
                        throwNext = null;
                        throw thrown;
                    }
                    CompletableFuture<List<Long>> reply = new CompletableFuture<>();
                    calls.add(new Call(List.of(keys), reply));
                    return reply;
                });
    }

    /** A key of {@code lane}. */
    private static String keyIn(int lane) {
        return IntStream.range(0, 1000).mapToObj(i -> "k" + i)
                .filter(k -> ReservationLanes.lane(k, false) == lane).findFirst().orElseThrow();
    }

    private CompletableFuture<Outcome> reserve(String... keys) {
        return lanes.reserve(keys, List.of(LIMITS), List.of()).toCompletableFuture();
    }

    /** Answers call {@code i}: each of its {@code members} granted at once, then the script's now and the clock. */
    private void answer(int i, int members) {
        List<Long> reply = new java.util.ArrayList<>();
        for (int m = 0; m < members; m++) {
            reply.addAll(List.of(1L, 0L, 9L));
        }
        reply.add(1_000_000L);
        reply.add(1_000_000L);
        calls.get(i).reply().complete(reply);
    }

    @Test
    void aReservationOnKeysOfTwoLanesGoesWhenFirstInBothAndWhatCameAfterItOnEitherFollows() throws Exception {
        String a = keyIn(0);
        String b = keyIn(1);
        CompletableFuture<Outcome> first = reserve(a);
        CompletableFuture<Outcome> both = reserve(a, b);
        CompletableFuture<Outcome> after = reserve(b);
        // lane 1 is idle, but what came after the reservation on both keys may not pass it
        assertThat(calls).hasSize(1);
        assertThat(calls.get(0).keys()).containsExactly(a);

        answer(0, 1);
        assertThat(first.get(5, TimeUnit.SECONDS).granted()).isTrue();
        assertThat(calls).as("the reservation on both keys, and the one on b after it, in one call").hasSize(2);
        assertThat(calls.get(1).keys()).containsExactly(a, b, b);
        answer(1, 2);
        assertThat(both.get(5, TimeUnit.SECONDS).granted()).isTrue();
        assertThat(after.get(5, TimeUnit.SECONDS).granted()).isTrue();
    }

    @Test
    void aReservationOnKeysOfTwoLanesThatTimesOutWhileQueuedHoldsNothingBack() throws Exception {
        String a = keyIn(0);
        String b = keyIn(1);
        reserve(a);
        CompletableFuture<Outcome> both = reserve(a, b);
        CompletableFuture<Outcome> after = reserve(b);
        assertThat(calls).hasSize(1);

        both.completeExceptionally(new TimeoutException("queued too long"));
        assertThat(calls).as("the one on b goes, while lane 0's call is still out").hasSize(2);
        assertThat(calls.get(1).keys()).containsExactly(b);
        answer(1, 1);
        assertThat(after.get(5, TimeUnit.SECONDS).granted()).isTrue();

        answer(0, 1);
        assertThat(calls).as("the timed-out reservation is never sent").hasSize(2);
    }

    @Test
    void aCallThatThrowsFailsItsReservationsAndItsLaneGoesOn() throws Exception {
        String a = keyIn(0);
        throwNext = new IllegalStateException("the connection broke while writing");
        CompletableFuture<Outcome> failed = reserve(a);
        assertThat(failed).failsWithin(5, TimeUnit.SECONDS).withThrowableThat()
                .withMessageContaining("the connection broke while writing");
        CompletableFuture<Outcome> next = reserve(a);
        assertThat(calls).as("the lane sends the next one").hasSize(1);
        answer(0, 1);
        assertThat(next.get(5, TimeUnit.SECONDS).granted()).isTrue();
    }

    @Test
    void aReservationQueuedForTheStoreTimeoutFailsUnsent() throws Exception {
        lanes = lanes(TimeUnit.MILLISECONDS.toNanos(20));
        String a = keyIn(0);
        reserve(a);
        CompletableFuture<Outcome> queued = reserve(a);
        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(40)); // its 20 ms pass
        answer(0, 1);
        assertThat(queued).failsWithin(5, TimeUnit.SECONDS).withThrowableThat()
                .withCauseInstanceOf(TimeoutException.class).withMessageContaining("was not sent");
        assertThat(calls).as("nothing sent for it").hasSize(1);
        CompletableFuture<Outcome> after = reserve(a);
        assertThat(calls).as("the lane goes on").hasSize(2);
        answer(1, 1);
        assertThat(after.get(5, TimeUnit.SECONDS).granted()).isTrue();
    }
}
