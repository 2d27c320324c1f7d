package io.tokenbucket.example;

import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import io.tokenbucket.example.broker.BrokerQueue;
import io.tokenbucket.example.broker.BrokerRun;
import io.tokenbucket.example.proxy.ProxyPool;
import io.tokenbucket.example.proxy.ProxyStats;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ExchangePropertyKey;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.main.BaseMainSupport;
import org.apache.camel.main.MainListenerSupport;
import org.apache.camel.main.MainSupport;
import org.apache.camel.spi.CamelEvent;
import org.apache.camel.spi.CamelEvent.ExchangeEvent;
import org.apache.camel.support.EventNotifierSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One run of the scraper, hooked into Camel Main. When {@code example.queue} is the embedded {@code seda:}
 * queue, it reads the URLs of {@code example.urlFile} once Camel has started and sends them there; when the
 * route has finished as many exchanges as were sent (fetched, dead-lettered or failed, so nothing can keep
 * the program alive) it completes Main; before Camel stops it prints the final per-proxy summary. With another
 * queue it feeds nothing and the application runs until stopped (broker mode feeds and ends as {@link BrokerRun}
 * says).
 *
 * <p>Every run has one, the demo's and one on your own proxies and URLs; the demo only adds its lines under the
 * summary ({@link #footer}). Kept out of the routes on purpose: the routes stay the reusable part, and the tests
 * feed them directly.
 */
public class ScrapeRun extends MainListenerSupport {

    private static final Logger LOG = LoggerFactory.getLogger(ScrapeRun.class);

    private final PrintStream out;
    private final AtomicLong finished = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicBoolean allFinished = new AtomicBoolean();
    private volatile long expected = Long.MAX_VALUE;
    private volatile Runnable whenAllFinished = () -> { };
    private volatile ProxyStats stats;
    private volatile ProxyPool pool;
    private volatile Supplier<String> footerSupplier = () -> "";
    private volatile int sent;
    private volatile Exception problem;

    /** @param out where the summary table goes */
    public ScrapeRun(PrintStream out) {
        this.out = out;
    }

    /** Text printed under the final summary (the demo adds what its target saw). */
    public void footer(Supplier<String> footer) {
        this.footerSupplier = footer;
    }

    @Override
    public void beforeStart(BaseMainSupport main) {
        // before the start: Camel decides while starting the routes whether it emits exchange events at all
        main.getCamelContext().getManagementStrategy().addEventNotifier(new FinishLine());
        if (main instanceof MainSupport m) {
            whenAllFinished = m::completed;
        }
    }

    @Override
    public void afterStart(BaseMainSupport main) {
        try {
            feed(main.getCamelContext());
        } catch (Exception e) {
            // never thrown out of here: Camel Main would log it but leave Camel's threads running, so under
            // exec:java the program would hang on them; completing Main stops Camel the normal way instead
            problem = e;
            if (!(e instanceof SettingsRefused)) { // the application prints a refused setting itself, once
                LOG.error("The run failed: {}", e.getMessage());
            }
            allFinished.set(true);
            whenAllFinished.run();
        }
    }

    private void feed(CamelContext context) throws Exception {
        stats = context.getRegistry().lookupByNameAndType(ProxyStats.BEAN, ProxyStats.class);
        pool = context.getRegistry().lookupByNameAndType(ProxyPool.BEAN, ProxyPool.class);
        String location = context.resolvePropertyPlaceholders("{{example.urlFile}}");
        String queue = context.resolvePropertyPlaceholders("{{example.queue}}");
        if (!queue.startsWith("seda:")) {
            // broker mode says itself how this instance ends (BrokerQueue#feed)
            if (context.getRegistry().lookupByName(BrokerQueue.BEAN) == null) {
                LOG.info("URLs come from {}; the scraper runs until stopped", queue);
            }
            return;
        }
        List<String> urls;
        try {
            urls = UrlSource.read(context, location);
        } catch (Exception e) {
            throw new SettingsRefused("Cannot read the URLs of example.urlFile=" + location, e);
        }
        LOG.info("Sending {} URLs from {} to {} over proxies {}", urls.size(), location, queue, pool.ids());
        // armed before the first send: the last URL may finish before this loop ends
        expected = urls.size();
        checkAllFinished();
        try (ProducerTemplate template = context.createProducerTemplate()) {
            for (String url : urls) {
                template.sendBody(queue, url);
                sent++;
            }
        }
    }

    @Override
    public void beforeStop(BaseMainSupport main) {
        // the progress table would otherwise interleave with the summary while Camel stops
        main.getCamelContext().hasServices(ProgressReporter.class).forEach(r -> {
            try {
                r.stop();
            } catch (Exception e) {
                LOG.debug("Progress reporter did not stop", e);
            }
        });
        if (stats != null && problem == null) {
            FleetTotals fleet = main.getCamelContext().getRegistry().lookupByNameAndType(FleetTotals.BEAN,
                    FleetTotals.class);
            out.print(System.lineSeparator() + "== summary ==" + System.lineSeparator() + stats.table(pool.health())
                    + (fleet == null ? "" : fleet.summary(stats)));
            if (failed.get() > 0) {
                out.println(failed.get() + " exchanges failed (see the log)");
            }
            out.print(footerSupplier.get());
            out.flush();
        }
    }

    private void checkAllFinished() {
        // the flag: two exchanges finishing together may both see the final count
        if (finished.get() >= expected && allFinished.compareAndSet(false, true)) {
            whenAllFinished.run();
        }
    }

    /** The stats of this run, once Camel has started; null before. */
    public ProxyStats stats() {
        return stats;
    }

    /** How many URLs this run sent to the queue. */
    public int sent() {
        return sent;
    }

    /** Why the run could not feed its URLs (unreadable file, bad queue URI); null when it could. */
    public Exception problem() {
        return problem;
    }

    /** The pool of this run, once Camel has started; null before. */
    public ProxyPool pool() {
        return pool;
    }

    /** How many exchanges of the route failed. */
    public long failed() {
        return failed.get();
    }

    /** Counts the exchanges of the scraper route as they finish. */
    private final class FinishLine extends EventNotifierSupport {

        @Override
        public boolean isEnabled(CamelEvent event) {
            return event.getType() == CamelEvent.Type.ExchangeCompleted
                    || event.getType() == CamelEvent.Type.ExchangeFailed;
        }

        @Override
        public void notify(CamelEvent event) {
            Exchange exchange = ((ExchangeEvent) event).getExchange();
            // the producer template's own exchanges finish too; only the route's copies count, and of those not the
            // parts of its split (the bucket steps an attempt owes), which finish as exchanges of their own: counted,
            // a run with 429s would complete Main, and print its summary, before its last URLs had their outcome
            if (!ScraperRoute.ROUTE_ID.equals(exchange.getFromRouteId())
                    || exchange.getProperty(ExchangePropertyKey.SPLIT_INDEX) != null) {
                return;
            }
            if (event.getType() == CamelEvent.Type.ExchangeFailed) {
                failed.incrementAndGet();
            }
            finished.incrementAndGet();
            checkAllFinished();
        }
    }
}
