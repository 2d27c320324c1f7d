package io.tokenbucket.benchmarks;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Measurement 3: exchanges per second through {@code direct -> X -> noop}, where X is nothing ({@code bare}),
 * {@code tokenbucket:} ({@code tokenbucket}), a {@code to(...)} of the cheapest possible producer endpoint
 * ({@code noopStep}: {@link NoopComponent}, whose asynchronous producer completes at once and does nothing, so
 * {@code noopStep - bare} is Camel's own per-step cost of a producer endpoint and {@code tokenbucket - noopStep}
 * is ours; {@code noopHeaders}: the same producer setting the two headers of a grant, the floor of our contract) or
 * Camel's Throttle EIP in total-requests mode with a correlation expression ({@code throttle}) at {@code perMs} per
 * millisecond with a burst of {@code perMs} (1 M/s or 10 M/s per key). Throttle keeps one permit object per request
 * of the period in a {@code DelayQueue}, so its cost grows with {@code perMs}; ours does not depend on the rate, which
 * is {@link #NEVER_BINDS} per millisecond with the same burst: at 1 M/s one key on a quiet machine reached the limit,
 * and exchanges then waited on the timer, which measures the limit, not the step.
 * Each call is {@code ProducerTemplate.sendBodyAndHeader} with the key in header {@code k}, keys taken round
 * robin from {@code keys} strings. {@code -p perMs=1000,10000} adds the faster limit, where Throttle costs more.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RouteOverhead {

    /** The limit, in exchanges per millisecond and burst, of both tokenbucket: and throttle(). */
    @Param({"1000"})
    public int perMs;

    @Param({"1", "1000"})
    public int keys;

    /**
     * The rate of the {@code tokenbucket:} step, per millisecond: 1 G/s, so that it never binds here; its burst is
     * {@code perMs}, as throttle's, so the tokens left (a header) stay as small as a real limit's.
     */
    static final long NEVER_BINDS = 1_000_000;

    String[] names;
    CamelContext camel;
    ProducerTemplate template;

    @State(Scope.Thread)
    public static class Cursor {
        int i;

        @Setup
        public void start(RouteOverhead bench) {
            i = ThreadLocalRandom.current().nextInt(bench.keys);
        }

        String next(String[] names) {
            int j = i + 1;
            if (j == names.length) {
                j = 0;
            }
            i = j;
            return names[j];
        }
    }

    @Setup
    public void setup() throws Exception {
        names = new String[keys];
        for (int i = 0; i < keys; i++) {
            names[i] = "key-" + i;
        }
        camel = stepRoutes(perMs);
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:throttle")
                        .throttle(constant(perMs)).totalRequestsMode().timePeriodMillis(1)
                        .correlationExpression(header("k"))
                        .process(e -> { });
            }
        });
        camel.start();
        template = camel.createProducerTemplate();
    }

    /**
     * A context, not started, with the routes both route benchmarks compare: {@code direct:bare} (a no-op processor),
     * {@code direct:noopStep} (a producer that does nothing, then the processor) and {@code direct:tokenbucket} (the
     * local store at {@link #NEVER_BINDS} a millisecond with a burst of {@code perMs}, keys in header {@code k}, then
     * the processor).
     */
    static CamelContext stepRoutes(long perMs) throws Exception {
        CamelContext camel = new DefaultCamelContext();
        camel.addComponent("noop", new NoopComponent());
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("direct:bare").process(e -> { });
                from("direct:noopStep").to("noop:x").process(e -> { });
                from("direct:noopHeaders").to("noop:headers").process(e -> { });
                from("direct:tokenbucket")
                        .to("tokenbucket:bench?keyHeader=k&capacity=" + perMs + "&refillAmount=" + NEVER_BINDS
                                + "&refillPeriod=1")
                        .process(e -> { });
            }
        });
        return camel;
    }

    @TearDown
    public void tearDown() throws Exception {
        template.stop();
        camel.stop();
    }

    @Benchmark
    public void bare(Cursor c) {
        template.sendBodyAndHeader("direct:bare", "x", "k", c.next(names));
    }

    @Benchmark
    public void noopStep(Cursor c) {
        template.sendBodyAndHeader("direct:noopStep", "x", "k", c.next(names));
    }

    @Benchmark
    public void noopHeaders(Cursor c) {
        template.sendBodyAndHeader("direct:noopHeaders", "x", "k", c.next(names));
    }

    @Benchmark
    public void tokenbucket(Cursor c) {
        template.sendBodyAndHeader("direct:tokenbucket", "x", "k", c.next(names));
    }

    @Benchmark
    public void throttle(Cursor c) {
        template.sendBodyAndHeader("direct:throttle", "x", "k", c.next(names));
    }
}
