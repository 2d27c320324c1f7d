package io.tokenbucket.example.fetch;

import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ServiceStatus;
import org.apache.camel.support.SynchronizationAdapter;

/**
 * How many URLs this instance works on at once ({@code example.maxInFlight}): a URL takes a place when it leaves
 * the queue ({@link ScrapeStart}) and gives it back when its route is done with it (result or dead letter). The
 * queue's consumer thread waits for a free place, so the rest of the URLs stay in the queue, where any instance can
 * take them.
 *
 * <p>Why a bound: with a booking horizon ({@code example.pairMaxWait}) a URL whose proxy, pair and host are all
 * booked further ahead than that is tried again {@code example.storeRetryDelay} later, so every URL taken from
 * the queue and not yet booked costs a store call per retry. Without a bound the whole queue would be taken at once
 * and retried together, thousands of calls in one burst that delay the releases of the URLs already booked. Without
 * a horizon, the bound also keeps the bookings close: a 429's penalty or a cut of a pair's rate reaches every URL
 * taken after it.
 */
public final class InFlightLimit {

    /** The most {@code example.maxInFlight} may be. */
    public static final int MAX = 100_000;

    private static final long POLL_MILLIS = 100;

    private final Semaphore places;
    private final CamelContext context;

    /**
     * @param places  {@code example.maxInFlight}, 1 to {@value #MAX}
     * @param context while it and the URL's route run, a URL waits for a place; once either stops, a URL goes on
     *                without one (so that the queue's consumer is never stuck in a stopping route)
     * @throws IllegalArgumentException naming {@code example.maxInFlight} and the value when out of range
     */
    public InFlightLimit(long places, CamelContext context) {
        if (places < 1 || places > MAX) {
            throw new IllegalArgumentException("example.maxInFlight must be 1 to " + MAX + ", was " + places);
        }
        this.places = new Semaphore((int) places);
        this.context = context;
    }

    /**
     * Waits, on the calling thread (the queue's consumer), until a place is free, takes it, and gives it back once
     * {@code exchange} is complete, whatever its outcome.
     */
    void enter(Exchange exchange) {
        boolean taken = false;
        try {
            while (!taken && running(exchange)) {
                taken = places.tryAcquire(POLL_MILLIS, TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // goes on without a place, as in a stopping context
        }
        if (taken) {
            exchange.getExchangeExtension().addOnCompletion(new SynchronizationAdapter() {
                @Override
                public void onDone(Exchange done) {
                    places.release();
                }
            });
        }
    }

    private boolean running(Exchange exchange) {
        if (context.isStopping() || context.isStopped()) {
            return false;
        }
        String route = exchange.getFromRouteId();
        ServiceStatus status = route == null ? null : context.getRouteController().getRouteStatus(route);
        return status == null || status.isStarted();
    }

    /** The places free now. */
    int free() {
        return places.availablePermits();
    }
}
