/**
 * One URL's fetch: the URL as given and its host key ({@link io.tokenbucket.example.fetch.TargetUrl},
 * {@link io.tokenbucket.example.fetch.HostKey}), its bookkeeping through the route
 * ({@link io.tokenbucket.example.fetch.ScrapeStart}, {@link io.tokenbucket.example.fetch.Scrape}), the proxy for
 * each attempt ({@link io.tokenbucket.example.fetch.ProxyChooser}, {@link io.tokenbucket.example.fetch.ProxyInUse}),
 * and its outcome: who is to blame for a failure, what a 429's {@code Retry-After} asks and what goes to the results
 * ({@link io.tokenbucket.example.fetch.FetchOutcome}, {@link io.tokenbucket.example.fetch.Blame},
 * {@link io.tokenbucket.example.fetch.RetryAfter}, {@link io.tokenbucket.example.fetch.ScrapeResult}), with the
 * fleet's word on a URL ({@link io.tokenbucket.example.fetch.UrlVerdicts}). It imports {@code proxy}, never the
 * route's package.
 */
package io.tokenbucket.example.fetch;
