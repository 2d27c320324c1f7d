package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * The README's settings table shows the defaults that run: each row's default is the value of
 * {@code application.properties} (or, for the demo's own settings, the demo's in {@link ExampleApp#DEMO_SETTINGS};
 * for {@code example.pairMaxWait}, unset but {@link ExampleConfiguration#ADAPTIVE_PAIR_MAX_WAIT} with the adaptive
 * rate), its demo column what the demo overrides, and every setting that the code reads has its row.
 */
class ReadmeSettingsTest {

    private static final Path README = Path.of(System.getProperty("basedir", "."), "README.md");

    /** Settings that only the demo reads, with their defaults in the demo's code. */
    private static final Set<String> DEMO_ONLY = Set.of("example.demoHiddenLimit", "example.demoPages",
            "example.demoProxyLimit", "example.demoProxyMode");

    /** A row of the table: {@code | `example.x` | default | demo | meaning |}. */
    private static final Pattern ROW = Pattern.compile("^\\| `(example\\.\\w+)` \\| ([^|]*) \\| ([^|]*) \\|",
            Pattern.MULTILINE);

    private static final Pattern FIRST_CODE = Pattern.compile("`([^`]*)`");

    @Test
    void everyDefaultInTheTableIsTheOneThatRuns() throws IOException {
        Properties properties = properties();
        Map<String, String[]> rows = rows();
        assertThat(rows).as("rows of the README's settings table").isNotEmpty();
        for (Map.Entry<String, String[]> row : rows.entrySet()) {
            String key = row.getKey();
            String shown = value(row.getValue()[0]);
            String demo = value(row.getValue()[1]);
            String expected;
            if (DEMO_ONLY.contains(key)) {
                expected = ExampleApp.DEMO_SETTINGS.get(key);
            } else if (key.equals(ExampleConfiguration.PAIR_MAX_WAIT)) {
                expected = "unset";
                assertThat(row.getValue()[0]).as(key + " with the adaptive rate")
                        .contains("`" + ExampleConfiguration.ADAPTIVE_PAIR_MAX_WAIT + "`");
            } else {
                assertThat(properties).as("application.properties has " + key).containsKey(key);
                expected = properties.getProperty(key).strip();
                expected = expected.isEmpty() ? "empty" : expected;
            }
            assertThat(shown).as("README default of " + key).isEqualTo(expected);
            String demoExpected = DEMO_ONLY.contains(key) ? "" : ExampleApp.DEMO_SETTINGS.getOrDefault(key, "");
            assertThat(demo).as("README demo value of " + key).isEqualTo(demoExpected);
        }
    }

    /**
     * The fleet recipe's joining instances run with {@code example.demo=false}, so they get none of the demo's
     * overrides unless their command gives them: one without the demo's limits sends at its proxies' rate, takes the
     * hosts' 429s, and the shared adaptive rate slows the first instance down for it.
     */
    @Test
    void theFleetRecipesJoiningInstanceRunsWithTheDemosLimits() throws IOException {
        String readme = Files.readString(README);
        int fleet = readme.indexOf("## A fleet");
        assertThat(fleet).as("the README's fleet section").isPositive();
        int start = readme.indexOf("```", fleet);
        String block = readme.substring(start, readme.indexOf("```", start + 3));
        String joining = block.substring(block.indexOf("-Dexample.broker=tcp:"));
        for (String key : Set.of("example.adaptive", "example.pairLimit", "example.hostLimit")) {
            assertThat(joining).as("the joining instance's command in the README").contains(
                    "-D" + key + "=" + ExampleApp.DEMO_SETTINGS.get(key));
        }
    }

    @Test
    void everySettingTheCodeReadsHasItsRowAndNoRowIsStale() throws IOException {
        Set<String> read = new TreeSet<>();
        Pattern literal = Pattern.compile("\"(example\\.[a-zA-Z]+)\"|\\{\\{\\??(example\\.[a-zA-Z]+)}}");
        Path main = Path.of(System.getProperty("basedir", "."), "src", "main");
        try (Stream<Path> files = Files.walk(main)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java") || f.toString().endsWith(".yaml"))
                    .toList()) {
                Matcher m = literal.matcher(Files.readString(file));
                while (m.find()) {
                    read.add(m.group(1) != null ? m.group(1) : m.group(2));
                }
            }
        }
        for (Object key : properties().keySet()) {
            if (key.toString().startsWith("example.")) {
                read.add(key.toString());
            }
        }
        assertThat(new TreeSet<>(rows().keySet())).as("settings in the README's table").isEqualTo(read);
    }

    /** A cell's value: its first {@code `...`} when it starts with one, else its first word ("empty", "unset"). */
    private static String value(String cell) {
        String text = cell.strip();
        Matcher m = FIRST_CODE.matcher(text);
        if (text.startsWith("`") && m.find()) {
            return m.group(1);
        }
        return text.isEmpty() ? "" : text.split("\\s+")[0];
    }

    private static Map<String, String[]> rows() throws IOException {
        String text = Files.readString(README);
        Map<String, String[]> rows = new LinkedHashMap<>();
        Matcher m = ROW.matcher(text.substring(text.indexOf("## Settings")));
        while (m.find()) {
            assertThat(rows.put(m.group(1), new String[] {m.group(2), m.group(3)})).as("a second row of " + m.group(1))
                    .isNull();
        }
        return rows;
    }

    private static Properties properties() throws IOException {
        Properties properties = new Properties();
        try (InputStream in = ReadmeSettingsTest.class.getResourceAsStream("/application.properties")) {
            properties.load(in);
        }
        return properties;
    }
}
