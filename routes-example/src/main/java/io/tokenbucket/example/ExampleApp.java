package io.tokenbucket.example;

import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.camel.TokenBucketLimitResolver;
import io.tokenbucket.example.broker.BrokerRun;
import io.tokenbucket.example.broker.BrokerUnreachable;
import io.tokenbucket.example.demo.Convergence;
import io.tokenbucket.example.demo.ConvergencePlot;
import io.tokenbucket.example.demo.DemoProxy;
import io.tokenbucket.example.demo.DemoSite;
import io.tokenbucket.example.demo.DemoTarget;
import io.tokenbucket.example.proxy.ProxyStats;
import io.tokenbucket.math.Limit;
import io.tokenbucket.math.Limits;
import org.apache.camel.main.Main;

/**
 * Runs the scraper: {@code mvn -B -DskipTests install && mvn -B -pl routes-example exec:java}.
 *
 * <p>By default ({@code example.demo=true}) it first starts the offline demo on loopback (a target site of two
 * hosts with a limit it does not tell: {@value #DEMO_HIDDEN_LIMIT} pages per client address per host,
 * {@code example.demoHiddenLimit}, as nginx's {@code limit_req} with a burst of half the rate unless the setting
 * gives one ({@link HiddenLimit}); and three Jetty forward proxies with credentials, each connecting from an address
 * of its own and limited to {@value #DEMO_PROXY_LIMIT} in the proxy file, {@code example.demoProxyLimit}), scrapes
 * its {@value #DEMO_URLS} pages with {@code example.hostLimit=}{@value #DEMO_HOST_LIMIT} and the adaptive rate per
 * (proxy, host) below {@code example.pairLimit=}{@value #DEMO_PAIR_LIMIT} (tuned as {@code example.adaptive=true}
 * is anywhere: the component's {@code camel.component.tokenbucket.adaptive-*} of {@code application.properties},
 * and the booking horizon of {@link ExampleConfiguration}), prints the summary and the
 * convergence line, writes the plot {@code convergence.png} next to the results, and ends by itself.
 * {@code -Dexample.throttle=false} runs the same without {@code tokenbucket:}, to see the 429s it prevents;
 * {@code -Dexample.demoProxyMode=close} (or {@code http10}) gives the demo proxies the manners of real ones.
 * {@code -Dexample.demo=false} scrapes {@code example.urlFile} through {@code example.proxyFile} instead.
 *
 * <p>Settings come from {@code application.properties}, overridable as system properties or environment
 * variables ({@code EXAMPLE_PROXYLIMIT=5/1s}).
 */
public final class ExampleApp {

    /**
     * Demo size (setting {@code example.demoPages}): enough for about 20 s at the hidden limit, so that the share
     * used after 10 s ({@link Convergence}) is measured over several seconds before the queue runs dry.
     */
    static final String DEMO_URLS = "2400";
    /**
     * Each demo proxy's limit (setting {@code example.demoProxyLimit}): above what its two pairs may send, so that
     * the pairs' adaptive rates, not the proxies, find the hidden limit.
     */
    static final String DEMO_PROXY_LIMIT = "50/1s";
    /**
     * The demo target's hidden limit (setting {@code example.demoHiddenLimit}, {@link HiddenLimit}): pages per client
     * address per host, with nginx's burst of half the rate.
     */
    static final String DEMO_HIDDEN_LIMIT = "20/1s";
    /** The demo target's hosts (127.0.0.2, 127.0.0.3). */
    static final int DEMO_HOSTS = 2;
    /**
     * The demo's per-host politeness: twice what the hidden limit lets three proxies send to one host, in bursts of
     * 6, as an operator who does not know the limit would set it: charged with every fetch, it does not find the
     * limit for the pairs.
     */
    static final String DEMO_HOST_LIMIT = "120/1s:6";
    /**
     * The demo's (proxy, host) limit, the adaptive rate's ceiling: twice the hidden limit, in bursts of 2. The rate
     * starts at the component's {@code adaptiveStart} of it ({@code application.properties}) and finds the limit
     * from there.
     */
    static final String DEMO_PAIR_LIMIT = "40/1s:2";
    /** The file the demo's convergence plot goes to, in {@code example.outputDir}. */
    static final String DEMO_PLOT = "convergence.png";
    /** The file the demo's page requests at the target go to, in {@code example.outputDir} ({@link #writeHits}). */
    static final String DEMO_HITS = "hits.csv";

    /**
     * What the demo runs with unless set as a system property or environment variable: the demo's own settings and
     * the three of {@code application.properties} it overrides ({@code example.hostLimit}, {@code example.pairLimit},
     * {@code example.adaptive}). The README's settings table is checked against it ({@code ReadmeSettingsTest}).
     */
    static final Map<String, String> DEMO_SETTINGS = Map.of("example.demoHiddenLimit", DEMO_HIDDEN_LIMIT,
            "example.demoPages", DEMO_URLS, "example.demoProxyLimit", DEMO_PROXY_LIMIT, "example.demoProxyMode",
            "keepalive", "example.hostLimit", DEMO_HOST_LIMIT, "example.pairLimit", DEMO_PAIR_LIMIT,
            "example.adaptive", "true");

    private ExampleApp() {
    }

    /**
     * Runs to completion. Calls {@code System.exit} (ending Maven too under {@code exec:java}) only for an instance
     * that never reached its broker ({@link BrokerUnreachable}, exit code {@value BrokerUnreachable#EXIT_CODE}, one
     * line) or was given a setting it cannot run with ({@link SettingsRefused}, exit code
     * {@value SettingsRefused#EXIT_CODE}, one line); a run in which not every URL got an outcome fails with an
     * exception.
     *
     * @param args Camel Main command line arguments (none needed)
     */
    public static void main(String[] args) throws Exception {
        ScrapeRun run = new ScrapeRun(System.out);
        Main main;
        DemoSite demo = null;
        if (Boolean.parseBoolean(setting("example.demo", "true"))) {
            Path dir = Files.createDirectories(Path.of(setting("example.outputDir", "target/scrape")));
            // a run's results only: the results endpoints append
            Files.deleteIfExists(dir.resolve("results.jsonl"));
            Files.deleteIfExists(dir.resolve("dead-letter.jsonl"));
            // nginx's limit_req per address per host, and no Retry-After on its 429s: the scraper is told nothing
            // but "no"
            HiddenLimit hidden = HiddenLimit.parse(demoSetting("example.demoHiddenLimit"));
            demo = new DemoSite(dir, 3, demoSetting("example.demoProxyLimit"),
                    demoNumber("example.demoPages", DEMO_SETTINGS.get("example.demoPages")),
                    DemoTarget.hiddenPerIpLikeNginx(hidden.perSecond(), hidden.burst(), DEMO_HOSTS),
                    DemoProxy.Mode.of(demoSetting("example.demoProxyMode")));
            main = createDemoMain(run, demo, dir);
            DemoSite site = demo;
            run.footer(() -> demoFooter(site, dir));
        } else {
            main = createMain(run);
        }
        int exitCode = 0;
        SettingsRefused refused = null;
        try {
            exitCode = main.run(args);
        } catch (Exception e) {
            refused = SettingsRefused.in(e);
            if (refused == null) {
                throw e;
            }
        } finally {
            if (demo != null) {
                demo.close();
            }
        }
        refused = refused != null ? refused : SettingsRefused.in(run.problem());
        if (refused != null) {
            // one line and an exit code, as for an unreachable broker: the setting alone is to blame
            System.err.println(refused.getMessage() + " (exit code " + SettingsRefused.EXIT_CODE + ")");
            System.exit(SettingsRefused.EXIT_CODE);
        }
        if (run.problem() != null) {
            throw new IllegalStateException("The run failed: " + run.problem().getMessage(), run.problem());
        }
        for (Object listener : main.getMainListeners()) {
            if (listener instanceof BrokerRun broker && broker.problem() instanceof BrokerUnreachable unreachable) {
                // one line and an exit code: not the exception's stack trace (and Maven's BUILD FAILURE), since
                // only the broker's absence is to blame
                System.err.println(unreachable.getMessage() + " (exit code " + BrokerUnreachable.EXIT_CODE + ")");
                System.exit(BrokerUnreachable.EXIT_CODE);
            }
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

    /**
     * What the demo prints under the summary: the target's 429s, the convergence line ({@link Convergence}) and
     * where its plot went; written once the run is over, from what the target saw.
     */
    static String demoFooter(DemoSite site, Path dir) {
        String nl = System.lineSeparator();
        StringBuilder text = new StringBuilder("The target answered 429 " + site.target().tooManyByClient().values()
                .stream().mapToLong(Long::longValue).sum() + " times " + site.target().tooManyByClient()
                + " (throttle " + (Boolean.parseBoolean(setting("example.throttle", "true")) ? "on" : "off")
                + ", hidden limit " + site.target().hiddenLimit() + "/s per proxy address per host)" + nl);
        Convergence convergence = site.target().convergence(site.proxies().stream().map(DemoProxy::id).toList());
        text.append(convergence.summary()).append(nl);
        text.append(Boolean.parseBoolean(demoSetting("example.adaptive"))
                ? "Adaptive rate per (proxy, host): on, each pair's ceiling " + demoSetting("example.pairLimit")
                        + ", cut by the host's 429s"
                : "Adaptive rate per (proxy, host): off, each pair at its fixed limit "
                        + demoSetting("example.pairLimit")).append(nl);
        try {
            text.append("Hits: ").append(writeHits(site.target().hits(), dir.resolve(DEMO_HITS)).toAbsolutePath())
                    .append(nl);
        } catch (java.io.IOException e) {
            text.append("No hits file: ").append(e.getMessage()).append(nl);
        }
        try {
            text.append("Plot: ").append(new ConvergencePlot(convergence, 900, 450).write(dir.resolve(DEMO_PLOT))
                    .toAbsolutePath()).append(nl);
        } catch (java.io.IOException | RuntimeException e) {
            text.append("No plot: ").append(e.getMessage()).append(nl);
        }
        return text.append("Results in ").append(dir.toAbsolutePath()).append(nl).toString();
    }

    /**
     * Writes what the target saw of the pages, one line per request, to {@code file}: milliseconds since the first
     * page request, the proxy it came through, the host it reached and the status. The plot's data, for
     * {@code demo-row.sh} and anyone who wants a figure the summary does not give.
     */
    static Path writeHits(java.util.List<DemoTarget.Hit> hits, Path file) throws java.io.IOException {
        java.util.List<DemoTarget.Hit> pages = hits.stream().filter(h -> h.path().startsWith("/page/")).toList();
        long start = pages.isEmpty() ? 0 : pages.get(0).nanos();
        StringBuilder text = new StringBuilder("ms,proxy,host,status\n");
        for (DemoTarget.Hit h : pages) {
            text.append(String.format(Locale.ROOT, "%.1f", (h.nanos() - start) / 1e6)).append(',').append(h.client())
                    .append(',').append(h.host()).append(',').append(h.status()).append('\n');
        }
        return Files.writeString(file, text);
    }

    /**
     * The demo target's hidden limit, {@code example.demoHiddenLimit}: {@code N/period[:burst]} in the component's
     * limits syntax ({@link TokenBucketLimitResolver#parse}, as {@code example.hostLimit}), read as nginx's
     * {@code limit_req rate=... burst=...}: a whole number of pages per second from 1 to {@value #MAX_DEMO_NUMBER}
     * ({@code 20/1s}, {@code 1200/1m}), and nginx's {@code burst} from 1 to {@value #MAX_DEMO_NUMBER}, by default
     * half the rate (at least 1): {@code 20/1s} is {@code 20/1s:10}.
     *
     * @param perSecond pages per second per client address per host
     * @param burst     nginx's {@code burst}: requests beyond the rate it lets through at once
     */
    record HiddenLimit(int perSecond, int burst) {

        private static final String KEY = "example.demoHiddenLimit";

        /** Parses {@link #KEY}'s text; refuses, naming the setting and the text, anything else. */
        static HiddenLimit parse(String text) {
            Limits limits;
            try {
                limits = TokenBucketLimitResolver.parse(text);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(KEY + " must be N/period[:burst] such as 20/1s or 20/1s:10, was '"
                        + text + "' (" + e.getMessage() + ")", e);
            }
            if (limits.size() != 1 || limits.inFlight() != 0) {
                throw new IllegalArgumentException(KEY + " must be one N/period[:burst] such as 20/1s, was '" + text
                        + "'");
            }
            Limit limit = limits.get(0);
            // pages per second: N per period, whole (nginx's rate is r/s or r/m; the demo's target counts per second)
            BigInteger[] perSecond = BigInteger.valueOf(limit.refillAmount())
                    .multiply(BigInteger.valueOf(TimeUnit.SECONDS.toNanos(1)))
                    .divideAndRemainder(BigInteger.valueOf(limit.refillPeriod()));
            if (perSecond[1].signum() != 0 || perSecond[0].compareTo(BigInteger.ONE) < 0
                    || perSecond[0].compareTo(BigInteger.valueOf(MAX_DEMO_NUMBER)) > 0) {
                throw new IllegalArgumentException(KEY + " must be a whole number of pages per second from 1 to "
                        + MAX_DEMO_NUMBER + " (20/1s, 1200/1m), was '" + text + "'");
            }
            int rate = perSecond[0].intValueExact();
            // without :burst the component's parser gives the rate as the burst: the demo's default is half of it
            long burst = text.contains(":") ? limit.capacity() : Math.max(1, rate / 2);
            if (burst > MAX_DEMO_NUMBER) {
                throw new IllegalArgumentException(KEY + "'s burst must be from 1 to " + MAX_DEMO_NUMBER + ", was '"
                        + text + "'");
            }
            return new HiddenLimit(rate, (int) burst);
        }
    }

    /** The largest number a demo setting takes. */
    static final int MAX_DEMO_NUMBER = 100_000;

    /** A whole-number demo setting from 1 to 100,000, refused by name otherwise. */
    static int demoNumber(String key, String defaultValue) {
        String value = setting(key, defaultValue).strip();
        try {
            int n = Integer.parseInt(value);
            if (n >= 1 && n <= MAX_DEMO_NUMBER) {
                return n;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new IllegalArgumentException(key + " must be a whole number from 1 to 100000, was '" + value + "'");
    }

    /** A demo setting ({@link #DEMO_SETTINGS}) before Camel runs: system property, environment variable, default. */
    static String demoSetting(String key) {
        String defaultValue = DEMO_SETTINGS.get(key);
        if (defaultValue == null) {
            throw new IllegalArgumentException("No demo default for " + key);
        }
        return setting(key, defaultValue);
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
    public static Main createMain(ScrapeRun run, DemoSite site, Path outputDir) {
        Main main = createMain(run);
        main.addOverrideProperty("example.proxyFile", site.proxyFile().toString());
        main.addOverrideProperty("example.urlFile", site.urlFile().toString());
        main.addOverrideProperty("example.outputDir", outputDir.toString());
        return main;
    }

    /**
     * A Camel Main set up as {@link #main} sets it up for the demo: {@link #createMain(ScrapeRun, DemoSite, Path)}
     * with the demo's settings ({@link #DEMO_SETTINGS}: {@code example.hostLimit}, {@code example.pairLimit},
     * {@code example.adaptive}) unless given as system properties or environment variables; not yet started.
     */
    static Main createDemoMain(ScrapeRun run, DemoSite site, Path outputDir) {
        Main main = createMain(run, site, outputDir);
        for (String key : new String[] {"example.hostLimit", "example.pairLimit", "example.adaptive"}) {
            main.addOverrideProperty(key, demoSetting(key));
        }
        return main;
    }

    /**
     * A Camel Main set up for the scraper, not yet started.
     *
     * @param run the listener that feeds the URLs and prints the summary
     */
    public static Main createMain(ScrapeRun run) {
        // no main class on purpose: Main(Class) scans its package for RouteBuilders, and the routes are chosen
        // by ExampleConfiguration from example.dsl instead
        Main main = new Main();
        main.configure().addConfiguration(ExampleConfiguration.class);
        main.addMainListener(run);
        main.addMainListener(new BrokerRun());
        return main;
    }
}
