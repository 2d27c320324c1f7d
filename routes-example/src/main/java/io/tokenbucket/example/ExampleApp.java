package io.tokenbucket.example;

import org.apache.camel.main.Main;

/**
 * Runs the demo: {@code mvn -B -DskipTests install && mvn -B -pl routes-example exec:java}. Reads the URLs,
 * throttles them per proxy, prints the per-proxy table and ends by itself once every URL has passed.
 *
 * <p>Settings come from {@code application.properties}, overridable as system properties
 * ({@code -Dexample.dsl=yaml}) or environment variables ({@code EXAMPLE_CAPACITY=5}).
 */
public final class ExampleApp {

    private ExampleApp() {
    }

    /**
     * Runs to completion. Never calls {@code System.exit}: under {@code exec:java} that would end Maven too;
     * a run in which not every URL passed fails with an exception instead.
     *
     * @param args Camel Main command line arguments (none needed)
     */
    public static void main(String[] args) throws Exception {
        DemoRun run = new DemoRun(System.out);
        int exitCode = createMain(run).run(args);
        if (run.problem() != null) {
            throw new IllegalStateException("The demo run failed: " + run.problem().getMessage(), run.problem());
        }
        ProxyStats stats = run.stats();
        long passed = stats == null ? 0 : stats.total();
        if (exitCode != 0 || stats == null || passed < run.sent()) {
            throw new IllegalStateException("The run did not complete: " + passed + " of " + run.sent()
                    + " URLs passed (Camel Main exit code " + exitCode + ")");
        }
    }

    /**
     * A Camel Main set up for the demo, not yet started.
     *
     * @param run the listener that feeds the URLs and prints the summary
     */
    public static Main createMain(DemoRun run) {
        // no main class on purpose: Main(Class) scans its package for RouteBuilders, and the routes are chosen
        // by ExampleConfiguration from example.dsl instead
        Main main = new Main();
        main.configure().addConfiguration(ExampleConfiguration.class);
        main.addMainListener(run);
        return main;
    }
}
