package io.tokenbucket.testsupport.net;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Loopback ports for servers a test starts by port number (an embedded broker, a child JVM's listener): a port that
 * is free now, from below Linux's ephemeral range (32768 and up), so that between this answer and the server's bind
 * the kernel does not hand it to some outgoing connection, as it may a port {@code new ServerSocket(0)} chose.
 * From 30000: 10000 to 29999 are {@code RedisServers}' (its servers, then their cluster buses at port + 10000).
 *
 * <p>Surefire may run a module's tests in several JVMs at once ({@code forkCount}); each JVM then draws from its own
 * quarter of the range, chosen by the system property {@value #FORK_PROPERTY} (the build sets it to Surefire's
 * {@code surefire.forkNumber}), so that two JVMs rarely probe the same port; a port this answers is also held
 * against every other test JVM of the machine until this one exits ({@link PortLocks}), so that two never bind it.
 */
public final class Ports {

    /** System property with the number (1, 2, ...) of the test JVM among those Surefire runs at once. */
    public static final String FORK_PROPERTY = "tokenbucket.testFork";

    private static final int FROM = 30_000;
    private static final int TO = 32_768;
    private static final int SLICES = 4;

    private Ports() {
    }

    /** A loopback port from 30000 to 32767 (this JVM's quarter of it, in a fork) that a server could bind just now. */
    public static int free() {
        int from = FROM;
        int to = TO;
        String fork = System.getProperty(FORK_PROPERTY, "");
        if (fork.matches("\\d+")) {
            int width = (TO - FROM) / SLICES;
            from = FROM + (Integer.parseInt(fork) - 1 + SLICES) % SLICES * width;
            to = from + width;
        }
        IOException last = null;
        for (int i = 0; i < 200; i++) {
            int port = ThreadLocalRandom.current().nextInt(from, to);
            if (!PortLocks.hold(port)) { // another test JVM chose it (held until this JVM exits: a test uses few)
                continue;
            }
            try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                return socket.getLocalPort();
            } catch (IOException e) {
                last = e;
            }
        }
        throw new UncheckedIOException("no free loopback port from " + from + " to " + (to - 1) + " in 200 tries",
                last);
    }
}
