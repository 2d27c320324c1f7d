package io.tokenbucket.example.demo;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import javax.imageio.ImageIO;

/**
 * Draws a {@link Convergence} as a PNG with plain Java2D and ImageIO (no chart library): each proxy's admitted
 * requests per second at the target as a line in its own colour ({@link #colour}), the target's 429s per second
 * as red bars, and the hidden limit of one proxy as a dashed grey line. The x axis is seconds from the first
 * request, the y axis requests per second. Headless: it never opens a window.
 *
 * <p>The plot area and its scales are public ({@link #x}, {@link #y}), so a test can find the pixel where a
 * point must be drawn.
 */
public final class ConvergencePlot {

    /** The colour of the 429 bars. */
    public static final Color TOO_MANY = new Color(0xD0, 0x20, 0x20);
    /** The colour of the hidden limit's line. */
    public static final Color LIMIT = new Color(0x80, 0x80, 0x80);

    private static final Color[] SERIES = {new Color(0x1F, 0x77, 0xB4), new Color(0x2C, 0xA0, 0x2C),
        new Color(0xFF, 0x7F, 0x0E), new Color(0x94, 0x67, 0xBD), new Color(0x8C, 0x56, 0x4B),
        new Color(0x17, 0xBE, 0xCF)};
    private static final int LEFT = 60;
    private static final int RIGHT = 150;
    private static final int TOP = 30;
    private static final int BOTTOM = 40;

    /** The smallest and largest image drawn, in pixels each way. */
    public static final int MIN_SIZE = 300;
    public static final int MAX_SIZE = 4000;

    private final Convergence run;
    private final int width;
    private final int height;
    private final int seconds;
    private final double top;

    /**
     * @param run    what to draw
     * @param width  the image's width in pixels, {@value #MIN_SIZE} to {@value #MAX_SIZE}
     * @param height the image's height in pixels, {@value #MIN_SIZE} to {@value #MAX_SIZE}
     */
    public ConvergencePlot(Convergence run, int width, int height) {
        if (width < MIN_SIZE || width > MAX_SIZE || height < MIN_SIZE || height > MAX_SIZE) {
            throw new IllegalArgumentException("a plot is " + MIN_SIZE + " to " + MAX_SIZE + " pixels each way, was "
                    + width + "x" + height);
        }
        this.run = run;
        this.width = width;
        this.height = height;
        this.seconds = Math.max(1, run.tooMany().length);
        long highest = 1;
        for (long[] series : run.admittedByClient().values()) {
            for (long v : series) {
                highest = Math.max(highest, v);
            }
        }
        for (long v : run.tooMany()) {
            highest = Math.max(highest, v);
        }
        this.top = Math.ceil(Math.max(highest, run.limitPerClient()) * 1.1);
    }

    /** The colour of the {@code index}th proxy's line (0 is p1). */
    public static Color colour(int index) {
        return SERIES[Math.floorMod(index, SERIES.length)];
    }

    /** The x pixel of the middle of window {@code second}. */
    public int x(double second) {
        return LEFT + (int) Math.round((second + 0.5) * (width - LEFT - RIGHT) / seconds);
    }

    /** The y pixel of {@code perSecond} requests per second. */
    public int y(double perSecond) {
        return height - BOTTOM - (int) Math.round(perSecond * (height - TOP - BOTTOM) / top);
    }

    /** Draws the plot. */
    public BufferedImage render() {
        BufferedImage image = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, height);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
            axes(g);
            long[] tooMany = run.tooMany();
            int barHalf = Math.max(1, (width - LEFT - RIGHT) / seconds / 4);
            g.setColor(TOO_MANY);
            for (int s = 0; s < tooMany.length; s++) {
                if (tooMany[s] > 0) {
                    g.fillRect(x(s) - barHalf, y(tooMany[s]), 2 * barHalf, y(0) - y(tooMany[s]));
                }
            }
            g.setColor(LIMIT);
            g.setStroke(new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f},
                    0f));
            g.drawLine(LEFT, y(run.limitPerClient()), width - RIGHT, y(run.limitPerClient()));
            g.setStroke(new BasicStroke(3f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND));
            int i = 0;
            List<String> legend = new ArrayList<>();
            for (Map.Entry<String, long[]> series : run.admittedByClient().entrySet()) {
                g.setColor(colour(i));
                long[] v = series.getValue();
                for (int s = 0; s < v.length; s++) {
                    int px = x(s);
                    int py = y(v[s]);
                    if (s + 1 < v.length) {
                        g.drawLine(px, py, x(s + 1), y(v[s + 1]));
                    } else {
                        g.drawLine(px, py, px, py);
                    }
                }
                legend.add(series.getKey());
                i++;
            }
            legend(g, legend);
        } finally {
            g.dispose();
        }
        return image;
    }

    private void axes(Graphics2D g) {
        g.setColor(Color.BLACK);
        g.drawLine(LEFT, TOP, LEFT, height - BOTTOM);
        g.drawLine(LEFT, height - BOTTOM, width - RIGHT, height - BOTTOM);
        int step = Math.max(1, seconds / 10);
        for (int s = 0; s <= seconds; s += step) {
            int px = LEFT + s * (width - LEFT - RIGHT) / seconds;
            g.drawLine(px, height - BOTTOM, px, height - BOTTOM + 4);
            text(g, Integer.toString(s), px - 4, height - BOTTOM + 17);
        }
        text(g, "seconds from the first request (1 s windows, measured at the target)", LEFT,
                height - 8);
        int yStep = (int) Math.max(1, Math.ceil(top / 8));
        for (int v = 0; v <= top; v += yStep) {
            g.drawLine(LEFT - 4, y(v), LEFT, y(v));
            text(g, Integer.toString(v), LEFT - 28, y(v) + 4);
        }
        text(g, "requests/s", 6, TOP - 10);
    }

    private void legend(Graphics2D g, List<String> names) {
        int lx = width - RIGHT + 15;
        int ly = TOP + 10;
        for (int i = 0; i < names.size(); i++, ly += 18) {
            g.setColor(colour(i));
            g.fillRect(lx, ly - 8, 14, 4);
            g.setColor(Color.BLACK);
            text(g, names.get(i) + " admitted", lx + 20, ly - 2);
        }
        g.setColor(TOO_MANY);
        g.fillRect(lx, ly - 10, 14, 8);
        g.setColor(Color.BLACK);
        text(g, "429s", lx + 20, ly - 2);
        ly += 18;
        g.setColor(LIMIT);
        g.fillRect(lx, ly - 8, 14, 2);
        g.setColor(Color.BLACK);
        text(g, String.format(Locale.ROOT, "hidden limit %.0f/s", run.limitPerClient()), lx + 20, ly - 2);
    }

    /**
     * Draws a label. A JVM without any font (a bare container) fails in its font system; the plot is then drawn
     * without labels rather than not at all.
     */
    private static void text(Graphics2D g, String text, int x, int y) {
        try {
            g.drawString(text, x, y);
        } catch (RuntimeException | InternalError noFonts) {
            // the lines and bars carry the data; the legend and the axes' figures are lost
        }
    }

    /**
     * Writes the plot as a PNG.
     *
     * @return {@code file}
     */
    public Path write(Path file) throws IOException {
        if (!ImageIO.write(render(), "png", file.toFile())) {
            throw new IOException("no PNG writer in this JVM");
        }
        return file;
    }
}
