/**
 * Real {@code redis-server} processes for tests and benchmark drivers: {@link RedisServers} starts a standalone
 * server (plain, with a password, or TLS-only with the test certificates of {@link RedisTls}) or a Redis Cluster of
 * masters on loopback, and hands back a {@link RedisHandle} or {@link RedisClusterHandle} that stops, restarts and
 * kills it. Shared by the component's tests, the starter's, the example's, src-it and the benchmarks; it knows
 * nothing of the component.
 */
package io.tokenbucket.testsupport.redis;
