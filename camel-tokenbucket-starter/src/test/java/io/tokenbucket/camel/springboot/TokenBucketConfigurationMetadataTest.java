package io.tokenbucket.camel.springboot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
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
 * its classes) lists every component option of the component's JSON, with a description and the same default.
 */
class TokenBucketConfigurationMetadataTest {

    private static final String PREFIX = "camel.component.tokenbucket.";

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
            assertThat(String.valueOf(propertyDefault)).as(name + " default").isEqualTo(String.valueOf(componentDefault));
        }
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
