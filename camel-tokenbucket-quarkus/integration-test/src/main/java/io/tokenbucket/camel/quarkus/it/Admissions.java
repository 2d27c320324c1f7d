package io.tokenbucket.camel.quarkus.it;

import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

import jakarta.enterprise.context.ApplicationScoped;

import org.apache.camel.Processor;

/** What passed each route's tokenbucket step, and when ({@link System#nanoTime()}), in order of passing. */
@ApplicationScoped
public class Admissions {

    /** One exchange that passed: its route, its body, when. */
    public record Admission(String route, String body, long nanos) {
    }

    private final ConcurrentLinkedQueue<Admission> passed = new ConcurrentLinkedQueue<>();

    /** A route step that records the exchange as passed on {@code route}. */
    Processor record(String route) {
        return exchange -> passed.add(new Admission(route, exchange.getMessage().getBody(String.class),
                System.nanoTime()));
    }

    /** The exchanges that passed {@code route}, in order of passing. */
    public List<Admission> of(String route) {
        return passed.stream().filter(a -> a.route().equals(route)).toList();
    }
}
