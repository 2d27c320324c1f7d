package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import org.apache.camel.util.json.JsonObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The URL fetched is the URL given: what the target received (path and query as sent), for URLs with queries,
 * encoded and non-ASCII characters, a fragment and Camel placeholder syntax; and camel-http's timeouts are
 * camel-http's, not query parameters.
 */
class FetchedUrlTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    void theTargetReceivesThePathAndQueryOfTheUrlAsABrowserSendsThem(String dsl) throws Exception {
        try (DemoSite site = new DemoSite(dir, 2, "10/100ms", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness(dsl, dir, site, Map.of())) {
            String base = site.target().baseUrl();
            // the URL given -> the request target the site must see
            Map<String, String> expected = new LinkedHashMap<>();
            expected.put(base + "/page/10?u=9&x=a%20b", "/page/10?u=9&x=a%20b");
            expected.put(base + "/page/a%2Fb", "/page/a%2Fb");
            expected.put(base + "/page/p\u00e4ge?q=\u00fc", "/page/p%C3%A4ge?q=%C3%BC");
            expected.put(base + "/page/11#section-2", "/page/11");
            expected.put(base + "/page/12?", "/page/12?");
            expected.put(base + "/page/13?a=1&a=2&b=%26%3D", "/page/13?a=1&a=2&b=%26%3D");
            // placeholders are text: never resolved, in the path or in the query
            expected.put(base + "/page/{{sys:user.home}}?q={{env:HOME}}&b={{bean:proxyPool}}",
                    "/page/%7B%7Bsys:user.home%7D%7D?q=%7B%7Benv:HOME%7D%7D&b=%7B%7Bbean:proxyPool%7D%7D");
            List<String> urls = List.copyOf(expected.keySet());
            scraper.scrape(urls);

            assertThat(scraper.deadLines()).isEmpty();
            // one request per URL, each exactly as it should be, nothing of camel-http's options in any query
            assertThat(site.target().hits()).extracting(Hit::target)
                    .containsExactlyInAnyOrderElementsOf(expected.values());
            assertThat(site.target().hits()).allMatch(h -> h.status() == 200);
            // and the result line names the URL as it was given
            assertThat(scraper.resultLines()).extracting(l -> l.getString("url"))
                    .containsExactlyInAnyOrderElementsOf(urls);
        }
    }

    @Test
    void theResponseTimeoutEndsAFetchThatGetsNoAnswer() throws Exception {
        try (DemoSite site = new DemoSite(dir, 1, "10/100ms", 0, 1000, 1000);
             ScraperHarness scraper = new ScraperHarness("java", dir, site,
                     Map.of("example.responseTimeout", "300ms", "example.maxAttempts", "1"))) {
            String slow = site.target().baseUrl() + "/delay/5000";
            long start = System.nanoTime();
            scraper.scrape(List.of(slow));
            long millis = (System.nanoTime() - start) / 1_000_000;

            JsonObject dead = scraper.deadLines().get(0);
            assertThat(dead.getString("reason")).contains("SocketTimeoutException");
            // the timeout is camel-http's, not a query parameter sent to the site (and ignored there), which
            // would leave camel-http's default of 3 minutes: the site answers after 5 s
            assertThat(millis).as("ms until the fetch gave up").isLessThan(4_000);
        }
    }
}
