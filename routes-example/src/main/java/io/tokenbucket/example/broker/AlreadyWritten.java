package io.tokenbucket.example.broker;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;

import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.Predicate;
import org.apache.camel.component.file.FileEndpoint;

/**
 * Closes the one writer's window ({@link BrokerQueue}): a line the writer appended and then died before committing
 * is delivered to it again, marked redelivered, and would be appended twice. Since the writer takes one line at a
 * time and commits after each append, only the file's last line can be such a line: a redelivered line that equals
 * the end of its file, byte for byte, was written already and is skipped. Only for a {@code file:} endpoint with a
 * file name; any other endpoint keeps the window (a line may be written twice after a writer's crash).
 */
final class AlreadyWritten implements Predicate {

    /** The header camel-jms maps {@code JMSRedelivered} to. */
    static final String REDELIVERED = "JMSRedelivered";

    private final String uri;

    /** @param uri the endpoint the writer appends to ({@code example.results} or {@code example.deadLetter}) */
    AlreadyWritten(String uri) {
        this.uri = uri;
    }

    @Override
    public boolean matches(Exchange exchange) {
        if (!Boolean.TRUE.equals(exchange.getMessage().getHeader(REDELIVERED, Boolean.class))) {
            return false;
        }
        Endpoint endpoint = exchange.getContext().getEndpoint(uri);
        if (!(endpoint instanceof FileEndpoint file) || file.getFileName() == null) {
            return false;
        }
        String name = file.getFileName().evaluate(exchange, String.class);
        // the bytes camel-file writes for this body
        byte[] line = exchange.getContext().getTypeConverter().convertTo(byte[].class, exchange,
                exchange.getMessage().getBody());
        if (name == null || line == null || line.length == 0) {
            return false;
        }
        Path path = file.getFile().toPath().resolve(name);
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size < line.length) {
                return false;
            }
            ByteBuffer tail = ByteBuffer.allocate(line.length);
            while (tail.hasRemaining() && channel.read(tail, size - line.length + tail.position()) > 0) {
                // read to the end
            }
            return !tail.hasRemaining() && Arrays.equals(tail.array(), line);
        } catch (IOException e) {
            return false; // no file yet, or unreadable: write it
        }
    }
}
