/**
 * The example application of the {@code tokenbucket:} component: a Camel Main scraper that takes URLs from a
 * queue, chooses a healthy proxy in round robin ({@link io.tokenbucket.example.ProxyPool},
 * {@link io.tokenbucket.example.ProxyChooser}), waits for that proxy's token in {@code tokenbucket:}, fetches
 * the URL through the proxy with camel-http and records the outcome ({@link io.tokenbucket.example.FetchOutcome},
 * {@link io.tokenbucket.example.ScrapeResult}).
 *
 * <p>The route exists twice, in the Java DSL ({@link io.tokenbucket.example.ScraperRoute}) and in the YAML DSL
 * ({@code routes/scraper.yaml}); {@link io.tokenbucket.example.ExampleConfiguration} loads the one that
 * {@code example.dsl} names. {@link io.tokenbucket.example.ExampleApp} runs it, by default against the offline
 * demo of package {@code demo}.
 */
package io.tokenbucket.example;
