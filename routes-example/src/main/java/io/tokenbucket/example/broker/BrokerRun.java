package io.tokenbucket.example.broker;

import org.apache.camel.main.BaseMainSupport;
import org.apache.camel.main.MainListenerSupport;
import org.apache.camel.main.MainSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Broker mode's part of a run, hooked into Camel Main: once Camel has started, the feeding instance sends its URLs to
 * the broker queue ({@link BrokerQueue#feed}); the recording instance completes Main once every URL sent has its line
 * written; an instance connected to another's broker completes it once that broker has been unreachable for
 * {@code example.brokerWait} ({@link BrokerWatch}). Does nothing without broker mode (no {@value BrokerQueue#BEAN}
 * bean).
 */
public class BrokerRun extends MainListenerSupport {

    private static final Logger LOG = LoggerFactory.getLogger(BrokerRun.class);

    private volatile Exception problem;

    @Override
    public void afterStart(BaseMainSupport main) {
        BrokerQueue queue = main.getCamelContext().getRegistry().lookupByNameAndType(BrokerQueue.BEAN,
                BrokerQueue.class);
        if (queue == null) {
            return;
        }
        Runnable complete = main instanceof MainSupport m ? m::completed : () -> { };
        try {
            queue.watch(main.getCamelContext(), gone -> {
                if (gone != null) {
                    problem = gone;
                }
                complete.run();
            });
            queue.feed(main.getCamelContext(), complete);
        } catch (Exception e) {
            // not thrown: Camel Main would leave Camel's threads running (see ScrapeRun); the run ends instead
            problem = e;
            LOG.error("Feeding broker queue {} failed: {}", queue.settings().queue(), e.toString());
            complete.run();
        }
    }

    /**
     * Why the run failed: the URLs could not be sent to the broker queue, or the broker was never reachable; null
     * otherwise.
     */
    public Exception problem() {
        return problem;
    }
}
