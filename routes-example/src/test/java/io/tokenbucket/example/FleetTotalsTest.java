package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import io.tokenbucket.example.broker.BrokerQueue;
import io.tokenbucket.example.broker.BrokerSettings;
import io.tokenbucket.example.fetch.RedisLease;
import io.tokenbucket.example.proxy.ProxyStats;
import io.tokenbucket.testsupport.net.Ports;
import io.tokenbucket.testsupport.redis.RedisHandle;
import io.tokenbucket.testsupport.redis.RedisServers;
import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fleet's totals ({@link FleetTotals}) against a real {@code redis-server} that misbehaves between two reports:
 * an answer that comes too late (the server paused longer than the command timeout, so the call fails here while
 * the server still runs it), a connection killed, and a server killed and started again empty. Each instance's
 * totals must come out exact: counted once, never twice, and not lost with the server's data. The broker is not
 * reachable here (the URLs left are not part of the line).
 */
class FleetTotalsTest {

    @TempDir
    Path dir;

    private final List<CamelContext> contexts = new ArrayList<>();
    private RedisHandle redis;
    private RedisLease lease;

    @BeforeEach
    void start() {
        redis = RedisServers.standalone();
        lease = new RedisLease(redis.uri());
        lease.start();
    }

    @AfterEach
    void stop() throws Exception {
        lease.stop();
        for (CamelContext context : contexts) {
            context.close();
        }
        redis.close();
    }

    /** The fleet's totals of an instance that feeds queue {@code queue} (it sets them to zero as it starts). */
    private FleetTotals fleet(String queue, boolean feed) throws Exception {
        int closed = Ports.free();
        BrokerSettings settings = BrokerSettings.read((name, fallback) -> switch (name) {
            case "example.broker" -> "tcp://127.0.0.1:" + closed;
            case "example.brokerQueue" -> queue;
            case "example.brokerFeed" -> String.valueOf(feed);
            case "example.brokerRecord" -> "false";
            default -> fallback;
        });
        CamelContext context = new DefaultCamelContext();
        contexts.add(context);
        Properties properties = new Properties();
        properties.putAll(Map.of("example.results", "mock:results", "example.deadLetter", "mock:dead"));
        context.getPropertiesComponent().setOverrideProperties(properties);
        FleetTotals fleet = new FleetTotals(lease, BrokerQueue.install(context, settings, dir), 1000);
        fleet.start();
        return fleet;
    }

    private static void fetched(ProxyStats stats, int pages) {
        for (int i = 0; i < pages; i++) {
            stats.fetched("p1", 0, 10);
        }
    }

    @Test
    void anAnswerLostToATimeoutIsNotCountedTwice() throws Exception {
        FleetTotals fleet = fleet("lost.answer", true);
        ProxyStats stats = new ProxyStats();
        fetched(stats, 3);
        assertThat(fleet.report(stats)).startsWith("fleet: 3 fetched,");

        fetched(stats, 2);
        // the server holds every command for 2.5 s: the report's call times out after RedisLease.TIMEOUT_MILLIS, and
        // the server runs it once the pause ends
        redis.command("CLIENT", "PAUSE", "2500", "ALL");
        assertThat(fleet.report(stats)).as("a report without an answer").doesNotContain("fetched");
        ScraperHarness.awaitUntil("the pause's end", () -> redis.command("PING"), "PONG"::equals,
                Duration.ofSeconds(20));

        assertThat(fleet.report(stats)).startsWith("fleet: 5 fetched,");
        // the connection dropped (Lettuce connects again): nothing it had sent is sent twice
        fetched(stats, 1);
        redis.command("CLIENT", "KILL", "TYPE", "normal");
        assertThat(ScraperHarness.awaitUntil("a report after the reconnect", () -> fleet.report(stats),
                line -> line.contains("fetched"), Duration.ofSeconds(20))).startsWith("fleet: 6 fetched,");
        assertThat(fleet.report(stats)).startsWith("fleet: 6 fetched,");
    }

    @Test
    void aRedisStartedAgainEmptyGetsEveryInstancesTotalsBack() throws Exception {
        FleetTotals feeder = fleet("restarted", true);
        FleetTotals peer = fleet("restarted", false);
        ProxyStats feederStats = new ProxyStats();
        ProxyStats peerStats = new ProxyStats();
        fetched(feederStats, 4);
        fetched(peerStats, 3);
        peerStats.deadLetter();
        feeder.report(feederStats);
        assertThat(peer.report(peerStats)).startsWith("fleet: 7 fetched,").contains(" 1 dead letters");

        redis.stop();
        fetched(feederStats, 1);
        assertThat(feeder.report(feederStats)).as("a report without Redis").doesNotContain("fetched");
        redis.start();
        ScraperHarness.awaitUntil("the example's connection back", () -> lease.commands() != null
                && peer.report(peerStats).contains("fetched"), Boolean::booleanValue, Duration.ofSeconds(20));

        assertThat(feeder.report(feederStats)).startsWith("fleet: 8 fetched,").contains(" 1 dead letters");
    }
}
