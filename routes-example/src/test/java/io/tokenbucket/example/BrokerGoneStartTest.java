package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.tokenbucket.example.broker.BrokerUnreachable;
import io.tokenbucket.testsupport.jvm.ExampleJvm;
import io.tokenbucket.testsupport.net.Ports;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An instance started after the fleet's broker is gone, as an operator starts it ({@code java
 * io.tokenbucket.example.ExampleApp}, test-support's {@link ExampleJvm}): it ends after {@code example.brokerWait}
 * with one line that names the reason, the documented exit code, and no stack trace.
 */
class BrokerGoneStartTest {

    @TempDir
    Path dir;

    @Test
    void anInstanceWhoseBrokerIsGoneEndsWithOneLineAndItsExitCode() throws Exception {
        int port = Ports.free();
        try (ExampleJvm late = ExampleJvm.start("late", dir, System.getProperty("java.class.path"), Map.of(
                "example.broker", "tcp://127.0.0.1:" + port, "example.brokerWait", "1s",
                "example.proxies", "http://127.0.0.1:9 id=p1"))) {
            assertThat(late.awaitExit(Duration.ofSeconds(90))).as("exit code%s", late.logTail())
                    .isEqualTo(BrokerUnreachable.EXIT_CODE);
            String log = late.log();
            assertThat(log.lines().filter(l -> l.contains("was not reachable for")).toList()).as("%s", late.logTail())
                    .singleElement().asString()
                    .startsWith("The broker at tcp://127.0.0.1:" + port + " (example.broker) was not reachable for")
                    .contains("(example.brokerWait=1s): AMQ219007")
                    .endsWith("(exit code " + BrokerUnreachable.EXIT_CODE + ")");
            assertThat(log.lines().filter(l -> l.matches("\\s+at [\\w.$]+\\(.*") || l.contains("Exception")
                    || l.contains(" ERROR ")).toList()).as("stack traces and errors%s", late.logTail()).isEmpty();
        }
    }
}
