package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;

import io.tokenbucket.camel.TokenBucketConfiguration;
import io.tokenbucket.camel.TokenBucketEndpoint;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget.Hit;
import org.apache.camel.main.BaseMainSupport;
import org.apache.camel.main.Main;
import org.apache.camel.main.MainListenerSupport;
import org.apache.camel.util.TimeUtils;
import org.apache.camel.util.json.JsonObject;
import org.apache.camel.util.json.Jsoner;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The whole application as {@code exec:java} runs it, made small: it must end by itself and print the summary. */
class ExampleAppTest {

    @ParameterizedTest
    @ValueSource(strings = { "java", "yaml" })
    @Timeout(30) // the run must end by itself; this only turns a hang into a failure
    void scrapesEveryUrlThroughTheProxiesWritesJsonLinesAndPrintsTheSummary(String dsl, @TempDir Path dir)
            throws Exception {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        ScrapeRun run = new ScrapeRun(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try (DemoSite site = new DemoSite(dir, 3, "3/300ms", 12, 1000, 1000)) {
            Main main = ExampleApp.createMain(run, site, dir.resolve("out"));
            main.addOverrideProperty("example.dsl", dsl);
            main.addOverrideProperty("example.progressInterval", "0");

            int exitCode = main.run(new String[0]); // returns only once Main completed

            assertThat(exitCode).isZero();
        }
        assertThat(run.sent()).isEqualTo(12);
        assertThat(run.failed()).isZero();
        assertThat(run.stats().fetchedByProxy()).containsOnlyKeys("p1", "p2", "p3");
        assertThat(run.stats().fetched()).isEqualTo(12);
        List<String> lines = Files.readAllLines(dir.resolve("out/results.jsonl"));
        assertThat(lines).hasSize(12).allMatch(l -> l.startsWith("{\"url\":") && l.contains("\"status\":200"));
        assertThat(Files.exists(dir.resolve("out/dead-letter.jsonl"))).isFalse();
        String table = printed.toString(StandardCharsets.UTF_8);
        assertThat(table).contains("== summary ==", "rate/s", "wait ms", "failures", "429s", "health")
                .containsPattern("(?m)^all\\s+12\\s").contains("12 fetched, 0 failed attempts, 0 answered 429");
        assertThat(table).doesNotContain("s3cret");
    }

    /**
     * The adaptive rate's tuning is the component's own options in {@code application.properties}
     * ({@code camel.component.tokenbucket.adaptive-*}), which no URI names: Camel Main must set them on the component
     * before the throttle's endpoint copies them, whichever DSL makes it ({@code main}: Camel Main loads the YAML
     * route itself). The demo's own set-up, with its adaptive rate on.
     */
    @ParameterizedTest
    @ValueSource(strings = { "java", "main" })
    @Timeout(30)
    void theDemosThrottleRunsTheExamplesAdaptiveTuningNotTheComponentsDefaults(String dsl, @TempDir Path dir)
            throws Exception {
        ScrapeRun run = new ScrapeRun(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        List<TokenBucketConfiguration> throttles = new CopyOnWriteArrayList<>();
        try (DemoSite site = new DemoSite(dir, 3, "50/1s", 6, 1000, 1000)) {
            Main main = ExampleApp.createDemoMain(run, site, dir.resolve("out"));
            main.addOverrideProperty("example.dsl", dsl);
            if (dsl.equals("main")) {
                main.addOverrideProperty("camel.main.routes-include-pattern", ExampleConfiguration.YAML_ROUTE);
            }
            main.addOverrideProperty("example.progressInterval", "0");
            main.addMainListener(new MainListenerSupport() {
                @Override
                public void afterStart(BaseMainSupport started) {
                    started.getCamelContext().getEndpoints().stream().filter(TokenBucketEndpoint.class::isInstance)
                            .map(e -> ((TokenBucketEndpoint) e).getConfiguration()).forEach(throttles::add);
                }
            });

            assertThat(main.run(new String[0])).isZero();
        }
        assertThat(run.stats().fetched()).isEqualTo(6);
        Properties app = new Properties();
        try (InputStream in = ExampleAppTest.class.getResourceAsStream("/application.properties")) {
            app.load(in);
        }
        String tuning = "camel.component.tokenbucket.adaptive-";
        double decrease = Double.parseDouble(app.getProperty(tuning + "decrease"));
        double increase = Double.parseDouble(app.getProperty(tuning + "increase"));
        long hold = TimeUtils.toMilliSeconds(app.getProperty(tuning + "hold"));
        double floor = Double.parseDouble(app.getProperty(tuning + "floor"));
        long memory = TimeUtils.toMilliSeconds(app.getProperty(tuning + "memory"));
        double start = Double.parseDouble(app.getProperty(tuning + "start"));
        TokenBucketConfiguration defaults = new TokenBucketConfiguration();
        assertThat(new Object[] {decrease, increase, hold, floor, start}).as("the example's tuning, not the defaults")
                .doesNotContain(defaults.getAdaptiveDecrease(), defaults.getAdaptiveIncrease(),
                        defaults.getAdaptiveHold(), defaults.getAdaptiveFloor(), defaults.getAdaptiveStart());
        assertThat(throttles).as("the route's tokenbucket: endpoints").isNotEmpty().allSatisfy(throttle -> {
            assertThat(throttle.isAdaptive()).isTrue();
            assertThat(throttle.getAdaptiveDecrease()).isEqualTo(decrease);
            assertThat(throttle.getAdaptiveIncrease()).isEqualTo(increase);
            assertThat(throttle.getAdaptiveHold()).isEqualTo(hold);
            assertThat(throttle.getAdaptiveFloor()).isEqualTo(floor);
            assertThat(throttle.getAdaptiveMemory()).isEqualTo(memory);
            assertThat(throttle.getAdaptiveStart()).isEqualTo(start);
        });
    }

    @Test
    @Timeout(30)
    void withABookingHorizonAUrlBookedOutIsRedeliveredAndFetchedOnce(@TempDir Path dir) throws Exception {
        ScrapeRun run = new ScrapeRun(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        // one proxy, 2 at once then one every 500 ms; a URL may book at most 300 ms ahead, so most are booked out
        // at first and come back every 50 ms until their turn is near
        try (DemoSite site = new DemoSite(dir, 1, "2/1s", 6, 1000, 1000)) {
            // the proxy's own first forward loads Jetty's client classes: on a busy machine it arrives late, bunched
            // with the next, which would measure the demo proxy, not the bucket
            site.warmUp();
            Main main = ExampleApp.createMain(run, site, dir.resolve("out"));
            main.addOverrideProperty("example.dsl", "java");
            main.addOverrideProperty("example.progressInterval", "0");
            main.addOverrideProperty("camel.component.tokenbucket.max-wait", "300ms");
            main.addOverrideProperty("example.storeRetryDelay", "50");

            assertThat(main.run(new String[0])).isZero();

            List<Hit> hits = site.target().hits().stream().filter(h -> h.path().startsWith("/page/")).toList();
            // each URL fetched once: a booked-out attempt leaves nothing behind that the fetch could take for its own
            assertThat(hits).hasSize(6).allMatch(h -> h.status() == 200);
            assertThat(hits.stream().map(Hit::path).distinct()).hasSize(6);
            // and the bucket held at the target: 2 at once, then 500 ms each, from the first URL's token
            List<JsonObject> lines = Files.readAllLines(dir.resolve("out/results.jsonl")).stream()
                    .filter(l -> !l.isBlank()).map(l -> (JsonObject) Jsoner.deserialize(l, (JsonObject) null))
                    .toList();
            assertThat(ScraperRouteTest.aheadOfBucket(hits.stream().map(Hit::nanos).toList(), 2, 1000,
                    ScraperRouteTest.firstTokenNotAfter(hits, lines))).as("requests ahead of the bucket")
                    .isLessThanOrEqualTo(0);
        }
        assertThat(run.stats().fetched()).isEqualTo(6);
        assertThat(run.stats().failures()).as("failed fetch attempts").isZero();
        assertThat(Files.exists(dir.resolve("out/dead-letter.jsonl"))).isFalse();
    }

    @Test
    @Timeout(60)
    void theSummaryWaitsForEveryUrlWhenItsAttemptsOweBucketSteps(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        ScrapeRun run = new ScrapeRun(new PrintStream(printed, true, StandardCharsets.UTF_8));
        // each proxy gets one page a minute through: the other URLs answer 429 on every attempt, and each 429 owes
        // its pair a penalize step, a split of the route whose parts finish as exchanges of their own
        try (DemoSite site = new DemoSite(dir, 2, null, 6, 1, 60_000)) {
            Main main = ExampleApp.createMain(run, site, dir.resolve("out"));
            main.addOverrideProperty("example.progressInterval", "0");
            main.addOverrideProperty("example.penalty", "50ms");
            main.addOverrideProperty("example.maxRetryAfter", "50ms");
            main.addOverrideProperty("example.maxBackoff", "50ms");

            assertThat(main.run(new String[0])).isZero();
        }
        assertThat(run.stats().tooManyRequests()).as("429s").isPositive();
        assertThat(run.stats().fetched() + run.stats().deadLetters()).isEqualTo(6);
        // printed when Main completed: every URL had its outcome by then
        java.util.regex.Matcher summary = java.util.regex.Pattern
                .compile("(\\d+) fetched, \\d+ failed attempts, \\d+ answered 429, (\\d+) dead letters")
                .matcher(printed.toString(StandardCharsets.UTF_8));
        assertThat(summary.find()).as(printed.toString(StandardCharsets.UTF_8)).isTrue();
        assertThat(Long.parseLong(summary.group(1)) + Long.parseLong(summary.group(2))).as(summary.group())
                .isEqualTo(6);
    }

    @Test
    void theDemosHiddenLimitIsReadByTheComponentsParserWithNginxsBurstHalfTheRateByDefault() {
        assertThat(ExampleApp.HiddenLimit.parse(ExampleApp.DEMO_HIDDEN_LIMIT))
                .isEqualTo(new ExampleApp.HiddenLimit(20, 10));
        assertThat(ExampleApp.HiddenLimit.parse("20/1s:3")).isEqualTo(new ExampleApp.HiddenLimit(20, 3));
        assertThat(ExampleApp.HiddenLimit.parse("3/1s")).isEqualTo(new ExampleApp.HiddenLimit(3, 1));
        assertThat(ExampleApp.HiddenLimit.parse("1/1s")).as("a burst of at least 1")
                .isEqualTo(new ExampleApp.HiddenLimit(1, 1));
        assertThat(ExampleApp.HiddenLimit.parse(" 1200 / 1m : 5 ")).isEqualTo(new ExampleApp.HiddenLimit(20, 5));
        for (String bad : new String[] {"20", "lots", "0/1s", "20/0s", "20/1s:0", "20/soon", ""}) {
            assertThatIllegalArgumentException().as(bad).isThrownBy(() -> ExampleApp.HiddenLimit.parse(bad))
                    .withMessageStartingWith("example.demoHiddenLimit must be N/period[:burst] such as 20/1s or"
                            + " 20/1s:10, was '" + bad + "' (limits");
        }
        for (String bad : new String[] {"1/2s", "30/1m", "3/2s", "100001/1s"}) {
            assertThatIllegalArgumentException().as(bad).isThrownBy(() -> ExampleApp.HiddenLimit.parse(bad))
                    .withMessage("example.demoHiddenLimit must be a whole number of pages per second from 1 to"
                            + " 100000 (20/1s, 1200/1m), was '" + bad + "'");
        }
        assertThatIllegalArgumentException().isThrownBy(() -> ExampleApp.HiddenLimit.parse("20/1s,100/1m"))
                .withMessage("example.demoHiddenLimit must be one N/period[:burst] such as 20/1s, was '20/1s,100/1m'");
        assertThatIllegalArgumentException().isThrownBy(() -> ExampleApp.HiddenLimit.parse("20/1s:100001"))
                .withMessage("example.demoHiddenLimit's burst must be from 1 to 100000, was '20/1s:100001'");
    }

    @Test
    @Timeout(30)
    void anUnreadableUrlFileEndsTheRunWithTheReason(@TempDir Path dir) throws Exception {
        ScrapeRun run = new ScrapeRun(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        Main main = ExampleApp.createMain(run);
        main.addOverrideProperty("example.proxies", "http://127.0.0.1:9 id=nowhere");
        main.addOverrideProperty("example.urlFile", dir.resolve("missing.txt").toString());
        main.addOverrideProperty("example.progressInterval", "0");

        main.run(new String[0]); // must return although nothing was sent: Camel stops the normal way

        assertThat(run.problem()).hasMessageContaining("example.urlFile=").hasMessageContaining("missing.txt");
        assertThat(run.sent()).isZero();
    }
}
