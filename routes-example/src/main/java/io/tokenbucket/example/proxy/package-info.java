/**
 * The proxies: their file ({@link io.tokenbucket.example.proxy.ProxySource},
 * {@link io.tokenbucket.example.proxy.ProxyConfig}), their health and the rests of each (proxy, host) pair
 * ({@link io.tokenbucket.example.proxy.ProxyPool}, {@link io.tokenbucket.example.proxy.ProxyHealth},
 * {@link io.tokenbucket.example.proxy.RestBackoff}; a rest is kept where the choice reads it, {@link
 * io.tokenbucket.example.proxy.ProxyBuckets}), their limits in {@code tokenbucket:}
 * ({@link io.tokenbucket.example.proxy.ProxyLimits}, {@link io.tokenbucket.example.proxy.BucketSteps}),
 * one HTTP client each ({@link io.tokenbucket.example.proxy.ProxyClients}) and their counters
 * ({@link io.tokenbucket.example.proxy.ProxyStats}). It knows nothing of a URL's attempts ({@code fetch}) or the
 * route: they import it, never the reverse.
 */
package io.tokenbucket.example.proxy;
