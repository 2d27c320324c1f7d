package io.tokenbucket.example.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The throttle's three kinds of key on one endpoint ({@link ProxyLimits}): a proxy's id, a pair's
 * {@code "pair <id> <host>"} and a host's {@code "host <host>"} never meet, whatever the ids (the words of the kinds,
 * a comma, a glob's asterisk), each gets its kind's limits, and the adaptive keys' glob matches the pairs alone.
 */
class ProxyLimitsTest {

    @TempDir
    Path dir;

    @Test
    void noProxyIdIsAPairsOrAHostsKeyAndEachKindGetsItsOwnLimits() throws Exception {
        // a file, since example.proxies splits at commas
        Path file = dir.resolve("proxies.txt");
        Files.writeString(file, String.join("\n", "http://h:1 id=host limit=3/1s", "http://h:2 id=pair limit=4/1s",
                "http://h:3 id=a,b limit=5/1s", "http://h:4 id=pair* limit=6/1s", "http://h:5 id=x"));
        ProxyPool pool = new ProxyPool(ProxySource.file(file), 2, 5_000, ProxyBuckets.NONE, System::nanoTime);
        ProxyLimits limits = new ProxyLimits(pool, 2, 1000, "", "9/1s", 0);
        List<String> ids = pool.ids();
        List<String> hosts = List.of("example.org", "host", "pair", "a");

        Set<String> proxyKeys = Set.copyOf(ids);
        Set<String> pairKeys = ids.stream().flatMap(id -> hosts.stream().map(h -> ProxyLimits.pairKey(id, h)))
                .collect(Collectors.toSet());
        Set<String> hostKeys = hosts.stream().map(ProxyLimits::hostKey).collect(Collectors.toSet());
        assertThat(pairKeys).hasSize(ids.size() * hosts.size()).doesNotContainAnyElementsOf(proxyKeys)
                .doesNotContainAnyElementsOf(hostKeys);
        assertThat(hostKeys).doesNotContainAnyElementsOf(proxyKeys);

        assertThat(limits.limitsFor("host")).as("the proxy named host").isEqualTo("3/1000ms");
        assertThat(limits.limitsFor("a,b")).isEqualTo("5/1000ms");
        assertThat(limits.limitsFor("x")).as("a proxy without limit=: the endpoint's default").isNull();
        assertThat(limits.limitsFor(ProxyLimits.hostKey("pair"))).as("the host named pair").isEqualTo("9/1s");
        // a pair without example.pairLimit: its own proxy's rate with twice its burst, never another proxy's
        assertThat(limits.limitsFor(ProxyLimits.pairKey("host", "pair"))).isEqualTo("3/1000ms:6");
        assertThat(limits.limitsFor(ProxyLimits.pairKey("pair", "host"))).isEqualTo("4/1000ms:8");
        assertThat(limits.limitsFor(ProxyLimits.pairKey("a,b", "a"))).isEqualTo("5/1000ms:10");
        assertThat(limits.limitsFor(ProxyLimits.pairKey("x", "a"))).isEqualTo("2/1000ms:4");
        assertThat(new ProxyLimits(pool, 2, 1000, "7/1s:2", "", 0).limitsFor(ProxyLimits.pairKey("pair*", "a")))
                .isEqualTo("7/1s:2");

        // in-flight caps: a proxy's Ninflight with its rate (or the default one), a host's with or without a rate
        Files.writeString(file, String.join("\n", "http://h:1 id=capped limit=3/1s,2inflight",
                "http://h:2 id=slots limit=4INFLIGHT"));
        ProxyPool capped = new ProxyPool(ProxySource.file(file), 2, 5_000, ProxyBuckets.NONE, System::nanoTime);
        ProxyLimits caps = new ProxyLimits(capped, 2, 1000, "", "", 5);
        assertThat(caps.limitsFor("capped")).isEqualTo("3/1000ms,2 in flight");
        assertThat(caps.limitsFor("slots")).isEqualTo("2/1000ms,4 in flight");
        assertThat(caps.limitsFor(ProxyLimits.hostKey("a"))).isEqualTo("5 in flight");
        assertThat(caps.limitsFor(ProxyLimits.pairKey("capped", "a"))).as("a pair has no cap of its own")
                .isEqualTo("3/1000ms:6");
        assertThat(new ProxyLimits(capped, 2, 1000, "", "9/1s", 5).limitsFor(ProxyLimits.hostKey("a")))
                .isEqualTo("9/1s,5 in flight");
        assertThat(new ProxyLimits(capped, 2, 1000, "", "", 0).limitsFor(ProxyLimits.hostKey("a"))).isNull();

        // the adaptive keys' glob, "pair " and anything: every pair, no proxy and no host
        String prefix = ProxyLimits.ADAPTIVE_KEYS.substring(0, ProxyLimits.ADAPTIVE_KEYS.length() - 1);
        assertThat(ProxyLimits.ADAPTIVE_KEYS).endsWith("*").doesNotContain(",");
        assertThat(pairKeys).allMatch(k -> k.startsWith(prefix));
        assertThat(Stream.concat(proxyKeys.stream(), hostKeys.stream())).noneMatch(k -> k.startsWith(prefix));
    }
}
