package io.tokenbucket.store.local;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;
import io.tokenbucket.math.Step;
import io.tokenbucket.store.StoreCommand;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** In-flight slots in the local store: never more held than the limit under contention, and never swept. */
class LocalBucketStoreInFlightTest {

    private static final Limits THREE = Limits.inFlightOnly(3);

    @Test
    void threadsRacingForSlotsNeverHoldMoreThanTheLimitAndEndWithNoneHeld() throws Exception {
        AtomicLong clock = new AtomicLong();
        LocalBucketStore store = new LocalBucketStore(clock::get);
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger admitted = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            Future<?>[] runs = new Future<?>[8];
            for (int t = 0; t < runs.length; t++) {
                runs[t] = pool.submit(() -> {
                    for (int i = 0; i < 20_000; i++) {
                        Outcome o = store.reserveNow("k", THREE, 1, 0);
                        if (o.granted()) {
                            admitted.incrementAndGet();
                            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            inside.decrementAndGet(); // leaves before it gives the slot back, as an exchange does
                            store.executeNow(StoreCommand.of(Step.Op.RELEASE, "k", THREE, 0));
                        } else {
                            assertThat(o.slotless()).isTrue();
                        }
                    }
                    return null;
                });
            }
            for (Future<?> run : runs) {
                run.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(most.get()).isBetween(1, 3);
        assertThat(admitted.get()).isPositive();
        Outcome peek = store.peek("k", THREE, 1).toCompletableFuture().join();
        assertThat(peek.remaining()).isEqualTo(3); // every slot back
    }

    @Test
    void aSweepNeverDropsAKeyThatHoldsASlot() {
        AtomicLong clock = new AtomicLong();
        LocalBucketStore store = new LocalBucketStore(clock::get);
        Limits limits = Limits.of(io.tokenbucket.math.Limit.of(5, 5, 1_000_000_000L)).withInFlight(1);
        assertThat(store.reserveNow("k", limits, 1, 0).granted()).isTrue();
        clock.addAndGet(TimeUnit.HOURS.toNanos(1)); // the tokens are long back: the bucket is full
        assertThat(store.sweep()).isZero();
        assertThat(store.reserveNow("k", limits, 1, 0).slotless()).isTrue();

        store.executeNow(StoreCommand.of(Step.Op.RELEASE, "k", limits, 0));
        assertThat(store.sweep()).isEqualTo(1); // nothing held: now it goes
        assertThat(store.size()).isZero();
        assertThat(store.reserveNow("k", limits, 1, 0).granted()).isTrue();
    }

    @Test
    void aReleaseGivesBackOneSlotOnEveryKeyOfAnAllOfReservation() {
        LocalBucketStore store = new LocalBucketStore(new AtomicLong()::get);
        Limits one = Limits.inFlightOnly(1);
        StoreCommand both = StoreCommand.reserve(List.of(List.of("proxy")), List.of(List.of(one)), List.of("host"),
                List.of(one), 1, 0);
        assertThat(store.executeNow(both).granted()).isTrue();
        assertThat(store.executeNow(both).slotless()).isTrue();
        store.executeNow(new StoreCommand(List.of("proxy", "host"),
                new Step(Step.Op.RELEASE, new int[] {2}, List.of(one, one), 0, 0)));
        assertThat(store.executeNow(both).granted()).isTrue();
    }
}
