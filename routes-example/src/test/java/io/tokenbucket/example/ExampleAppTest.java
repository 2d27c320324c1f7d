package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.apache.camel.main.Main;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The whole demo as {@code exec:java} runs it, made small: it must end by itself and print the table. */
class ExampleAppTest {

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    @Timeout(30) // the run must end by itself; this only turns a hang into a failure
    void runsUntilEveryUrlPassedThenPrintsTheTable(String dsl, @TempDir Path dir) throws Exception {
        Path urls = Files.writeString(dir.resolve("urls.txt"),
                "# six URLs, two per proxy\n" + "https://a.test/1\nhttps://a.test/2\nhttps://a.test/3\n"
                        + "\nhttps://a.test/4\nhttps://a.test/5\nhttps://a.test/6\n");
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        DemoRun run = new DemoRun(new PrintStream(printed, true, StandardCharsets.UTF_8));
        Main main = ExampleApp.createMain(run);
        main.addOverrideProperty("example.dsl", dsl);
        main.addOverrideProperty("example.urlFile", urls.toString());
        main.addOverrideProperty("example.capacity", "1");
        main.addOverrideProperty("example.refillPeriod", "200ms");
        main.addOverrideProperty("example.results", "log:results?level=DEBUG");

        int exitCode = main.run(new String[0]); // returns only once Main completed

        assertThat(exitCode).isZero();
        assertThat(run.sent()).isEqualTo(6);
        assertThat(run.failed()).isZero();
        assertThat(run.stats().counts()).containsExactlyInAnyOrderEntriesOf(Map.of("p1", 2L, "p2", 2L, "p3", 2L));
        String table = printed.toString(StandardCharsets.UTF_8);
        assertThat(table).contains("mean wait ms").containsPattern("(?m)^all\\s+6\\s").contains("6 passed in ");
    }

    @Test
    @Timeout(30)
    void anUnreadableUrlFileEndsTheRunWithTheReason(@TempDir Path dir) throws Exception {
        DemoRun run = new DemoRun(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        Main main = ExampleApp.createMain(run);
        main.addOverrideProperty("example.urlFile", dir.resolve("missing.txt").toString());

        main.run(new String[0]); // must return although nothing was sent: Camel stops the normal way

        assertThat(run.problem()).hasMessageContaining("example.urlFile=").hasMessageContaining("missing.txt");
        assertThat(run.sent()).isZero();
    }
}
