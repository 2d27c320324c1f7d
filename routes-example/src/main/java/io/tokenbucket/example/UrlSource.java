package io.tokenbucket.example;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.camel.CamelContext;
import org.apache.camel.support.ResourceHelper;

/** Reads the URLs of a run: one a line; blank lines and lines starting with {@code #} are skipped. */
public final class UrlSource {

    private UrlSource() {
    }

    /**
     * @param context  resolves {@code classpath:}, {@code file:} and other Camel resource schemes
     * @param location a Camel resource such as {@code classpath:urls.txt}, a plain file path, or {@code -} for
     *                 standard input
     * @return the URLs in file order
     * @throws IOException when the location cannot be read (its message names the location)
     */
    public static List<String> read(CamelContext context, String location) throws IOException {
        // a plain path means a file: Camel would otherwise look it up on the classpath
        try (InputStream in = "-".equals(location) ? System.in : ResourceHelper.hasScheme(location)
                ? ResourceHelper.resolveMandatoryResourceAsInputStream(context, location)
                : Files.newInputStream(Path.of(location));
             BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            List<String> urls = new ArrayList<>();
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                // a byte order mark (Windows editors save UTF-8 with one) is no character of the first line
                String url = (urls.isEmpty() && line.startsWith("\uFEFF") ? line.substring(1) : line).strip();
                if (!url.isEmpty() && !url.startsWith("#")) {
                    urls.add(url);
                }
            }
            return urls;
        }
    }
}
