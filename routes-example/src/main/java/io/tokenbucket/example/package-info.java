/**
 * The example application of the {@code tokenbucket:} component: a Camel Main program that spreads URLs over
 * a pool of (for now pretend) proxies and throttles the work of each proxy with one token bucket per proxy.
 *
 * <p>The route exists twice, in the Java DSL ({@link io.tokenbucket.example.ThrottledWorkRoute}) and in the
 * YAML DSL ({@code routes/throttled-work.yaml}); {@link io.tokenbucket.example.ExampleConfiguration} loads the
 * one that {@code example.dsl} names. The fetching through the proxies comes later; the structure (choose a
 * proxy, take its token, do the work, record, deliver) is already the one the scraper will have.
 */
package io.tokenbucket.example;
