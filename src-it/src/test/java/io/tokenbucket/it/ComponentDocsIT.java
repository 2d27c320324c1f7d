package io.tokenbucket.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.camel.tooling.model.BaseOptionModel;
import org.apache.camel.tooling.model.ComponentModel;
import org.apache.camel.tooling.model.JsonMapper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hand-written tables of {@code tokenbucket-component.adoc} say what the built jar's component JSON says.
 *
 * <p>Camel's own build rewrites these tables from the JSON (its doc updater, between the {@code // ... options:
 * START/END} markers); this build does not run it, so this test is what keeps the page and the annotations in
 * step: every option and header of the JSON has a row with the same description, default and type, and the
 * tables have no other rows.
 */
class ComponentDocsIT {

    private static final String OUT_OF_STEP = "the %s table of tokenbucket-component.adoc against the component"
            + " JSON in the jar, in order (after changing the annotations, update the table)";

    private static String adoc;
    private static ComponentModel model;

    @BeforeAll
    static void readDocsAndJson() throws IOException {
        Path moduleDir = Path.of(System.getProperty("basedir", "."));
        adoc = Files.readString(moduleDir.resolve("../camel-tokenbucket/src/main/docs/tokenbucket-component.adoc"));
        model = JsonMapper.generateComponentModel(BuiltComponent.json());
    }

    @Test
    void headerAttributesAreTheOnesCamelsDocUpdaterWouldWrite() {
        String title = "= " + model.getTitle() + " Component\n";
        List<String> attributes = List.of(
                ":doctitle: " + model.getTitle(),
                ":shortname: " + model.getScheme(),
                ":artifactid: " + model.getArtifactId(),
                ":description: " + model.getDescription(),
                ":since: " + model.getFirstVersionShort(),
                ":supportlevel: " + model.getSupportLevel(),
                ":tabs-sync-option:",
                ":component-header: " + (model.isProducerOnly() ? "Only producer is supported" : "?"));

        assertThat(adoc).startsWith(title + String.join("\n", attributes) + "\n\n");
    }

    @Test
    void componentOptionsTableHasARowForEveryComponentOption() {
        String section = between("// component options: START", "// component options: END");
        Map<String, Row> rows = rows(section);

        assertThat(rows.keySet()).as(OUT_OF_STEP, "component options")
                .containsExactlyElementsOf(names(model.getComponentOptions()));
        assertThat(section).contains("supports " + model.getComponentOptions().size() + " options");
        model.getComponentOptions().forEach(option -> assertRow(rows.get(option.getName()), option));
    }

    @Test
    void endpointOptionsTablesHaveARowForEveryPathAndQueryParameter() {
        String section = between("// endpoint options: START", "// endpoint options: END");
        String path = section.substring(0, section.indexOf("==== Query Parameters"));
        String query = section.substring(section.indexOf("==== Query Parameters"));

        assertThat(rows(path).keySet()).as(OUT_OF_STEP, "path parameters")
                .containsExactlyElementsOf(names(model.getEndpointPathOptions()));
        assertThat(rows(query).keySet()).as(OUT_OF_STEP, "query parameters")
                .containsExactlyElementsOf(names(model.getEndpointParameterOptions()));
        assertThat(section).contains(model.getSyntax());
        assertThat(path).contains("Path Parameters (" + model.getEndpointPathOptions().size() + " parameters)");
        assertThat(query).contains("Query Parameters (" + model.getEndpointParameterOptions().size() + " parameters)");
        model.getEndpointPathOptions().forEach(option -> assertRow(rows(path).get(option.getName()), option));
        model.getEndpointParameterOptions().forEach(option -> assertRow(rows(query).get(option.getName()), option));
    }

    @Test
    void headersTableHasARowForEveryHeader() {
        String section = between("// component headers: START", "// component headers: END");
        Map<String, Row> rows = rows(section);

        assertThat(rows.keySet()).as(OUT_OF_STEP, "message headers")
                .containsExactlyElementsOf(names(model.getEndpointHeaders()));
        assertThat(section).contains("supports " + model.getEndpointHeaders().size() + " message headers");
        model.getEndpointHeaders().forEach(header -> {
            Row row = rows.get(header.getName());
            String constant = header.getConstantName().substring(header.getConstantName().indexOf('#') + 1);
            assertThat(row.name()).as(header.getName()).contains("Constant: `" + constant + "`");
            assertThat(row.description()).as(header.getName()).isEqualTo(header.getDescription());
            assertThat(row.type()).as(header.getName()).isEqualTo(header.getJavaType());
        });
    }

    private static void assertRow(Row row, BaseOptionModel option) {
        String name = option.getName();
        String description = (option.isRequired() ? "*Required* " : "") + option.getDescription()
                + (option.getEnums() == null || option.getEnums().isEmpty() ? ""
                        : " Enum values: " + String.join(", ", option.getEnums()) + ".");
        Object defaultValue = option.getDefaultValue();
        String javaType = option.getJavaType();

        assertThat(row).as("row of %s", name).isNotNull();
        assertThat(row.name()).as("group of %s", name).contains("(" + option.getGroup() + ")");
        assertThat(row.description()).as("description of %s", name).isEqualTo(description);
        assertThat(row.defaultValue()).as("default of %s", name)
                .isEqualTo(defaultValue == null ? "" : String.valueOf(defaultValue));
        assertThat(row.type()).as("type of %s", name).isEqualTo(javaType.substring(javaType.lastIndexOf('.') + 1));
    }

    private static String between(String start, String end) {
        assertThat(adoc).contains(start).contains(end);
        return adoc.substring(adoc.indexOf(start) + start.length(), adoc.indexOf(end));
    }

    /** The rows of the option tables in {@code text}: {@code | *name* (group) | description | default | type}. */
    private static Map<String, Row> rows(String text) {
        Map<String, Row> rows = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            if (!line.startsWith("| *")) {
                continue;
            }
            String[] cells = line.substring(2).split(" \\| ", -1);
            assertThat(cells).as(line).hasSize(4);
            String name = cells[0].substring(1, cells[0].indexOf('*', 1));
            rows.put(name, new Row(cells[0].trim(), cells[1].trim(), cells[2].trim(), cells[3].trim()));
        }
        return rows;
    }

    private static List<String> names(List<? extends BaseOptionModel> options) {
        return options.stream().map(BaseOptionModel::getName).toList();
    }

    /** One table row; {@code name} is the whole first cell (name, group and, for headers, the constant). */
    private record Row(String name, String description, String defaultValue, String type) {
    }
}
