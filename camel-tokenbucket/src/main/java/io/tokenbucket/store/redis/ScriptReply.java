package io.tokenbucket.store.redis;

import java.util.List;

import io.tokenbucket.math.Adaptive;
import io.tokenbucket.math.Limits;
import io.tokenbucket.math.Outcome;

/**
 * The reply of {@code bucket.lua}, parsed once and checked field by field: a reply is data from the network, so a
 * number out of the script's range (a wait that would overflow, a negative count, a key that was not offered)
 * fails the call instead of deciding anything.
 *
 * @param granted        true when the tokens are reserved, false when refused (nothing consumed)
 * @param waitMicros     microseconds from {@code redisNowMicros} until the tokens are there, 0 to
 *                       {@link #MAX_WAIT_MICROS}
 * @param remaining      whole tokens left on the chosen key (on several keys: the fewest of the keys charged), 0 to
 *                       the chosen key's smallest capacity
 * @param chosenIndex    the position of the chosen key among the candidates, from 0
 * @param redisNowMicros the Redis clock when the script ran, microseconds since the epoch, above 0
 * @param slotless       true when refused because an in-flight limit had every slot held (the script's -1)
 */
record ScriptReply(boolean granted, long waitMicros, long remaining, int chosenIndex, long redisNowMicros,
                   boolean slotless) {

    /** The largest wait a reply may carry, in microseconds: what the script can compute exactly, 2^53. */
    static final long MAX_WAIT_MICROS = 1L << 53;

    /**
     * The number of fields of the reply of an operation other than {@code reserve}:
     * {@code {granted -1|0|1, wait µs, remaining, position from 1, now µs}}.
     */
    static final int FIELDS = 5;

    /**
     * Parses a reply of the script called on {@code candidates.size()} keys with these limits.
     *
     * @throws IllegalStateException naming the reply when it is not one the script gives
     */
    static ScriptReply parse(List<Long> reply, List<Limits> candidates) {
        ScriptReply parsed = integers(reply, FIELDS)
                ? of(reply.get(0), reply.get(1), reply.get(2), reply.get(3), reply.get(4), candidates) : null;
        if (parsed == null) {
            throw notAnAnswer(reply);
        }
        return parsed;
    }

    /**
     * The number of fields of one reservation's part of a {@code reserve} reply, on {@code candidates} candidates:
     * {@code {granted -1|0|1, wait µs, remaining}}, then its position from 1 only when it had more than one candidate
     * (the script sends no number the caller knows: each costs Redis a share of a reservation's work). The parts are
     * followed by the script's now in µs, once for all of them, and the Redis clock read after their work.
     */
    static int reservedFields(int candidates) {
        return candidates > 1 ? 4 : 3;
    }

    /**
     * Parses one reservation's part of a {@code reserve} reply ({@link #reservedFields}) on {@code candidates.size()}
     * keys with these limits, its wait counting from the reply's {@code nowMicros}.
     *
     * @throws IllegalStateException naming the part when it is not one the script gives
     */
    static ScriptReply parseReserved(List<Long> part, List<Limits> candidates, long nowMicros) {
        int fields = reservedFields(candidates.size());
        ScriptReply parsed = integers(part, fields)
                ? of(part.get(0), part.get(1), part.get(2), fields == 4 ? part.get(3) : 1, nowMicros, candidates) : null;
        if (parsed == null) {
            throw notAnAnswer(part);
        }
        return parsed;
    }

    /** Whether {@code reply} holds exactly {@code fields} integers. */
    private static boolean integers(List<Long> reply, int fields) {
        boolean valid = reply != null && reply.size() == fields;
        for (int i = 0; valid && i < fields; i++) {
            // a server that is not Redis (or a proxy) may put strings or lists where the script puts integers
            valid = ((List<?>) reply).get(i) instanceof Long;
        }
        return valid;
    }

    /** The reply of these numbers, or null when one is out of the script's range. */
    private static ScriptReply of(long granted, long waitMicros, long remaining, long position, long nowMicros,
                                  List<Limits> candidates) {
        boolean valid = (granted == -1 || granted == 0 || granted == 1) && waitMicros >= 0
                && waitMicros <= MAX_WAIT_MICROS && position >= 1 && position <= candidates.size() && remaining >= 0
                && remaining <= candidates.get((int) position - 1).capacity() && nowMicros > 0;
        return valid ? new ScriptReply(granted == 1, waitMicros, remaining, (int) position - 1, nowMicros,
                granted == -1) : null;
    }

    /** The failure of a reply that is not one the script gives, naming it (at most 200 characters of it). */
    static IllegalStateException notAnAnswer(Object reply) {
        String shown = String.valueOf(reply);
        return new IllegalStateException("Redis answered the bucket script with " + (shown.length() > 200
                ? shown.substring(0, 200) + "..." : shown) + ", which is not an answer the script gives; nothing"
                + " was decided on it");
    }

    /**
     * This reservation for a caller that handled the reply at {@code receivedNanos} ({@link System#nanoTime()}): its
     * wait counts from the Redis clock's {@code now} and is shortened by the time the reply took to be handled, as far
     * as {@code clock} (the estimate of the server that ran the call; null: not known, the wait is then Redis's) can
     * tell without ever ending before the slot; never lengthened.
     */
    Outcome outcome(long receivedNanos, RedisClockOffset clock) {
        long waitNanos = waitMicros * 1000;
        if (clock != null && waitNanos > 0) {
            waitNanos = localWait(waitNanos, clock.localNanos(redisNowMicros + waitMicros), receivedNanos);
        }
        return new Outcome(granted, chosenIndex, waitNanos, remaining, Adaptive.PPM, false, false, slotless,
                receivedNanos);
    }

    /**
     * The wait from {@code nowNanos} until {@code slotNanos} (the slot on the local clock), but never longer than
     * the wait Redis gave (counted from Redis's now, that one ends late by the reply's delay, never early).
     */
    static long localWait(long redisWaitNanos, long slotNanos, long nowNanos) {
        if (slotNanos == Long.MAX_VALUE) {
            return redisWaitNanos;
        }
        return Math.min(redisWaitNanos, Math.max(0, slotNanos - nowNanos));
    }
}
