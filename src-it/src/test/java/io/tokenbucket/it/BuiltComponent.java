package io.tokenbucket.it;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;

import io.tokenbucket.camel.TokenBucketComponent;

/** Where the camel-tokenbucket classes on the test classpath come from, and what that jar holds. */
final class BuiltComponent {

    /** The component JSON inside the jar. */
    static final String JSON_ENTRY = "META-INF/io/tokenbucket/camel/tokenbucket.json";

    private BuiltComponent() {
    }

    /** The jar (or, outside {@code mvn verify}, the directory) the component class was loaded from. */
    static Path jar() {
        return locationOf(TokenBucketComponent.class);
    }

    /** The jar or directory {@code type} was loaded from. */
    static Path locationOf(Class<?> type) {
        try {
            return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The component JSON, read from the jar itself. */
    static String json() {
        try (JarFile file = new JarFile(jar().toFile())) {
            return read(file, JSON_ENTRY);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The text of entry {@code name} of {@code file}.
     *
     * @throws IllegalStateException when the jar has no such entry
     */
    static String read(JarFile file, String name) throws IOException {
        ZipEntry entry = file.getEntry(name);
        if (entry == null) {
            throw new IllegalStateException(file.getName() + " has no entry " + name);
        }
        try (InputStream in = file.getInputStream(entry)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
