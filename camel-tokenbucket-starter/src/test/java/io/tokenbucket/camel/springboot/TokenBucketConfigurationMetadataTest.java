package io.tokenbucket.camel.springboot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.apache.camel.util.StringHelper;
import org.apache.camel.util.json.JsonArray;
import org.apache.camel.util.json.JsonObject;
import org.apache.camel.util.json.Jsoner;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Spring Boot configuration metadata this module builds (META-INF/spring-configuration-metadata.json, next to
 * its classes) lists every component option of the component's JSON, with its description, default, type and allowed
 * values.
 */
class TokenBucketConfigurationMetadataTest {

    private static final String PREFIX = "camel.component.tokenbucket.";

    private static JsonObject springMetadata;
    private static Map<String, JsonObject> metadata;
    private static JsonObject componentOptions;

    @BeforeAll
    static void read() throws Exception {
        // only this module's classes (target/classes or the built jar), not the metadata of Spring Boot's jars
        URL classes = TokenBucketComponentConfiguration.class.getProtectionDomain().getCodeSource().getLocation();
        JsonObject json;
        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes}, null)) {
            json = readJson(loader, "META-INF/spring-configuration-metadata.json");
        }
        springMetadata = json;
        metadata = new HashMap<>();
        for (Object property : (JsonArray) json.get("properties")) {
            JsonObject p = (JsonObject) property;
            metadata.put(p.getString("name"), p);
        }
        componentOptions = (JsonObject) readJson(TokenBucketConfigurationMetadataTest.class.getClassLoader(),
                "META-INF/io/tokenbucket/camel/tokenbucket.json").get("componentProperties");
    }

    @Test
    void capacityIsListedWithItsDefaultAndDescription() {
        JsonObject capacity = metadata.get(PREFIX + "capacity");
        assertThat(capacity).isNotNull();
        assertThat(capacity.getString("type")).isEqualTo("java.lang.Long");
        assertThat(capacity.get("defaultValue").toString()).isEqualTo("1");
        assertThat(capacity.getString("description")).startsWith("The bucket size in tokens");
    }

    @Test
    void everyComponentOptionIsAPropertyWithItsDescriptionAndDefault() {
        assertThat(componentOptions).isNotEmpty();
        for (Map.Entry<String, Object> option : componentOptions.entrySet()) {
            String name = PREFIX + StringHelper.camelCaseToDash(option.getKey());
            JsonObject property = metadata.get(name);
            assertThat(property).as(name).isNotNull();
            assertThat(property.getString("description")).as(name + " description").isNotBlank();
            Object componentDefault = ((JsonObject) option.getValue()).get("defaultValue");
            Object propertyDefault = property.get("defaultValue");
            if (componentDefault instanceof Number c && propertyDefault instanceof Number p) {
                // Spring's metadata writer drops a whole double's ".0" (adaptiveStart's 1.0 is written 1): same value
                assertThat(new BigDecimal(p.toString())).as(name + " default").isEqualByComparingTo(c.toString());
            } else {
                assertThat(String.valueOf(propertyDefault)).as(name + " default")
                        .isEqualTo(String.valueOf(componentDefault));
            }
        }
    }

    /** Generated from the component's JSON: its text, then what the starter adds (units, bean references). */
    @Test
    void everyDescriptionIsTheComponentsOwn() {
        for (Map.Entry<String, Object> option : componentOptions.entrySet()) {
            String name = PREFIX + StringHelper.camelCaseToDash(option.getKey());
            String description = ((JsonObject) option.getValue()).getString("description");
            assertThat(metadata.get(name).getString("description")).as(name)
                    .startsWith(description.endsWith(".") ? description : description + ".");
        }
    }

    @Test
    void everyPropertyHasTheTypeOfItsOption() {
        for (Map.Entry<String, Object> option : componentOptions.entrySet()) {
            JsonObject json = (JsonObject) option.getValue();
            String name = PREFIX + StringHelper.camelCaseToDash(option.getKey());
            // a secret's text (redis-uri) is held masked, as the Spring binder reads it from text
            String expected = Boolean.TRUE.equals(json.get("secret"))
                    ? TokenBucketSecret.class.getName() : switch (json.getString("type")) {
                // text, read by the component's own reader
                case "duration", "string" -> "java.lang.String";
                case "integer" -> Set.of("int", "java.lang.Integer").contains(json.getString("javaType"))
                        ? "java.lang.Integer" : "java.lang.Long";
                case "boolean" -> "java.lang.Boolean";
                // a fraction (the adaptive rate's options): boxed, as the generator writes every primitive
                case "number" -> "java.lang.Double";
                default -> json.getString("javaType");
            };
            assertThat(metadata.get(name).getString("type")).as(name).isEqualTo(expected);
        }
    }

    @Test
    void theDurationsSayTheirUnits() {
        assertThat(metadata.get(PREFIX + "store-timeout").getString("description"))
                .contains("Camel duration text").contains("milliseconds").contains("ISO-8601");
    }

    @Test
    void everyEnumOptionHintsItsAllowedValues() {
        Map<String, Set<String>> hints = new HashMap<>();
        for (Object hint : (JsonArray) springMetadata.get("hints")) {
            Set<String> values = new TreeSet<>();
            for (Object value : (JsonArray) ((JsonObject) hint).get("values")) {
                values.add(((JsonObject) value).getString("value"));
            }
            hints.put(((JsonObject) hint).getString("name"), values);
        }
        Map<String, Set<String>> expected = new HashMap<>();
        for (Map.Entry<String, Object> option : componentOptions.entrySet()) {
            JsonArray values = (JsonArray) ((JsonObject) option.getValue()).get("enum");
            if (values != null) {
                Set<String> allowed = new TreeSet<>();
                values.forEach(v -> allowed.add((String) v));
                expected.put(PREFIX + StringHelper.camelCaseToDash(option.getKey()), allowed);
            }
        }
        assertThat(expected).containsKeys(PREFIX + "mode", PREFIX + "store", PREFIX + "on-store-error");
        assertThat(hints).isEqualTo(expected);
    }

    @Test
    void everyPropertyIsAComponentOptionOrASwitch() {
        Set<String> expected = new TreeSet<>(Set.of(PREFIX + "enabled", PREFIX + "customizer.enabled"));
        componentOptions.keySet().forEach(option -> expected.add(PREFIX + StringHelper.camelCaseToDash(option)));
        assertThat(new TreeSet<>(metadata.keySet())).isEqualTo(expected);
    }

    @Test
    void theSwitchesDefaultToTrue() {
        assertThat(metadata.get(PREFIX + "enabled").get("defaultValue")).isEqualTo(true);
        assertThat(metadata.get(PREFIX + "customizer.enabled").get("defaultValue")).isEqualTo(true);
    }

    private static JsonObject readJson(ClassLoader loader, String resource) throws IOException {
        try (InputStream in = loader.getResourceAsStream(resource)) {
            assertThat(in).as(resource).isNotNull();
            return (JsonObject) Jsoner.deserialize(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (org.apache.camel.util.json.DeserializationException e) {
            throw new IOException(resource, e);
        }
    }
}
