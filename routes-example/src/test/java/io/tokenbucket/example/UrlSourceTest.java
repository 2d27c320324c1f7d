package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIOException;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reading URL lists from the classpath and from plain files. */
class UrlSourceTest {

    private final CamelContext context = new DefaultCamelContext();

    @AfterEach
    void close() throws Exception {
        context.close();
    }

    @Test
    void theBundledListHasThirtyDistinctUrls() throws Exception {
        List<String> urls = UrlSource.read(context, "classpath:urls.txt");
        assertThat(urls).hasSize(30).doesNotHaveDuplicates().allMatch(u -> u.startsWith("https://"));
    }

    @Test
    void aPlainPathIsAFileAndCommentsAndBlankLinesAreSkipped(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("urls.txt"), "# mine\n\n  https://a.test/1  \nhttps://a.test/2\n");
        assertThat(UrlSource.read(context, file.toString())).containsExactly("https://a.test/1", "https://a.test/2");
        assertThat(UrlSource.read(context, "file:" + file)).containsExactly("https://a.test/1", "https://a.test/2");
    }

    @Test
    void aFileSavedWithAByteOrderMarkStartsWithItsFirstLine(@TempDir Path dir) throws Exception {
        // Windows editors save UTF-8 with EF BB BF first; it is no character of the first line
        Path comment = Files.writeString(dir.resolve("bom-comment.txt"), "\uFEFF# mine\nhttps://a.test/1\n");
        Path url = Files.writeString(dir.resolve("bom-url.txt"), "\uFEFFhttps://a.test/1\nhttps://a.test/2\n");
        assertThat(UrlSource.read(context, comment.toString())).containsExactly("https://a.test/1");
        assertThat(UrlSource.read(context, url.toString())).containsExactly("https://a.test/1", "https://a.test/2");
    }

    @Test
    void aMissingFileFailsNamingIt(@TempDir Path dir) {
        String missing = dir.resolve("nope.txt").toString();
        assertThatIOException().isThrownBy(() -> UrlSource.read(context, missing)).withMessageContaining("nope.txt");
    }

    @Test
    void tenThousandLinesWithCrlfBlankLinesAndAMebibyteLineAreReadAsTheyAre(@TempDir Path dir) throws Exception {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < 10_000; i++) {
            text.append("https://a.test/").append(i).append("?q=").append(i).append("\r\n");
            if (i % 1000 == 0) {
                text.append("\r\n   \r\n# a comment\r\n");
            }
            if (i == 5000) {
                text.append("https://a.test/").append("x".repeat(1 << 20)).append("\r\n");
            }
        }
        List<String> urls = UrlSource.read(context, Files.writeString(dir.resolve("big.txt"), text).toString());
        assertThat(urls).hasSize(10_001).noneMatch(u -> u.contains("\r") || u.isBlank() || u.startsWith("#"));
        assertThat(urls.get(0)).isEqualTo("https://a.test/0?q=0");
        assertThat(urls.get(5001)).hasSize("https://a.test/".length() + (1 << 20));
        assertThat(urls.get(10_000)).isEqualTo("https://a.test/9999?q=9999");
    }
}
