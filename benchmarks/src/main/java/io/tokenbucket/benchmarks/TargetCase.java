package io.tokenbucket.benchmarks;

import java.util.List;

/**
 * One Redis case of the targets run ({@link TargetsRedis}): acquires in flight, on random keys or the hot key, quiet or
 * with a core busy, and the peers measured on it.
 */
record TargetCase(String name, int inFlight, boolean hot, boolean busy, List<String> peers) {

    /** The closed-loop driver's case: its name, acquires in flight, hot key or not. */
    ClosedLoop.Case driverCase() {
        return new ClosedLoop.Case(name, inFlight, hot);
    }
}
