package io.tokenbucket.store.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongConsumer;

import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;

/**
 * One call of {@code bucket.lua}'s {@code reserve} for reservations that go together ({@link ReservationLanes}
 * decides which and when): sends it, unless a member queued for the store timeout, and completes each member from
 * its own slice of the reply, as a call of its own would have completed.
 */
final class ReservationCalls {

    /**
     * Sends one call of the script's {@code reserve} with these keys and operands to {@code clock}'s server, failing
     * with a {@link TimeoutException} when it has not answered within the store timeout.
     */
    @FunctionalInterface
    interface Script {
        CompletableFuture<List<Long>> reserve(String[] redisKeys, List<String> operands, RedisClockOffset clock);
    }

    /**
     * One reservation waiting for its call: its Redis keys, the limits of its candidates, its part of the script's
     * ARGV, the lanes of its keys (bit {@code l} for lane {@code l}), when it arrived ({@link System#nanoTime()}) and
     * the stage its caller holds.
     */
    record Member(String[] redisKeys, List<Limits> candidates, List<String> args, int lanes, long arrivedNanos,
                  CompletableFuture<Outcome> result) {
    }

    /** A member's part of ARGV when it is the part of the member before: {@code bucket.lua}'s reserve reads it so. */
    static final String SAME_WORDS = "=";

    private final boolean batching;
    private final LongConsumer batchSizes;
    private final long timeoutNanos;
    private final RedisClocks clocks;
    private final Script script;

    /** See {@link ReservationLanes#ReservationLanes}, whose arguments these are. */
    ReservationCalls(boolean batching, LongConsumer batchSizes, long timeoutNanos, RedisClocks clocks, Script script) {
        this.batching = batching;
        this.batchSizes = batchSizes;
        this.timeoutNanos = timeoutNanos;
        this.clocks = clocks;
        this.script = script;
    }

    /**
     * Sends reservations as one call of the script's {@code reserve} (their keys in one hash slot on a cluster);
     * when it returns, runs {@code returned} (null: nothing), then completes each member from its slice of the reply.
     */
    void send(List<Member> batch, Runnable returned) {
        List<Member> call = unexpired(batch);
        if (call.isEmpty()) {
            if (returned != null) {
                returned.run();
            }
            return;
        }
        String redisKey = call.get(0).redisKeys()[0];
        long sentNanos = System.nanoTime();
        RedisClockOffset clock = null;
        CompletableFuture<List<Long>> reply;
        try {
            if (batching) {
                batchSizes.accept(call.size());
            }
            clock = clocks.of(redisKey);
            // one call of the script's reserve, its members in turn; timed as a call: a queued member has no timer
            // of its own (one per reservation cost more client CPU than the rest of its way through the store), and
            // one that queued too long is not sent (unexpired)
            List<String> keys = new ArrayList<>(call.size());
            List<String> operands = new ArrayList<>(call.size() * 5);
            List<String> before = null;
            for (Member m : call) {
                keys.addAll(List.of(m.redisKeys()));
                // the words of the member before again (one endpoint's members mostly share theirs): the script's
                // '=', which it need not receive and parse again
                if (m.args().equals(before)) {
                    operands.add(SAME_WORDS);
                } else {
                    operands.addAll(m.args());
                }
                before = m.args();
            }
            reply = script.reserve(keys.toArray(String[]::new), operands, clock);
        } catch (Throwable e) { // a call that cannot be sent fails its members, and its lanes go on: never a hang
            reply = CompletableFuture.failedFuture(e);
        }
        RedisClockOffset sentTo = clock;
        reply.whenComplete((raw, failure) -> {
            try {
                if (returned != null) {
                    returned.run();
                }
            } finally {
                answer(call, raw, failure, sentNanos, clocks.still(sentTo, redisKey));
            }
        });
    }

    /**
     * The members of a batch that have not queued for the store timeout; those that have fail with a
     * {@link TimeoutException}, unsent, as a call of their own would have by then. One queued behind a call that
     * takes the whole timeout still goes (it arrived after that call was sent), so no reservation waits for its
     * answer longer than twice the store timeout.
     */
    private List<Member> unexpired(List<Member> batch) {
        long now = System.nanoTime();
        List<Member> call = batch;
        for (int i = 0; i < batch.size(); i++) {
            Member m = batch.get(i);
            if (now - m.arrivedNanos() > timeoutNanos) {
                if (call == batch) {
                    call = new ArrayList<>(batch.subList(0, i));
                }
                m.result().completeExceptionally(new TimeoutException("Redis did not answer within the store"
                        + " timeout (" + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms): the reservation"
                        + " queued behind calls that took that long, and was not sent"));
            } else if (call != batch) {
                call.add(m);
            }
        }
        return call;
    }

    /**
     * Completes each member of a call: its own slice of the reply, checked as a reply of its own; a failed call,
     * or a reply of the wrong length, fails every member with that cause, each on its own stage. {@code clock}: the
     * estimate of the server that ran it, null when not known.
     *
     * <p>The reply ends with a second Redis {@code now}, read after the members' work: the clock estimate learns from
     * that one, since the first (each member's wait counts from it) is older than the reply by the whole call's
     * work, and an estimate learnt from it would map every slot of a batch late by that work. Each member's wait is
     * mapped onto the local clock when that member is completed, not once for the batch: completing a member runs
     * its caller's continuation on this thread, so the last of a few hundred is completed a good while after the
     * first, and a wait counted from the reply's arrival would end late by that while.
     */
    private void answer(List<Member> batch, List<Long> raw, Throwable failure, long sentNanos,
                        RedisClockOffset clock) {
        boolean alone = batch.size() == 1;
        int expected = 2; // each member's part, then the script's now and the clock after the members' work
        for (Member m : batch) {
            expected += ScriptReply.reservedFields(m.candidates().size());
        }
        Throwable cause = failure;
        // every entry is checked for its type (here the last two, each member's by ScriptReply.parseReserved): an
        // entry of another type would throw out of this completion and leave every member of the call pending for ever
        if (cause == null && (raw == null || raw.size() != expected
                || !(((List<?>) raw).get(expected - 2) instanceof Long)
                || !(((List<?>) raw).get(expected - 1) instanceof Long))) {
            cause = ScriptReply.notAnAnswer(raw);
        }
        if (cause != null) {
            Throwable unwrapped = BucketScript.unwrap(cause);
            batch.forEach(m -> m.result().completeExceptionally(unwrapped));
            return;
        }
        long receivedNanos = System.nanoTime();
        long nowMicros = raw.get(expected - 2);
        boolean sampled = false;
        for (int i = 0, at = 0; i < batch.size(); i++) {
            Member m = batch.get(i);
            int from = at;
            at += ScriptReply.reservedFields(m.candidates().size());
            ScriptReply reply;
            try {
                reply = ScriptReply.parseReserved(raw.subList(from, at), m.candidates(), nowMicros);
            } catch (IllegalStateException e) {
                m.result().completeExceptionally(e);
                continue;
            }
            if (clock != null && !sampled) {
                long endMicros = raw.get(expected - 1);
                if (endMicros >= reply.redisNowMicros()) { // else a reply the script does not give: not learnt from
                    // a batch's round trip includes its members' work: not the way there and back
                    clock.sample(sentNanos, receivedNanos, endMicros, alone);
                }
                sampled = true;
            }
            m.result().complete(reply.outcome(System.nanoTime(), clock));
        }
    }
}
