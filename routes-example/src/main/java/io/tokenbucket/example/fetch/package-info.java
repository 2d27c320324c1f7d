/**
 * One URL's fetch: the URL as given and its host key ({@link io.tokenbucket.example.fetch.TargetUrl},
 * {@link io.tokenbucket.example.fetch.HostKey}), its bookkeeping through the route
 * ({@link io.tokenbucket.example.fetch.ScrapeStart}, {@link io.tokenbucket.example.fetch.Scrape}), and its outcome:
 * who is to blame for a failure, what a 429's {@code Retry-After} asks and what goes to the results
 * ({@link io.tokenbucket.example.fetch.FetchOutcome}, {@link io.tokenbucket.example.fetch.Blame},
 * {@link io.tokenbucket.example.fetch.RetryAfter}, {@link io.tokenbucket.example.fetch.ScrapeResult}).
 */
package io.tokenbucket.example.fetch;
