/**
 * Real {@code redis-server} processes for tests and benchmark drivers: {@link RedisServers} starts a standalone
 * server (plain, with a password, or TLS-only with the test certificates of {@link RedisTls}), a Redis Cluster of
 * masters, or a Sentinel setup (master, replica, three Sentinels) on loopback, and hands back a {@link RedisHandle},
 * {@link RedisClusterHandle} or {@link RedisSentinelHandle} that stops, restarts and kills it. Shared by the component's tests, the starter's, the example's, src-it and the benchmarks; it knows
 * nothing of the component.
 */
package io.tokenbucket.testsupport.redis;
