package io.tokenbucket.example.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Round robin, health, cooldown, penalty and reloading, on a fake clock: no sleeps. The pool keeps the pairs' rests
 * itself ({@link PoolRests}, as without the throttle) unless a test says otherwise.
 */
class ProxyPoolTest {

    private final AtomicLong nanos = new AtomicLong(1_000);
    private final List<String> bucketCalls = new ArrayList<>();
    private final ProxyBuckets buckets = recording(new PoolRests(nanos::get));

    /** Records what it is told, and keeps the rests as {@code keeper} does. */
    private ProxyBuckets recording(ProxyBuckets keeper) {
        return new ProxyBuckets() {
            @Override
            public void penalize(String proxyId, String host, long millis) {
                bucketCalls.add("penalize " + proxyId + " " + host + " " + millis);
                keeper.penalize(proxyId, host, millis);
            }

            @Override
            public long restingNanos(String proxyId, String host) {
                return keeper.restingNanos(proxyId, host);
            }

            @Override
            public int restingHosts(String proxyId) {
                return keeper.restingHosts(proxyId);
            }
        };
    }

    private ProxyPool pool(ProxySource source) {
        return new ProxyPool(source, 2, 5_000, buckets, nanos::get);
    }

    private static ProxySource three() {
        return ProxySource.text("http://u:pw@h:1 id=p1, http://h:2 id=p2, http://h:3 id=p3");
    }

    @Test
    void handsOutTheProxiesInRoundRobinAndPrefersUntriedOnes() {
        ProxyPool pool = pool(three());
        assertThat(IntStream.range(0, 4).mapToObj(i -> pool.choose(Set.of()).id())).containsExactly("p1", "p2",
                "p3", "p1");
        assertThat(pool.choose(Set.of("p2", "p3")).id()).isEqualTo("p1"); // p2's turn, but this URL tried it
        assertThat(pool.choose(Set.of("p1", "p2", "p3"))).isNotNull(); // all tried: one again rather than wait
    }

    @Test
    void offersTheAvailableUntriedProxiesAsCandidatesTakingTurnsAtTheHead() {
        ProxyPool pool = pool(three());
        assertThat(pool.candidates(Set.of())).containsExactly("p1", "p2", "p3");
        assertThat(pool.candidates(Set.of())).containsExactly("p2", "p3", "p1"); // equals are not always p1
        assertThat(pool.candidates(Set.of("p1"))).containsExactlyInAnyOrder("p2", "p3");
        pool.penalize("p2", "a.example", 1_000);
        assertThat(pool.candidates(Set.of("p1"), "a.example")).containsExactly("p3");
        assertThat(pool.candidates(Set.of("p1", "p3"), "a.example")).containsExactlyInAnyOrder("p1", "p3");
        assertThat(pool.candidates(Set.of("p1"), "b.example")).as("another host: p2 is fine there")
                .containsExactlyInAnyOrder("p2", "p3");
        pool.penalize("p1", "a.example", 1_000);
        pool.penalize("p3", "a.example", 1_000);
        assertThat(pool.candidates(Set.of(), "a.example")).isEmpty();
        assertThat(pool.candidates(Set.of(), "b.example")).hasSize(3);
    }

    @Test
    void consecutiveFailuresMakeAProxyUnhealthyUntilTheCooldownThenItIsProbed() {
        ProxyPool pool = pool(three());
        pool.failure("p2", "refused");
        pool.success("p2"); // the streak is broken
        pool.failure("p2", "refused");
        assertThat(pool.health().get("p2")).isEqualTo("healthy");
        pool.failure("p2", "refused");
        assertThat(pool.health().get("p2")).startsWith("DOWN");
        // its bucket is left alone: turns booked on it stay booked, a penalty stored by another instance stays
        assertThat(bucketCalls).isEmpty();
        assertThat(IntStream.range(0, 6).mapToObj(i -> pool.choose(Set.of()).id())).doesNotContain("p2");

        nanos.addAndGet(TimeUnit.SECONDS.toNanos(5));
        assertThat(pool.health().get("p2")).isEqualTo("probing");
        assertThat(IntStream.range(0, 3).mapToObj(i -> pool.choose(Set.of()).id())).contains("p2");
        pool.failure("p2", "refused again"); // a failed probe: straight back to the cooldown
        assertThat(pool.health().get("p2")).startsWith("DOWN");
    }

    @Test
    void aPenaltyRestsTheProxyForThatHostOnlyAndWhenAllRestTheWaitIsKnown() {
        ProxyPool pool = new ProxyPool(ProxySource.text("http://h:1 id=p1"), 2, 5_000, buckets, nanos::get);
        assertThat(pool.penalize("p1", "a.example", 1_500)).as("a first 429 rests what it asks").isEqualTo(1_500);
        assertThat(pool.choose(Set.of(), "a.example")).isNull();
        assertThat(pool.millisUntilAvailable("a.example")).isEqualTo(1_500);
        assertThat(pool.choose(Set.of(), "b.example").id()).isEqualTo("p1");
        assertThat(pool.millisUntilAvailable("b.example")).isZero();
        assertThat(pool.health().get("p1")).isEqualTo("healthy, rests on 1 host");
        assertThat(bucketCalls).as("the pair's bucket, not the proxy's").containsExactly("penalize p1 a.example 1500");
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(1_500));
        assertThat(pool.choose(Set.of(), "a.example").id()).isEqualTo("p1");
    }

    @Test
    void withTheThrottleTheRestIsThePairsBucketsAloneAndThePoolStillOffersTheProxy() {
        // the seam of the application with the throttle: the buckets keep the rests, the pool none beside them
        ProxyPool pool = new ProxyPool(ProxySource.text("http://h:1 id=p1, http://h:2 id=p2"), 2, 5_000,
                recording(ProxyBuckets.NONE), nanos::get,
                new RestBackoff.Policy(1_000, 60_000, 10_000, RestBackoffTest.highest()));
        assertThat(pool.penalize("p1", "a.example", 1_500)).as("the backoff still says how long").isEqualTo(1_500);
        assertThat(bucketCalls).containsExactly("penalize p1 a.example 1500");
        assertThat(pool.candidates(Set.of(), "a.example")).as("the throttle passes the resting pair by, not the pool")
                .containsExactlyInAnyOrder("p1", "p2");
        assertThat(pool.millisUntilAvailable("a.example")).isZero();
        assertThat(pool.health()).containsEntry("p1", "healthy");
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(500));
        assertThat(pool.penalize("p1", "a.example", 1_000)).as("repeated: the pool's backoff grows it")
                .isEqualTo(4_500);
        assertThat(bucketCalls).containsExactly("penalize p1 a.example 1500", "penalize p1 a.example 4500");
    }

    @Test
    void thePoolsOwnRestsKeepTheLongerOfARunningRestAndANewPenalty() {
        PoolRests rests = new PoolRests(nanos::get);
        rests.penalize("p1", "a.example", 3_000);
        rests.penalize("p1", "a.example", 1_000);
        assertThat(rests.restingNanos("p1", "a.example")).isEqualTo(TimeUnit.MILLISECONDS.toNanos(3_000));
        rests.penalize("p1", "b.example", 1_000);
        rests.penalize("p1", "b.example", 2_000);
        assertThat(rests.restingNanos("p1", "b.example")).isEqualTo(TimeUnit.MILLISECONDS.toNanos(2_000));
        assertThat(rests.restingNanos("p2", "a.example")).isZero();
        assertThat(rests.restingHosts("p1")).isEqualTo(2);
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(2_000));
        assertThat(rests.restingHosts("p1")).as("b.example's rest is over").isEqualTo(1);
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(1_000));
        assertThat(rests.restingHosts("p1")).isZero();
        assertThat(rests.restingNanos("p1", "a.example")).isZero();
    }

    @Test
    void thePoolsOwnRestsForgetEndedRestsOfProxiesThatLeftTheFile() {
        // a rotating proxy file: every proxy rests once on one host, then leaves the file and is never asked about
        // again; neither the pool's turn nor its health word reads its rests any more
        PoolRests rests = new PoolRests(nanos::get);
        int proxies = 20_000;
        for (int i = 0; i < proxies; i++) {
            rests.penalize("gone" + i, "a.example", 1_000);
            nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(10));
        }
        rests.penalize("p1", "a.example", 60_000);
        assertThat(rests.pairs()).as("pairs remembered: the rests running and a bounded few that ended")
                .isLessThanOrEqualTo(2 * 101 + PoolRests.SWEEP_MIN);
        assertThat(rests.restingNanos("p1", "a.example")).isEqualTo(TimeUnit.MILLISECONDS.toNanos(60_000));
        assertThat(rests.restingNanos("gone" + (proxies - 1), "a.example")).as("still resting: kept")
                .isEqualTo(TimeUnit.MILLISECONDS.toNanos(990));
    }

    @Test
    void aPairRefusedAgainSoonRestsLongerAndAQuietPeriodForgives() {
        // a generator whose every draw is its highest: the rest is the decorrelated jitter's ceiling
        ProxyPool pool = new ProxyPool(ProxySource.text("http://h:1 id=p1"), 2, 5_000, buckets, nanos::get,
                new RestBackoff.Policy(1_000, 60_000, 10_000, RestBackoffTest.highest()));
        assertThat(pool.penalize("p1", "a.example", 1_000)).isEqualTo(1_000);
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(1_000));
        assertThat(pool.penalize("p1", "a.example", 1_000)).isEqualTo(3_000);
        assertThat(pool.millisUntilAvailable("a.example")).isEqualTo(3_000);
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(3_000 + 10_000)); // rested, then quiet for 10 s
        assertThat(pool.penalize("p1", "a.example", 1_000)).as("forgiven").isEqualTo(1_000);
        assertThat(bucketCalls).containsExactly("penalize p1 a.example 1000", "penalize p1 a.example 3000",
                "penalize p1 a.example 1000");
    }

    @Test
    void aChangedProxyFileTakesEffectAndKeepsTheHealthOfProxiesThatStay(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("proxies.txt"), "http://h:1 id=p1\nhttp://h:2 id=p2\n");
        ProxyPool pool = pool(ProxySource.file(file));
        pool.failure("p1", "x");
        pool.failure("p1", "x");
        Files.writeString(file, "# p2 removed, p3 added\nhttp://h:1 id=p1\nhttp://h:3 id=p3 limit=7/2s\n");

        pool.refresh();

        assertThat(pool.ids()).containsExactly("p1", "p3");
        assertThat(pool.health()).containsEntry("p3", "healthy").hasEntrySatisfying("p1",
                h -> assertThat(h).startsWith("DOWN"));
        assertThat(pool.config("p3").capacity()).isEqualTo(7);
        assertThat(pool.config("p3").refillPeriodMs()).isEqualTo(2_000);
        // p2 keeps its bucket: another instance may still use it, and it expires by itself once full
        assertThat(bucketCalls).isEmpty();

        Files.writeString(file, "not a proxy\n");
        pool.refresh(); // a broken edit is ignored: the scraper keeps the proxies it has
        assertThat(pool.ids()).containsExactly("p1", "p3");
    }

    @Test
    void parsesProxyLinesAndNeverShowsThePassword() {
        ProxyConfig config = ProxyConfig.parse("http://scraper:p%40ss@10.0.0.7:3128 limit=5/1s");
        assertThat(config.id()).isEqualTo("10.0.0.7:3128");
        assertThat(config.password()).isEqualTo("p@ss");
        assertThat(config.toString()).isEqualTo("10.0.0.7:3128=http://scraper:***@10.0.0.7:3128")
                .doesNotContain("p@ss");
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyConfig.parse("ftp://u:secret@h:1"))
                .withMessageContaining("u:***@").withMessageNotContaining("secret");
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyConfig.parse("http://u:secret@h:1 speed=9"))
                .withMessageContaining("speed=9").withMessageNotContaining("secret");
        assertThatIllegalArgumentException().isThrownBy(() -> pool(ProxySource.text("http://h:1 id=a, http://h:2 id=a")))
                .withMessageContaining("appears twice");
    }
}
