package io.tokenbucket.example.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.awt.image.BufferedImage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import javax.imageio.ImageIO;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The convergence figures and their plot, from made-up hits: no server, no clock. */
class ConvergenceTest {

    private static final long START = 5_000_000_000L;

    /** A page hit of {@code client} at {@code millis} after the start, with {@code status}. */
    private static DemoTarget.Hit hit(String client, long millis, int status) {
        return new DemoTarget.Hit(client, START + TimeUnit.MILLISECONDS.toNanos(millis), "/page/" + millis, status,
                null, "127.0.0.11", "127.0.0.2:1");
    }

    /**
     * p1 admits 4 per second for 14 s, p2 2 per second; a 429 in each of the first 2 seconds; 1 host, a hidden
     * limit of 4 per second per address: the fleet's 8/s.
     */
    private static Convergence run() {
        List<DemoTarget.Hit> hits = new ArrayList<>();
        for (int s = 0; s < 14; s++) {
            for (int i = 0; i < 4; i++) {
                hits.add(hit("p1", s * 1000L + i * 250, 200));
            }
            for (int i = 0; i < 2; i++) {
                hits.add(hit("p2", s * 1000L + i * 500 + 10, 200));
            }
            if (s < 2 || s == 11) {
                hits.add(hit("p2", s * 1000L + 900, 429));
            }
        }
        hits.add(new DemoTarget.Hit("p1", START + 100, "/status/204", 204, null, "127.0.0.11", "127.0.0.2:1"));
        return Convergence.of(hits, List.of("p1", "p2"), 4, 1);
    }

    @Test
    void theFiguresAreMeasuredPerSecondAtTheTarget() {
        Convergence c = run();
        assertThat(c.admittedByClient().get("p1")).hasSize(14).containsOnly(4);
        assertThat(c.admittedByClient().get("p2")).containsOnly(2);
        assertThat(c.tooMany()).startsWith(1, 1, 0).containsSequence(0, 1, 0).hasSize(14);
        assertThat(c.limitPerClient()).isEqualTo(4.0);
        // 6 of 8 per second in the steady windows (10 to 12; the 13th, the last, is left out)
        assertThat(c.shareUsedAfter10s()).isEqualTo(0.75);
        assertThat(c.share429()).isEqualTo(3.0 / (14 * 6 + 3));
        // of the steady windows' 19 page requests, the one 429 in second 11
        assertThat(c.share429After10s()).isEqualTo(1.0 / 19);
        assertThat(c.secondsTo90()).as("never 90 %").isEqualTo(-1);
        assertThat(c.summary()).contains("75 % of the hidden limit (8/s) used after 10 s", "with 5.3 % of those requests answered 429",
                "3.4 % of all 87 requests answered 429",
                "no 3 s in a row at 90 % of the limit");
    }

    @Test
    void ninetyPercentCountsOnlyWhenHeldForThreeSeconds() {
        List<DemoTarget.Hit> hits = new ArrayList<>();
        int[] perSecond = {4, 1, 4, 4, 4, 4, 1};
        for (int s = 0; s < perSecond.length; s++) {
            for (int i = 0; i < perSecond[s]; i++) {
                hits.add(hit("p1", s * 1000L + i * 200, 200));
            }
        }
        assertThat(Convergence.of(hits, List.of("p1"), 4, 1).secondsTo90()).isEqualTo(5);
        assertThatIllegalArgumentException().isThrownBy(() -> Convergence.of(hits, List.of("p1"), 0, 1));
    }

    @Test
    void thePlotIsAPngOfItsSizeWithEachSeriesInItsColourWhereItsPointsAre(@TempDir Path dir) throws Exception {
        Convergence c = run();
        ConvergencePlot plot = new ConvergencePlot(c, 800, 400);
        Path file = plot.write(dir.resolve("convergence.png"));

        BufferedImage image = ImageIO.read(file.toFile());
        assertThat(image).isNotNull();
        assertThat(image.getWidth()).isEqualTo(800);
        assertThat(image.getHeight()).isEqualTo(400);
        // p1 at 4/s in second 7 and p2 at 2/s: their lines' colours there (the lines are 3 px wide, and flat)
        assertThat(image.getRGB(plot.x(7), plot.y(4))).isEqualTo(ConvergencePlot.colour(0).getRGB());
        assertThat(image.getRGB(plot.x(7), plot.y(2))).isEqualTo(ConvergencePlot.colour(1).getRGB());
        // the 429 bar of second 0, half way up its height of 1
        assertThat(image.getRGB(plot.x(0), plot.y(0.5))).isEqualTo(ConvergencePlot.TOO_MANY.getRGB());
        // and no 429 bar where there was none: white under p2's line in second 7
        assertThat(image.getRGB(plot.x(7), plot.y(1))).isEqualTo(0xFFFFFFFF);
        assertThatIllegalArgumentException().isThrownBy(() -> new ConvergencePlot(c, 100_000, 400))
                .withMessageContaining("300 to 4000 pixels");
    }
}
