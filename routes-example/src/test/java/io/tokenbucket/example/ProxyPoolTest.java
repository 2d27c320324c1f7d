package io.tokenbucket.example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.List;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

/** The round robin and the validation of {@code example.proxies}. */
class ProxyPoolTest {

    @Test
    void handsOutTheProxiesInRoundRobin() {
        ProxyPool pool = ProxyPool.parse("p1,p2,p3");
        assertThat(IntStream.range(0, 7).mapToObj(i -> pool.next()))
                .containsExactly("p1", "p2", "p3", "p1", "p2", "p3", "p1");
    }

    @Test
    void parseTrimsIdsAndSkipsEmptyParts() {
        assertThat(ProxyPool.parse(" a , b,,c ").ids()).containsExactly("a", "b", "c");
    }

    @Test
    void rejectsNoProxiesBlanksAndDuplicates() {
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyPool.parse(" , "))
                .withMessageContaining("example.proxies");
        assertThatIllegalArgumentException().isThrownBy(() -> new ProxyPool(List.of("a", " ")))
                .withMessageContaining("blank");
        assertThatIllegalArgumentException().isThrownBy(() -> ProxyPool.parse("a,b,a"))
                .withMessageContaining("repeat");
    }
}
