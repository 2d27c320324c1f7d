package io.tokenbucket.benchmarks;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.tokenbucket.benchmarks.ClosedLoop.Run;

/**
 * Reads Redis's {@code INFO commandstats} (each command's calls and server microseconds since the last
 * {@code CONFIG RESETSTAT}) for the Redis drivers: a command's figures, the microseconds of the commands the clients
 * sent, and every command's calls and microseconds per acquire.
 */
final class Commandstats {

    private static final Pattern COMMANDSTAT = Pattern.compile("cmdstat_(\\w+):calls=(\\d+),usec=(\\d+)");

    private Commandstats() {
    }

    /** One command's {calls, microseconds} in {@code INFO commandstats}; {0, 0} when it did not run. */
    static long[] stat(String commandstats, String command) {
        Matcher m = COMMANDSTAT.matcher(commandstats);
        while (m.find()) {
            if (m.group(1).equals(command)) {
                return new long[] {Long.parseLong(m.group(2)), Long.parseLong(m.group(3))};
            }
        }
        return new long[] {0, 0};
    }

    /**
     * Redis's microseconds in the commands the clients sent: the scripts' (which include the commands they call)
     * and the plain commands' calls beyond those the scripts made. Bucket4j's script reads its key with one
     * {@code GET} per call, so its own {@code GET}s are {@code get} calls less {@code eval} calls; ours and the GCRA
     * script send only scripts.
     */
    static double topLevelMicros(String commandstats) {
        long[] eval = stat(commandstats, "eval");
        long[] evalsha = stat(commandstats, "evalsha");
        long[] get = stat(commandstats, "get");
        double scripts = eval[1] + evalsha[1];
        long scriptCalls = eval[0] + evalsha[0];
        // GETs beyond one per script call were sent by the client (Bucket4j); their share of the GET time
        long clientGets = Math.max(0, get[0] - scriptCalls);
        double gets = get[0] == 0 ? 0 : get[1] * (double) clientGets / get[0];
        return scripts + gets;
    }

    /**
     * Redis's own count of the commands run during the measured seconds (reset at their start), per acquire:
     * calls and server microseconds of each command. Commands run inside a script are counted too (and their
     * time is also inside the script's), so the {@code evalsha}/{@code eval} lines carry the whole script cost.
     */
    static String perAcquire(String commandstats, Run r) {
        long acquires = Math.max(1, r.granted() + r.rejected() + r.timeouts() + r.otherErrors());
        StringBuilder out = new StringBuilder();
        Matcher m = COMMANDSTAT.matcher(commandstats);
        while (m.find()) {
            if (m.group(1).equals("config")) {
                continue;
            }
            out.append(String.format("%s %.2f calls %.1f µs; ", m.group(1), Long.parseLong(m.group(2)) / (double) acquires,
                    Long.parseLong(m.group(3)) / (double) acquires));
        }
        return out.toString();
    }
}
