/**
 * The example application of the {@code tokenbucket:} component: a Camel Main scraper that takes URLs from a
 * queue, chooses a proxy for each ({@link io.tokenbucket.example.proxy}), waits for that proxy's token in
 * {@code tokenbucket:}, fetches the URL through the proxy with camel-http and records the outcome
 * ({@link io.tokenbucket.example.fetch}). URLs come from a {@code seda:} queue fed from a file, or from a JMS broker
 * shared by a fleet of instances ({@link io.tokenbucket.example.broker}).
 *
 * <p>This package holds the application itself: the route in the Java DSL ({@link io.tokenbucket.example.ScraperRoute};
 * the YAML DSL's is {@code routes/scraper.yaml}), the configuration that binds its beans and loads the route that
 * {@code example.dsl} names ({@link io.tokenbucket.example.ExampleConfiguration}), and the program that runs it
 * ({@link io.tokenbucket.example.ExampleApp}), by default against the offline demo of
 * {@link io.tokenbucket.example.demo}.
 */
package io.tokenbucket.example;
