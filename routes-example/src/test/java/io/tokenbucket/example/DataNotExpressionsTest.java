package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * URLs and proxy credentials are data: whatever characters they hold reach the proxy and the target as they are,
 * never read as endpoint URI syntax or Camel placeholders; and only http(s) URLs with a host are fetched at all.
 * The URLs with placeholders fetched literally are in {@link FetchedUrlTest}.
 */
class DataNotExpressionsTest {

    /** Passwords no URI option could carry: RAW() ends at the first ')', & starts an option, {{ a placeholder. */
    private static final List<String[]> CREDENTIALS = List.of(
            new String[] {"us@er", ") & {{env:HOME}} @ : % + \u00fc"},
            new String[] {"scr+aper \u00e9", "RAW(x)) {{sys:user.home}}%41"},
            new String[] {"scraper", "p&proxyAuthHost=localhost&x={{bean:proxyPool}}"});

    @TempDir
    Path dir;

    @Test
    void eachProxyGetsExactlyItsCredentialsWithTheFirstRequest() throws Exception {
        List<DemoProxy> proxies = new ArrayList<>();
        try (DemoSite site = new DemoSite(dir, 0, null, 0, 1000, 1000)) {
            for (int i = 0; i < CREDENTIALS.size(); i++) {
                proxies.add(new DemoProxy("p" + (i + 1), CREDENTIALS.get(i)[0], CREDENTIALS.get(i)[1]));
            }
            site.writeProxyFile(proxies, "10/100ms");
            try (ScraperHarness scraper = new ScraperHarness("java", dir, site,
                    Map.of("example.choose", "roundrobin"))) {
                List<String> urls = scraper.pages(12);
                scraper.scrape(urls);

                assertThat(scraper.deadLines()).isEmpty();
                assertThat(scraper.resultLines()).hasSize(12).allSatisfy(line -> {
                    assertThat(line.getInteger("status")).isEqualTo(200);
                    assertThat(line.getInteger("attempts")).isEqualTo(1);
                });
                // a proxy that got other credentials than its own answers 407
                for (DemoProxy proxy : proxies) {
                    assertThat(proxy.forwarded()).as("requests %s forwarded", proxy.id()).isEqualTo(4);
                    assertThat(proxy.challenged()).as("407s from %s", proxy.id()).isZero();
                }
                // and no password in any line or in the summary
                List<String> written = Stream.concat(scraper.results.getReceivedExchanges().stream(),
                        scraper.dead.getReceivedExchanges().stream()).map(e -> e.getMessage().getBody(String.class))
                        .toList();
                for (String[] credentials : CREDENTIALS) {
                    assertThat(written).noneMatch(line -> line.contains(credentials[1]));
                    assertThat(scraper.stats().table(scraper.pool().health())).doesNotContain(credentials[1]);
                    assertThat(scraper.pool().configs().toString()).doesNotContain(credentials[1]);
                }
            }
        } finally {
            for (DemoProxy proxy : proxies) {
                proxy.close();
            }
        }
    }

    @Test
    void aProxyWhoseCredentialsChangeGetsANewClientAndTheOldOneIsGone() throws Exception {
        try (DemoSite site = new DemoSite(dir, 1, "10/100ms", 0, 1000, 1000);
             DemoProxy changed = new DemoProxy("p1", "scraper", "n3w {{env:HOME}}");
             ScraperHarness scraper = new ScraperHarness("java", dir, site, Map.of())) {
            List<String> pages = scraper.pages(4);
            scraper.scrape(pages.subList(0, 2));
            // the same id, another address and password: the pool keeps p1, its client is replaced
            site.writeProxyFile(List.of(changed), "10/100ms");
            scraper.scrape(pages.subList(2, 4));

            assertThat(scraper.resultLines()).hasSize(4).allMatch(l -> l.getInteger("status") == 200
                    && l.getInteger("attempts") == 1);
            assertThat(site.proxies().get(0).forwarded()).isEqualTo(2);
            assertThat(changed.forwarded()).isEqualTo(2);
            assertThat(changed.challenged()).isZero();
            // one fetch endpoint, the new one, named by a generated name; the old client is unbound
            assertThat(scraper.context.getEndpoints()).filteredOn(e -> e.getEndpointUri().startsWith("http"))
                    .singleElement().satisfies(e -> assertThat(e.getEndpointUri()).endsWith("%23proxyClient2")
                            .doesNotContain("n3w"));
            assertThat(scraper.context.getRegistry().lookupByName("proxyClient1")).isNull();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    void aUrlThatIsNotHttpGoesToTheDeadLetterUntriedTouchingNoProxyAndNoToken(String dsl) throws Exception {
        // one token per proxy per hour: a refused URL that took one would make a later URL wait an hour
        try (DemoSite site = new DemoSite(dir, 3, "1/1h", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of())) {
            List<String> refused = List.of("ftp://127.0.0.1/file", "file:///etc/passwd", "javascript:alert(1)",
                    "mailto:someone@example.test", "http:///no-host", "not a url", "   ",
                    "http://user:s3cret-url@127.0.0.1/page/1", "http://127.0.0.1/" + "x".repeat(1 << 20));
            scraper.scrape(refused);

            assertThat(scraper.deadLines()).hasSize(refused.size()).allSatisfy(dead -> {
                assertThat(dead.getString("reason")).startsWith("not fetched: ");
                assertThat(dead.getInteger("attempts")).isZero();
                assertThat((java.util.Collection<?>) dead.getCollection("proxies")).isEmpty();
                assertThat(dead.getString("url")).doesNotContain("s3cret-url").hasSizeLessThan(200);
            });
            assertThat(scraper.deadLines()).extracting(l -> l.getString("reason")).contains(
                    "not fetched: only http and https URLs are fetched, not ftp:",
                    "not fetched: only http and https URLs are fetched, not file:",
                    "not fetched: only http and https URLs are fetched, not javascript:",
                    "not fetched: a user name or password in the URL is not sent",
                    "not fetched: longer than 8192 characters");
            assertThat(scraper.deadLines()).extracting(l -> l.getString("url"))
                    .contains("http://user:***@127.0.0.1/page/1", "file:///etc/passwd");
            assertThat(scraper.stats().deadLetters()).isEqualTo(refused.size());
            assertThat(site.proxies()).allSatisfy(p -> assertThat(p.connections()).as("connections to %s", p.id())
                    .isZero());
            assertThat(site.target().hits()).isEmpty();
            assertThat(scraper.pool().health().values()).containsOnly("healthy");

            // every proxy still has its one token
            scraper.scrape(scraper.pages(3));
            assertThat(scraper.resultLines()).hasSize(3).allSatisfy(line -> {
                assertThat(line.getLong("waitedMs")).isZero();
                assertThat(line.getInteger("status")).isEqualTo(200);
            });
            assertThat(scraper.resultLines()).extracting(l -> l.getString("proxy")).containsExactlyInAnyOrder(
                    "p1", "p2", "p3");
        }
    }
}
