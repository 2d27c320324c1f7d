package io.tokenbucket.camel;

import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The component option {@code timerSpinMicros}: any value from 0 (never spin) to one second releases waiting
 * exchanges no earlier than their slot; a value outside fails the start, naming the option and the value.
 */
class TokenBucketTimerOptionTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(longs = {0, 200, 1_000_000})
    void everySpinMarginReleasesWaitersNoEarlierThanTheirSlot(long spinMicros) throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            TokenBucketComponent component = new TokenBucketComponent();
            component.setTimerSpinMicros(spinMicros);
            context.addComponent("tokenbucket", component);
            context.start();
            ProducerTemplate template = context.createProducerTemplate();
            String uri = "tokenbucket:spin?capacity=1&refillPeriod=40ms&maxWait=5s";
            long began = System.nanoTime();
            for (int i = 0; i < 3; i++) {
                Exchange done = template.request(uri, e -> { });
                assertThat(done.getException()).isNull();
            }
            // a burst of one, then one every 40 ms: the third is due 80 ms after the first
            assertThat(System.nanoTime() - began).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(80));
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(longs = {-1, 1_000_001, Long.MAX_VALUE, Long.MIN_VALUE})
    void aSpinMarginOutsideZeroToOneSecondIsRefused(long spinMicros) {
        TokenBucketComponent component = new TokenBucketComponent();
        assertThatThrownBy(() -> component.setTimerSpinMicros(spinMicros)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("timerSpinMicros must be from 0 to 1000000 microseconds, was " + spinMicros);
        assertThat(component.getTimerSpinMicros()).isEqualTo(200);
    }
}
