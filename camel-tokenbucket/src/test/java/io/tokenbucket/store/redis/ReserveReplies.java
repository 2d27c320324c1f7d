package io.tokenbucket.store.redis;

import java.util.ArrayList;
import java.util.List;

/**
 * {@code bucket.lua}'s {@code reserve} reply in the shape its other operations answer, for the differential tests
 * that compare replies field by field: {@link ScriptReply#reservedFields} numbers per reservation, then the script's
 * now and the clock after their work, become five per reservation {@code {granted, wait, remaining, position, now}},
 * then the clock after their work.
 */
final class ReserveReplies {

    private ReserveReplies() {
    }

    /**
     * {@code reply} of reservations on these numbers of candidates, five numbers each; the reply itself when it does
     * not have the shape of a reserve reply of those reservations (the comparison then shows it as it came).
     */
    static List<Long> fiveEach(List<Long> reply, int... candidates) {
        int size = 2;
        for (int c : candidates) {
            size += ScriptReply.reservedFields(c);
        }
        if (reply == null || reply.size() != size) {
            return reply;
        }
        Long now = reply.get(size - 2);
        List<Long> five = new ArrayList<>();
        int at = 0;
        for (int c : candidates) {
            five.addAll(reply.subList(at, at + 3));
            five.add(c > 1 ? reply.get(at + 3) : 1L);
            five.add(now);
            at += ScriptReply.reservedFields(c);
        }
        five.add(reply.get(size - 1));
        return five;
    }
}
