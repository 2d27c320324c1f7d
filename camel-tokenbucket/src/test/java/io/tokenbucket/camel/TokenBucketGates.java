package io.tokenbucket.camel;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.Processor;

/**
 * The step after the endpoint in the slot tests: each exchange records its body, in the order they pass, and one
 * whose body names a closed gate stays there (holding its in-flight slot) until the test opens it, 30 s at most.
 */
final class TokenBucketGates implements Processor {

    private final List<String> order = new CopyOnWriteArrayList<>();
    private final Map<String, CountDownLatch> gates = new ConcurrentHashMap<>();

    /** The bodies of the exchanges that passed the endpoint, in the order they did. */
    List<String> order() {
        return order;
    }

    /** The exchange whose body is {@code body} will wait at its gate. */
    void close(String body) {
        gates.put(body, new CountDownLatch(1));
    }

    /** Lets the exchange whose body is {@code body} go on (and end, giving its slot back). */
    void open(String body) {
        gates.get(body).countDown();
    }

    /** Lets every exchange held at a gate go on (a test's end, so none outlives it). */
    void openAll() {
        gates.values().forEach(CountDownLatch::countDown);
    }

    @Override
    public void process(Exchange exchange) throws InterruptedException {
        String body = exchange.getMessage().getBody(String.class);
        order.add(body);
        CountDownLatch gate = gates.get(body);
        if (gate != null && !gate.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("gate " + body + " never opened");
        }
    }
}
