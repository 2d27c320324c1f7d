package io.tokenbucket.example.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link AlreadyWritten}: a redelivered result line is not appended twice. */
class AlreadyWrittenTest {

    @TempDir
    Path dir;

    @Test
    void aRedeliveredLineAlreadyAtTheEndOfItsFileIsNotWrittenAgain() throws Exception {
        String first = "{\"url\":\"http:\\/\\/127.0.0.1\\/page\\/1\",\"status\":200,\"deliveries\":1}\n";
        String second = "{\"url\":\"http:\\/\\/127.0.0.1\\/page\\/2\",\"status\":200,\"deliveries\":1}\n";
        String uri = "file:" + dir + "?fileName=results.jsonl&fileExist=Append";
        try (CamelContext context = new DefaultCamelContext()) {
            context.start();
            AlreadyWritten written = new AlreadyWritten(uri);
            // no file yet: write
            assertThat(written.matches(line(context, first, true))).isFalse();
            java.nio.file.Files.writeString(dir.resolve("results.jsonl"), first + second);
            // the writer died after appending the second line, before its commit: it comes again, redelivered
            assertThat(written.matches(line(context, second, true))).as("redelivered, the file's last line").isTrue();
            // a line that is not the last one, or not redelivered, is written (only the last can be uncommitted)
            assertThat(written.matches(line(context, first, true))).as("redelivered, not the last line").isFalse();
            assertThat(written.matches(line(context, second, false))).as("first delivery").isFalse();
            // not a file endpoint: nothing to compare with, written
            assertThat(new AlreadyWritten("log:results").matches(line(context, second, true))).isFalse();
        }
    }

    private static Exchange line(CamelContext context, String body, boolean redelivered) {
        Exchange exchange = new org.apache.camel.support.DefaultExchange(context);
        exchange.getMessage().setBody(body);
        exchange.getMessage().setHeader(AlreadyWritten.REDELIVERED, redelivered);
        return exchange;
    }
}
