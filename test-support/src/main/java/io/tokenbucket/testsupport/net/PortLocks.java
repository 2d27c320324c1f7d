package io.tokenbucket.testsupport.net;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;

/**
 * Ports held across the test JVMs of this machine: a JVM that chose a port for a server of its own holds a lock on
 * the file {@code java.io.tmpdir/tokenbucket-ports/<port>} until it lets the port go, and every other JVM passes
 * over a port it cannot lock. A port probed free is not enough when several JVMs start servers at once (the modules
 * of a parallel build, Surefire's forks): a test that stops its server and starts it again on the same port leaves
 * the port unbound in between, where another JVM's probe would find it free. The operating system drops a JVM's
 * locks when it exits, {@code SIGKILL} included; the empty files stay.
 */
public final class PortLocks {

    private static final Path DIR = Path.of(System.getProperty("java.io.tmpdir"), "tokenbucket-ports");
    private static final Map<Integer, FileLock> HELD = new HashMap<>();

    private PortLocks() {
    }

    /**
     * Takes the port for this JVM unless another JVM holds it.
     *
     * @return whether this JVM now holds it (false also when this JVM held it already)
     */
    public static synchronized boolean hold(int port) {
        if (HELD.containsKey(port)) {
            return false;
        }
        FileChannel channel = null;
        try {
            Files.createDirectories(DIR);
            channel = FileChannel.open(DIR.resolve(Integer.toString(port)), StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE);
            FileLock lock = channel.tryLock();
            if (lock == null) {
                channel.close();
                return false;
            }
            HELD.put(port, lock);
            return true;
        } catch (IOException | OverlappingFileLockException e) {
            closeQuietly(channel);
            return false;
        }
    }

    /** Lets the port go (nothing when this JVM does not hold it). */
    public static synchronized void release(int port) {
        FileLock lock = HELD.remove(port);
        if (lock != null) {
            closeQuietly(lock.channel()); // releases the lock
        }
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException e) {
                // the lock goes with the JVM at the latest
            }
        }
    }
}
