package io.tokenbucket.example.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The proxy list as a file and as {@code example.proxies}: the same lines. */
class ProxySourceTest {

    @Test
    void aFileSavedWithAByteOrderMarkStartsWithItsFirstLine(@TempDir Path dir) throws Exception {
        // Windows editors save UTF-8 with EF BB BF first; it is no character of the first line
        Path comment = Files.writeString(dir.resolve("bom-comment.txt"), "\uFEFF# mine\nhttp://h:1 id=p1\n");
        Path proxy = Files.writeString(dir.resolve("bom-proxy.txt"), "\uFEFFhttp://h:1 id=p1\nhttp://h:2 id=p2\n");

        assertThat(ProxySource.file(comment).read()).extracting(ProxyConfig::id).containsExactly("p1");
        assertThat(ProxySource.file(proxy).read()).extracting(ProxyConfig::id).containsExactly("p1", "p2");
    }

    @Test
    void thePropertyTakesTheFileLinesCommaSeparatedTheirOwnCommasIncluded() {
        // a line's limit= has a comma of its own (4/1s,8inflight), and so may a password (a comma needs no escape
        // in a URL's user info): a comma separates proxies only where the next one starts
        ProxySource source = ProxySource.text("http://u:a,b@h:1 id=p1 limit=4/1s,8inflight , http://h:2 id=p2,"
                + "http://h:3 limit=5/2s");

        assertThat(source.read()).extracting(ProxyConfig::id).containsExactly("p1", "p2", "h:3");
        ProxyConfig first = source.read().get(0);
        assertThat(first.password()).isEqualTo("a,b");
        assertThat(first.capacity()).isEqualTo(4);
        assertThat(first.inFlight()).isEqualTo(8);
        assertThat(source.read().get(2).capacity()).isEqualTo(5);
    }

    @Test
    void aFileRewrittenInPlaceIsNotTakenForAnEmptyListWhileItIsZeroBytes(@TempDir Path dir) throws Exception {
        // an editor or a shell redirection truncates the file, then writes it: a pool refreshed between the two
        // would lose every proxy, and each URL booked on one would spend an attempt ("left the pool")
        Path file = Files.writeString(dir.resolve("proxies.txt"), "http://h:1 id=p1\nhttp://h:2 id=p2\n");
        ProxyPool pool = new ProxyPool(ProxySource.file(file), 3, 1000, ProxyBuckets.NONE, System::nanoTime);
        Files.writeString(file, "");
        Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()
                + 5_000));
        pool.refresh();
        assertThat(pool.configs()).extracting(ProxyConfig::id).containsExactly("p1", "p2");

        Files.writeString(file, "http://h:2 id=p2\n");
        Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()
                + 10_000));
        pool.refresh();
        assertThat(pool.configs()).extracting(ProxyConfig::id).containsExactly("p2");
        // a list emptied on purpose: a comment, no proxy
        Files.writeString(file, "# none for now\n");
        Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()
                + 15_000));
        pool.refresh();
        assertThat(pool.configs()).isEmpty();
    }
}
