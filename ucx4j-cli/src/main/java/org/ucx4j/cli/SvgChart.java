package org.ucx4j.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A line chart as inline SVG text, with no script and nothing fetched: a log2 x axis with labelled
 * ticks, a linear or log10 y axis, one polyline and dots (with a tooltip each) per series, and a legend.
 * Enough for the demo's page, so that the page needs no charting library.
 *
 * @param title the chart's title
 * @param xLabel the x axis's name
 * @param yLabel the y axis's name
 * @param logY a log10 y axis (for values over several decades) instead of a linear one from 0
 * @param xTicks the x values to mark, with their labels
 * @param series the lines
 */
record SvgChart(String title, String xLabel, String yLabel, boolean logY, List<Tick> xTicks, List<Series> series) {
    private static final int WIDTH = 760;
    private static final int HEIGHT = 400;
    private static final int LEFT = 90;
    private static final int RIGHT = 30;
    private static final int TOP = 60;
    private static final int BOTTOM = 70;

    /**
     * A marked x value.
     *
     * @param x the value (positive)
     * @param label its text
     */
    record Tick(double x, String label) {}

    /**
     * One line.
     *
     * @param name the legend's text
     * @param color a CSS colour
     * @param xs x values (positive)
     * @param ys y values; NaN, and for a log axis anything not positive, is left out
     */
    record Series(String name, String color, double[] xs, double[] ys) {}

    /** The SVG element. */
    String render() {
        double[] xr = xRange();
        double[] yr = yRange();
        StringBuilder s = new StringBuilder();
        s.append(String.format(
                Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" "
                        + "height=\"%d\" role=\"img\" aria-label=\"%s\" font-family=\"sans-serif\" font-size=\"12\">%n",
                WIDTH,
                HEIGHT,
                WIDTH,
                HEIGHT,
                esc(title)));
        s.append(String.format(
                Locale.ROOT, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>%n", WIDTH, HEIGHT));
        s.append(String.format(
                Locale.ROOT,
                "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" " + "font-weight=\"bold\">%s</text>%n",
                WIDTH / 2,
                esc(title)));
        // y grid and labels
        for (double v : yTicks(yr)) {
            double y = py(v, yr);
            s.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>%n",
                    LEFT,
                    y,
                    WIDTH - RIGHT,
                    y));
            s.append(String.format(
                    Locale.ROOT,
                    "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
                    LEFT - 6,
                    y + 4,
                    esc(number(v))));
        }
        // x grid and labels
        for (Tick t : xTicks) {
            double x = px(t.x(), xr);
            s.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>%n",
                    x,
                    TOP,
                    x,
                    HEIGHT - BOTTOM));
            s.append(String.format(
                    Locale.ROOT,
                    "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                    x,
                    HEIGHT - BOTTOM + 18,
                    esc(t.label())));
        }
        // axes
        s.append(String.format(
                Locale.ROOT,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>%n",
                LEFT,
                HEIGHT - BOTTOM,
                WIDTH - RIGHT,
                HEIGHT - BOTTOM));
        s.append(String.format(
                Locale.ROOT,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>%n",
                LEFT,
                TOP,
                LEFT,
                HEIGHT - BOTTOM));
        s.append(String.format(
                Locale.ROOT,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                (LEFT + WIDTH - RIGHT) / 2,
                HEIGHT - 22,
                esc(xLabel)));
        s.append(String.format(
                Locale.ROOT,
                "<text transform=\"translate(18,%d) rotate(-90)\" text-anchor=\"middle\">%s</text>%n",
                (TOP + HEIGHT - BOTTOM) / 2,
                esc(yLabel + (logY ? " (log scale)" : ""))));
        // series
        int legendX = LEFT;
        for (Series line : series) {
            List<String> points = new ArrayList<>();
            StringBuilder dots = new StringBuilder();
            for (int i = 0; i < line.xs().length; i++) {
                double v = line.ys()[i];
                if (!usable(v)) {
                    continue;
                }
                double x = px(line.xs()[i], xr);
                double y = py(v, yr);
                points.add(String.format(Locale.ROOT, "%.1f,%.1f", x, y));
                dots.append(String.format(
                        Locale.ROOT,
                        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>%s: %s</title>" + "</circle>%n",
                        x,
                        y,
                        line.color(),
                        esc(line.name() + " " + label(line.xs()[i])),
                        esc(number(v))));
            }
            if (points.size() > 1) {
                s.append(String.format(
                        Locale.ROOT,
                        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>%n",
                        line.color(),
                        String.join(" ", points)));
            }
            s.append(dots);
            // The legend: one row above the plot, so that it never hides a point.
            s.append(String.format(
                    Locale.ROOT,
                    "<rect x=\"%d\" y=\"40\" width=\"14\" height=\"4\" fill=\"%s\"/>%n",
                    legendX,
                    line.color()));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"46\">%s</text>%n", legendX + 20, esc(line.name())));
            legendX += 30 + 8 * line.name().length();
        }
        s.append("</svg>\n");
        return s.toString();
    }

    private String label(double x) {
        for (Tick t : xTicks) {
            if (t.x() == x) {
                return t.label();
            }
        }
        return number(x);
    }

    private boolean usable(double v) {
        return Double.isFinite(v) && (!logY || v > 0);
    }

    private double[] xRange() {
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (Tick t : xTicks) {
            lo = Math.min(lo, log2(t.x()));
            hi = Math.max(hi, log2(t.x()));
        }
        for (Series line : series) {
            for (double x : line.xs()) {
                lo = Math.min(lo, log2(x));
                hi = Math.max(hi, log2(x));
            }
        }
        if (!(hi > lo)) {
            lo = Double.isFinite(lo) ? lo - 1 : 0;
            hi = lo + 2;
        }
        double pad = (hi - lo) * 0.04;
        return new double[] {lo - pad, hi + pad};
    }

    private double[] yRange() {
        double lo = Double.POSITIVE_INFINITY;
        double hi = Double.NEGATIVE_INFINITY;
        for (Series line : series) {
            for (double v : line.ys()) {
                if (usable(v)) {
                    lo = Math.min(lo, v);
                    hi = Math.max(hi, v);
                }
            }
        }
        if (logY) {
            if (!Double.isFinite(lo)) {
                return new double[] {0, 1};
            }
            double a = Math.floor(Math.log10(lo));
            double b = Math.ceil(Math.log10(hi));
            return new double[] {a, b > a ? b : a + 1};
        }
        if (!Double.isFinite(hi) || hi <= 0) {
            return new double[] {0, 1};
        }
        return new double[] {0, niceStep(hi / 5) * Math.ceil(hi / niceStep(hi / 5))};
    }

    private List<Double> yTicks(double[] yr) {
        List<Double> ticks = new ArrayList<>();
        if (logY) {
            for (double e = yr[0]; e <= yr[1] + 1e-9; e++) {
                ticks.add(Math.pow(10, e));
            }
        } else {
            double step = niceStep(yr[1] / 5);
            for (double v = 0; v <= yr[1] + step * 1e-9; v += step) {
                ticks.add(v);
            }
        }
        return ticks;
    }

    /** 1, 2 or 5 times a power of ten, at least {@code raw}. */
    static double niceStep(double raw) {
        double p = Math.pow(10, Math.floor(Math.log10(raw)));
        for (double m : new double[] {1, 2, 5, 10}) {
            if (m * p >= raw) {
                return m * p;
            }
        }
        return 10 * p;
    }

    private double px(double x, double[] xr) {
        return LEFT + (log2(x) - xr[0]) / (xr[1] - xr[0]) * (WIDTH - LEFT - RIGHT);
    }

    private double py(double v, double[] yr) {
        double f = logY ? (Math.log10(v) - yr[0]) / (yr[1] - yr[0]) : (v - yr[0]) / (yr[1] - yr[0]);
        return HEIGHT - BOTTOM - f * (HEIGHT - TOP - BOTTOM);
    }

    private static double log2(double x) {
        return Math.log(x) / Math.log(2);
    }

    /** A value for a label: grouped thousands, decimals only below 10. */
    static String number(double v) {
        if (v != 0 && Math.abs(v) < 10) {
            return String.format(Locale.ROOT, "%.2f", v).replaceAll("\\.?0+$", "");
        }
        return String.format(Locale.ROOT, "%,.0f", v);
    }

    /** Escapes text for XML and HTML. */
    static String esc(String text) {
        StringBuilder b = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }
}
