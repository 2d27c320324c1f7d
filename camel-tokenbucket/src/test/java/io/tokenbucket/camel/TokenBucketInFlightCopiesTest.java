package io.tokenbucket.camel;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.camel.Exchange;
import org.apache.camel.RoutesBuilder;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * In-flight slots of exchanges that are copied (split, multicast, wire tap) or handed over (seda): a copy holds none
 * of the original's slots, so its {@code release} gives back only its own, and a slot handed over with the unit of
 * work comes back once, when the exchange that carries it ends.
 */
class TokenBucketInFlightCopiesTest extends TokenBucketTestSupport {

    private static final String NESTED = "tokenbucket:nested?keyHeader=k&maxInFlight=1&mode=reject";
    private final List<Long> seen = new CopyOnWriteArrayList<>();
    private final CountDownLatch sedaGate = new CountDownLatch(1);

    @Override
    protected RoutesBuilder createRouteBuilder() {
        return new RouteBuilder() {
            @Override
            public void configure() {
                // the parent takes a slot of key "outer"; each part of its split takes and gives back one of "inner"
                from("direct:split").setHeader("k", constant("outer")).to(NESTED)
                        .split(body())
                            .setHeader("k", constant("inner")).to(NESTED)
                            .setHeader(TokenBucketConstants.OPERATION, constant("release")).to(NESTED)
                            .removeHeader(TokenBucketConstants.OPERATION)
                        .end()
                        .setHeader("k", constant("outer"))
                        .process(e -> seen.add(freeSlots("outer"))); // the parent still holds its slot here
                // a wire tap's copy that releases: the original's slot is not its to give back
                from("direct:tap").setHeader("k", constant("tapped")).to(NESTED)
                        .wireTap("direct:tapped")
                        .process(e -> {
                            await().atMost(10, TimeUnit.SECONDS).until(() -> !seen.isEmpty());
                            seen.add(freeSlots("tapped"));
                        });
                from("direct:tapped").setHeader(TokenBucketConstants.OPERATION, constant("release")).to(NESTED)
                        .process(e -> seen.add(-1L));
                // handed over to seda: the slot comes back when the seda route ends, once
                from("direct:handover").setHeader("k", constant("handed")).to(NESTED).to("seda:after");
                from("seda:after").process(e -> sedaGate.await(10, TimeUnit.SECONDS));
            }
        };
    }

    private long freeSlots(String key) {
        Exchange peek = template.request(NESTED, e -> {
            e.getMessage().setHeader(TokenBucketConstants.OPERATION, "peek");
            e.getMessage().setHeader("k", key);
        });
        return peek.getMessage().getHeader(TokenBucketConstants.REMAINING, Long.class);
    }

    @Test
    void thePartsOfASplitGiveBackTheirOwnSlotsNotTheParents() {
        Exchange done = template.request("direct:split", e -> e.getMessage().setBody(List.of(1, 2, 3)));
        assertThat(done.getException()).isNull();
        assertThat(seen).containsExactly(0L); // "outer" still held by the parent after its parts released
        assertThat(freeSlots("outer")).isEqualTo(1);
        assertThat(freeSlots("inner")).isEqualTo(1);
        assertThat(context.getEndpoint(NESTED, TokenBucketEndpoint.class).getInFlightCount()).isZero();
    }

    @Test
    void aWireTapsCopyDoesNotReleaseTheOriginalsSlot() {
        Exchange done = template.request("direct:tap", e -> e.getMessage().setBody("x"));
        assertThat(done.getException()).isNull();
        assertThat(seen).containsExactly(-1L, 0L);
        assertThat(freeSlots("tapped")).isEqualTo(1);
    }

    @Test
    void aSlotHandedOverToSedaComesBackOnceWhenTheSedaRouteEnds() throws Exception {
        Exchange first = template.send("direct:handover", e -> e.getMessage().setBody("a")); // in only: handed over
        assertThat(first.getException()).isNull();
        assertThat(freeSlots("handed")).isZero(); // the seda route runs on with it
        Future<Exchange> refused = template.asyncSend("direct:handover", e -> e.getMessage().setBody("b"));
        assertThat(refused.get(10, TimeUnit.SECONDS).getException()).isInstanceOf(TokenBucketRejectedException.class);
        sedaGate.countDown();
        await().atMost(10, TimeUnit.SECONDS).until(() -> freeSlots("handed") == 1);
        TokenBucketEndpoint endpoint = context.getEndpoint(NESTED, TokenBucketEndpoint.class);
        await().atMost(10, TimeUnit.SECONDS).until(() -> endpoint.getInFlightCount() == 0);
        assertThat(freeSlots("handed")).isEqualTo(1);
    }
}
