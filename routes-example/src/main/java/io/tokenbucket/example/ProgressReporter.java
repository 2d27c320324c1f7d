package io.tokenbucket.example;

import java.io.PrintStream;
import java.time.LocalTime;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.CamelContext;
import org.apache.camel.support.service.ServiceSupport;

/**
 * Prints the per-proxy table every {@code example.progressInterval} while the scraper runs, so a person
 * watching a long run sees each proxy's progress and health, each rate over the seconds since the last table, and in
 * a fleet the fleet's line ({@link FleetTotals}). Prints nothing before the first attempt, nor a table whose counts,
 * health and fleet line are those of the last one. A Camel
 * service: it starts and stops with the context.
 */
public class ProgressReporter extends ServiceSupport {

    private final CamelContext context;
    private final ProxyStats stats;
    private final ProxyPool pool;
    private final long intervalMillis;
    private final PrintStream out;
    private ScheduledExecutorService timer;
    // only touched on the timer's one thread
    private List<Object> last;
    private ProxyStats.Mark mark;

    /**
     * @param context        owns the timer thread
     * @param stats          what to print
     * @param pool           the health column
     * @param intervalMillis how often, at least 100
     * @param out            where
     */
    public ProgressReporter(CamelContext context, ProxyStats stats, ProxyPool pool, long intervalMillis,
                            PrintStream out) {
        this.context = context;
        this.stats = stats;
        this.pool = pool;
        this.intervalMillis = Math.max(100, intervalMillis);
        this.out = out;
    }

    @Override
    protected void doStart() {
        timer = context.getExecutorServiceManager().newSingleThreadScheduledExecutor(this, "ScraperProgress");
        timer.scheduleAtFixedRate(this::print, intervalMillis, intervalMillis, TimeUnit.MILLISECONDS);
    }

    private void print() {
        long attempts = stats.fetched() + stats.failures() + stats.tooManyRequests();
        if (attempts == 0) {
            return;
        }
        FleetTotals fleet = context.getRegistry().lookupByNameAndType(FleetTotals.BEAN, FleetTotals.class);
        String fleetLine = fleet == null ? "" : fleet.report(stats);
        // the same counts, health and fleet line as the last table: nothing new to show (an instance waiting for its
        // broker, or for Redis), so nothing is printed
        List<Object> now = List.of(stats.counts(), pool.health(), fleetLine);
        if (now.equals(last)) {
            return;
        }
        last = now;
        ProxyStats.Mark previous = mark;
        mark = stats.mark();
        // one print call: the table must not interleave with log lines
        out.print(System.lineSeparator() + "-- progress at " + LocalTime.now().truncatedTo(ChronoUnit.SECONDS)
                + (previous == null ? "" : String.format(Locale.ROOT, ", rate/s over the last %.0f s",
                        (mark.nanos() - previous.nanos()) / 1e9))
                + " --" + System.lineSeparator() + stats.table(pool.health(), previous) + fleetLine);
        out.flush();
    }

    @Override
    protected void doStop() {
        if (timer != null) {
            context.getExecutorServiceManager().shutdown(timer);
        }
    }
}
