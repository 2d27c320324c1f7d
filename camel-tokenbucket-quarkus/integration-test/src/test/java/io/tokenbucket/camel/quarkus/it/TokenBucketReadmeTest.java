package io.tokenbucket.camel.quarkus.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.tokenbucket.camel.TokenBucketComponent;
import org.junit.jupiter.api.Test;

/**
 * The extension's README says what the build uses: its BOM versions are the ones these modules are built and tested
 * with, and every {@code camel.component.tokenbucket.*} key it shows is an option of the component.
 */
class TokenBucketReadmeTest {

    private static final Path README = Path.of("..", "README.md");

    @Test
    void theBomVersionsAreTheOnesBuiltAndTested() throws IOException {
        String readme = Files.readString(README);
        assertThat(readme).contains("<artifactId>quarkus-bom</artifactId>\n      <version>"
                + System.getProperty("tokenbucket.quarkus.version") + "</version>");
        assertThat(readme).contains("<artifactId>camel-quarkus-bom</artifactId>\n      <version>"
                + System.getProperty("tokenbucket.camel-quarkus.version") + "</version>");
    }

    @Test
    void everyPropertyShownIsAnOptionOfTheComponent() throws IOException {
        String catalog;
        try (InputStream in = TokenBucketComponent.class.getResourceAsStream(
                "/META-INF/io/tokenbucket/camel/tokenbucket.json")) {
            catalog = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        List<String> keys = new ArrayList<>();
        Matcher m = Pattern.compile("camel\\.component\\.tokenbucket\\.([a-z-]+)=").matcher(Files.readString(README));
        while (m.find()) {
            keys.add(m.group(1));
        }
        assertThat(keys).isNotEmpty().allSatisfy(key -> assertThat(catalog).as(key)
                .contains("\"" + camelCase(key) + "\": { \"index\""));
    }

    /** {@code refill-period} as the catalog names it, {@code refillPeriod}. */
    private static String camelCase(String kebab) {
        StringBuilder out = new StringBuilder();
        boolean upper = false;
        for (char c : kebab.toCharArray()) {
            if (c == '-') {
                upper = true;
            } else {
                out.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return out.toString();
    }
}
