package io.tokenbucket.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import io.tokenbucket.example.ExampleApp;
import io.tokenbucket.example.ScrapeRun;
import io.tokenbucket.example.ScraperRoute;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import org.apache.camel.main.BaseMainSupport;
import org.apache.camel.main.Main;
import org.apache.camel.main.MainListenerSupport;
import org.apache.camel.util.json.JsonObject;
import org.apache.camel.util.json.Jsoner;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scenario 5: the example's YAML route, copied out of the jar into a folder of its own (where an operator edits
 * it), loaded by Camel Main through {@code camel.main.routes-include-pattern=file:...} ({@code example.dsl=main}
 * adds no route of its own), scrapes like the Java route: each URL fetched once, no 429, no proxy over its
 * bucket's bound at the target. Both run here, one after the other, in this JVM.
 */
class YamlRouteFromFileIT {

    private static final int URLS = 45;
    private static final TargetLoad BUCKET = new TargetLoad(3, 1000);

    @TempDir
    Path dir;

    @Test
    void theYamlRouteFromAFileOutsideTheJarScrapesLikeTheJavaRoute() throws Exception {
        Path yaml = dir.resolve("etc").resolve("scraper.yaml");
        Files.createDirectories(yaml.getParent());
        try (InputStream in = ScraperRoute.class.getResourceAsStream("/routes/scraper.yaml")) {
            assertThat(in).as("routes/scraper.yaml in the routes-example jar").isNotNull();
            Files.copy(in, yaml);
        }
        Run fromFile = scrape("yaml-file", Map.of("example.dsl", "main",
                "camel.main.routes-include-pattern", "file:" + yaml));
        Run java = scrape("java", Map.of("example.dsl", "java"));

        assertThat(fromFile.routeSource).as("where the scraper route was loaded from").contains(yaml.toString());
        for (Run run : List.of(fromFile, java)) {
            assertThat(run.results).as("%s: fetched URLs", run.name).map(l -> l.getString("url"))
                    .containsExactlyInAnyOrderElementsOf(run.urls);
            assertThat(TargetLoad.fetchesPerPath(run.hits).values()).as("%s: 200s per URL", run.name)
                    .containsOnly(1L);
            assertThat(run.hits).as("%s: 429s", run.name).noneMatch(h -> h.status() == 429);
            long first = TargetLoad.firstGrantNoEarlierThan(run.hits, h -> true, run.results);
            for (String proxy : List.of("p1", "p2", "p3")) {
                assertThat(BUCKET.worstLead(run.hits, h -> h.client().equals(proxy), first))
                        .as("%s: via %s, ahead of the bucket's schedule", run.name, proxy).isLessThanOrEqualTo(0);
            }
            System.out.printf("[e2e] 5. %s route: %d URLs fetched once each, 0 x 429, requests per proxy %s, most per"
                    + " 1 s window %s (bucket bound %d, more when releases are late), %d ms%n", run.name,
                    run.results.size(), TargetLoad.perProxy(run.hits), List.of("p1", "p2", "p3").stream().map(p -> p + " "
                            + TargetLoad.maxInAnyWindow(run.hits, h -> h.client().equals(p), 1_000)).toList(),
                    BUCKET.bound(1_000), run.millis);
        }
    }

    private record Run(String name, List<String> urls, List<Hit> hits, List<JsonObject> results, String routeSource,
                       long millis) {
    }

    private Run scrape(String name, Map<String, String> settings) throws Exception {
        Path runDir = Files.createDirectories(dir.resolve(name));
        try (DemoSite site = new DemoSite(runDir, 3, "3/1s", URLS, 12, 1000)) {
            ScrapeRun run = new ScrapeRun(System.out);
            Main main = ExampleApp.createMain(run, site, runDir.resolve("out"));
            AtomicReference<String> source = new AtomicReference<>();
            main.addMainListener(new MainListenerSupport() {
                @Override
                public void afterStart(BaseMainSupport m) {
                    source.set(String.valueOf(m.getCamelContext().getRoute(ScraperRoute.ROUTE_ID).getSourceLocation()));
                }
            });
            main.addOverrideProperty("camel.main.source-location-enabled", "true");
            main.addOverrideProperty("example.progressInterval", "0");
            settings.forEach(main::addOverrideProperty);
            long began = System.nanoTime();
            assertThat(main.run(new String[0])).as("Camel Main exit code").isZero(); // returns once every URL is done
            long millis = (System.nanoTime() - began) / 1_000_000;
            assertThat(run.problem()).isNull();
            List<JsonObject> results = Files.readAllLines(runDir.resolve("out").resolve("results.jsonl")).stream()
                    .filter(l -> !l.isBlank()).map(l -> (JsonObject) Jsoner.deserialize(l, (JsonObject) null)).toList();
            List<String> urls = Files.readAllLines(site.urlFile()).stream().filter(l -> !l.isBlank()).toList();
            return new Run(name, urls, site.target().hits(), results, source.get(), millis);
        }
    }
}
