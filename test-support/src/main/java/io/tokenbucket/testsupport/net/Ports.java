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
 */
public final class Ports {

    private static final int FROM = 30_000;
    private static final int TO = 32_768;

    private Ports() {
    }

    /** A loopback port from 30000 to 32767 that a server could bind just now. */
    public static int free() {
        IOException last = null;
        for (int i = 0; i < 200; i++) {
            int port = ThreadLocalRandom.current().nextInt(FROM, TO);
            try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                return socket.getLocalPort();
            } catch (IOException e) {
                last = e;
            }
        }
        throw new UncheckedIOException("no free loopback port from " + FROM + " to " + (TO - 1) + " in 200 tries",
                last);
    }
}
