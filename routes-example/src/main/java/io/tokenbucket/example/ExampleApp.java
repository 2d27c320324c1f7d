package io.tokenbucket.example;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import org.apache.camel.main.Main;

/**
 * Runs the scraper: {@code mvn -B -DskipTests install && mvn -B -pl routes-example exec:java}.
 *
 * <p>By default ({@code example.demo=true}) it first starts the offline demo on 127.0.0.1 (a target site that
 * answers 429 to a proxy over 10 requests per second, and three Jetty forward proxies with credentials, each
 * limited to 4 per second in the proxy file), scrapes its 120 pages, prints the summary and ends by itself.
 * {@code -Dexample.throttle=false} runs the same without {@code tokenbucket:}, to see the 429s it prevents;
 * {@code -Dexample.demoProxyMode=close} (or {@code http10}) gives the demo proxies the manners of real ones.
 * {@code -Dexample.demo=false} scrapes {@code example.urlFile} through {@code example.proxyFile} instead.
 *
 * <p>Settings come from {@code application.properties}, overridable as system properties or environment
 * variables ({@code EXAMPLE_CAPACITY=5}).
 */
public final class ExampleApp {

    /** Demo size and limits: low enough that the throttle is visible, the run still short (about 10 s). */
    static final int DEMO_URLS = 120;
    static final String DEMO_PROXY_LIMIT = "4/1s";
    static final int DEMO_TARGET_LIMIT = 10;

    private ExampleApp() {
    }

    /**
     * Runs to completion. Never calls {@code System.exit}: under {@code exec:java} that would end Maven too;
     * a run in which not every URL got an outcome fails with an exception instead.
     *
     * @param args Camel Main command line arguments (none needed)
     */
    public static void main(String[] args) throws Exception {
        DemoRun run = new DemoRun(System.out);
        Main main;
        DemoSite demo = null;
        if (Boolean.parseBoolean(setting("example.demo", "true"))) {
            Path dir = Files.createDirectories(Path.of(setting("example.outputDir", "target/scrape")));
            // a run's results only: the results endpoints append
            Files.deleteIfExists(dir.resolve("results.jsonl"));
            Files.deleteIfExists(dir.resolve("dead-letter.jsonl"));
            demo = new DemoSite(dir, 3, DEMO_PROXY_LIMIT, DEMO_URLS, new DemoTarget(DEMO_TARGET_LIMIT, 1000),
                    DemoProxy.Mode.of(setting("example.demoProxyMode", "keepalive")));
            main = createMain(run, demo, dir);
            DemoSite site = demo;
            run.footer(() -> "The target answered 429 " + site.target().tooManyByClient().values().stream()
                    .mapToLong(Long::longValue).sum() + " times " + site.target().tooManyByClient()
                    + " (throttle " + (Boolean.parseBoolean(setting("example.throttle", "true")) ? "on" : "off")
                    + "); results in " + dir.toAbsolutePath() + System.lineSeparator());
        } else {
            main = createMain(run);
        }
        int exitCode;
        try {
            exitCode = main.run(args);
        } finally {
            if (demo != null) {
                demo.close();
            }
        }
        if (run.problem() != null) {
            throw new IllegalStateException("The run failed: " + run.problem().getMessage(), run.problem());
        }
        for (Object listener : main.getMainListeners()) {
            if (listener instanceof BrokerRun broker && broker.problem() != null) {
                throw new IllegalStateException("The run failed: " + broker.problem().getMessage(), broker.problem());
            }
        }
        ProxyStats stats = run.stats();
        long done = stats == null ? 0 : stats.fetched() + stats.deadLetters();
        if (exitCode != 0 || stats == null || done < run.sent()) {
            throw new IllegalStateException("The run did not complete: " + done + " of " + run.sent()
                    + " URLs have an outcome (Camel Main exit code " + exitCode + ")");
        }
    }

    /** A setting before Camel runs: system property, then environment variable (EXAMPLE_DEMO), then default. */
    static String setting(String key, String defaultValue) {
        String env = System.getenv(key.replace('.', '_').toUpperCase(Locale.ROOT));
        return System.getProperty(key, env != null ? env : defaultValue);
    }

    /**
     * A Camel Main set up to scrape a {@link DemoSite}: its proxy file, its URL file, results and dead letters in
     * {@code outputDir}; not yet started. What {@link #main} does for the demo, and what the tests start from.
     *
     * @param run       the listener that feeds the URLs and prints the summary
     * @param site      the demo site
     * @param outputDir where {@code results.jsonl} and {@code dead-letter.jsonl} go
     */
    public static Main createMain(DemoRun run, DemoSite site, Path outputDir) {
        Main main = createMain(run);
        main.addOverrideProperty("example.proxyFile", site.proxyFile().toString());
        main.addOverrideProperty("example.urlFile", site.urlFile().toString());
        main.addOverrideProperty("example.outputDir", outputDir.toString());
        return main;
    }

    /**
     * A Camel Main set up for the scraper, not yet started.
     *
     * @param run the listener that feeds the URLs and prints the summary
     */
    public static Main createMain(DemoRun run) {
        // no main class on purpose: Main(Class) scans its package for RouteBuilders, and the routes are chosen
        // by ExampleConfiguration from example.dsl instead
        Main main = new Main();
        main.configure().addConfiguration(ExampleConfiguration.class);
        main.addMainListener(run);
        main.addMainListener(new BrokerRun());
        return main;
    }
}
