package io.tokenbucket.camel.producer;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import io.tokenbucket.testsupport.random.TestSeed;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The timer on clocks only the test moves: a task runs at its deadline or later, never before, in deadline order,
 * also while the timer spins for the last stretch; a cancelled task never runs; a stopped timer takes no task.
 */
class TokenBucketTimerTest {

    private Thread thread;
    private TokenBucketTimer timer;

    @AfterEach
    void stop() throws InterruptedException {
        if (timer != null) {
            timer.stop();
            thread.join(10_000);
        }
    }

    private TokenBucketTimer start(TokenBucketTimer.Clock clock, long spinNanos) {
        timer = new TokenBucketTimer(clock, spinNanos);
        thread = new Thread(timer, "TokenBucketTimerTest");
        thread.setDaemon(true);
        thread.start();
        return timer;
    }

    /** A clock that stands still until the test sets it; parking waits for an unpark (a wake-up or a new task). */
    static final class ManualClock implements TokenBucketTimer.Clock {
        final AtomicLong now = new AtomicLong();

        @Override
        public long nanoTime() {
            return now.get();
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            LockSupport.park(blocker);
        }
    }

    /**
     * A clock that moves on by itself: {@code step} per reading, and by exactly the time asked for when the timer
     * parks, as if parking always woke on time; so the timer both spins and parks, fast.
     */
    static final class RunningClock implements TokenBucketTimer.Clock {
        final AtomicLong now = new AtomicLong();
        final long step;

        RunningClock(long step) {
            this.step = step;
        }

        @Override
        public long nanoTime() {
            return now.addAndGet(step);
        }

        @Override
        public void parkNanos(Object blocker, long nanos) {
            if (nanos >= TimeUnit.MILLISECONDS.toNanos(100)) {
                LockSupport.park(blocker); // nothing due (idle): wait for a task rather than run the clock on
            } else {
                now.addAndGet(nanos);
            }
        }
    }

    /** A task that notes the clock when it runs. */
    record Ran(long deadline, long at) {
    }

    @Test
    void aTaskRunsOnlyOnceItsDeadlineHasComeAndEveryDueTaskRuns() throws InterruptedException {
        ManualClock clock = new ManualClock();
        start(clock, 0);
        Random random = TestSeed.random("TokenBucketTimerTest.aTaskRunsOnlyOnceItsDeadlineHasCome", 13);
        ConcurrentLinkedQueue<Ran> ran = new ConcurrentLinkedQueue<>();
        List<Long> deadlines = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            long deadline = random.nextInt(10_000);
            deadlines.add(deadline);
            timer.schedule(() -> ran.add(new Ran(deadline, clock.nanoTime())), deadline);
        }
        for (long t = 0; t < 10_000 + 97; t += 97) {
            clock.now.set(t);
            timer.wakeUp(); // the clock only moves here: the timer parked for a deadline that has now come
            CountDownLatch reached = new CountDownLatch(1);
            timer.schedule(reached::countDown, t); // after every task due by t: same or earlier deadline, earlier
            assertThat(reached.await(10, TimeUnit.SECONDS)).as("the timer reached %d", t).isTrue();
            long at = t;
            assertThat(ran).allSatisfy(r -> assertThat(r.at()).isGreaterThanOrEqualTo(r.deadline()));
            assertThat(ran).hasSize((int) deadlines.stream().filter(d -> d <= at).count());
        }
        assertThat(ran).hasSize(deadlines.size());
    }

    @Test
    void spinningForTheLastStretchNeverRunsATaskEarly() throws InterruptedException {
        RunningClock clock = new RunningClock(7);
        Random random = TestSeed.random("TokenBucketTimerTest.spinningForTheLastStretch", 42);
        int count = 5_000;
        ConcurrentLinkedQueue<Ran> ran = new ConcurrentLinkedQueue<>();
        CountDownLatch all = new CountDownLatch(count);
        // scheduled before the timer starts, so that the clock does not run away from the deadlines meanwhile
        timer = new TokenBucketTimer(clock, 200_000); // gaps of ~100 us: spins until the budget is spent, then parks
        for (int i = 0; i < count; i++) {
            long deadline = random.nextInt(500_000_000);
            timer.schedule(() -> {
                ran.add(new Ran(deadline, clock.now.get()));
                all.countDown();
            }, deadline);
        }
        thread = new Thread(timer, "TokenBucketTimerTest");
        thread.setDaemon(true);
        thread.start();
        assertThat(all.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(ran).allSatisfy(r -> assertThat(r.at()).isGreaterThanOrEqualTo(r.deadline()));
        List<Long> order = ran.stream().map(Ran::deadline).toList();
        List<Long> sorted = new ArrayList<>(order);
        Collections.sort(sorted);
        assertThat(order).isEqualTo(sorted);
    }

    @Test
    void aCancelledTaskNeverRuns() throws InterruptedException {
        ManualClock clock = new ManualClock();
        start(clock, 0);
        AtomicBoolean cancelledRan = new AtomicBoolean();
        TokenBucketTimer.Entry cancelled = timer.schedule(() -> cancelledRan.set(true), 10);
        cancelled.cancel();
        clock.now.set(20);
        timer.wakeUp();
        CountDownLatch after = new CountDownLatch(1);
        timer.schedule(after::countDown, 20);
        assertThat(after.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(cancelledRan).isFalse();
    }

    @Test
    void aFailingTaskDoesNotStopTheOthers() throws InterruptedException {
        ManualClock clock = new ManualClock();
        start(clock, 0);
        timer.schedule(() -> {
            throw new IllegalStateException("expected by the test");
        }, 0);
        CountDownLatch after = new CountDownLatch(1);
        timer.schedule(after::countDown, 0);
        assertThat(after.await(10, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void aStoppedTimerRefusesTasks() throws InterruptedException {
        start(new ManualClock(), 0);
        timer.stop();
        thread.join(10_000);
        assertThat(thread.isAlive()).isFalse();
        assertThatThrownBy(() -> timer.schedule(() -> { }, 0)).isInstanceOf(RejectedExecutionException.class);
    }
}
