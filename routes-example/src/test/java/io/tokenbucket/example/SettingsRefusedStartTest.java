package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.tokenbucket.testsupport.jvm.ExampleJvm;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An instance started as an operator starts it, with a file it cannot read: the proxy file (read while Camel
 * starts) or the URL file (read once it has started). It ends with one line that names the setting and its value,
 * exit code {@value SettingsRefused#EXIT_CODE}, and no stack trace.
 */
class SettingsRefusedStartTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"example.proxyFile", "example.urlFile"})
    void aFileItCannotReadEndsTheInstanceWithOneLineNamingTheSetting(String setting) throws Exception {
        Path proxies = Files.writeString(dir.resolve("proxies.txt"), "http://127.0.0.1:9 id=p1\n");
        Path urls = Files.writeString(dir.resolve("urls.txt"), "http://127.0.0.1:9/a\n");
        Path missing = dir.resolve("no such dir").resolve("missing.txt");
        Map<String, String> settings = Map.of("example.proxyFile",
                (setting.equals("example.proxyFile") ? missing : proxies).toString(),
                "example.urlFile", (setting.equals("example.urlFile") ? missing : urls).toString());
        try (ExampleJvm jvm = ExampleJvm.start("refused", dir, System.getProperty("java.class.path"), settings)) {
            assertThat(jvm.awaitExit(Duration.ofSeconds(90))).as("exit code%s", jvm.logTail())
                    .isEqualTo(SettingsRefused.EXIT_CODE);
            String log = jvm.log();
            assertThat(log.lines().filter(l -> l.contains(setting + "=")).toList()).as("%s", jvm.logTail())
                    .singleElement().asString()
                    .contains(setting + "=" + missing)
                    .contains("NoSuchFileException")
                    .endsWith("(exit code " + SettingsRefused.EXIT_CODE + ")");
            assertThat(log.lines().filter(l -> l.matches("\\s+at [\\w.$]+\\(.*") || l.contains(" ERROR ")).toList())
                    .as("stack traces and errors%s", jvm.logTail()).isEmpty();
        }
    }
}
