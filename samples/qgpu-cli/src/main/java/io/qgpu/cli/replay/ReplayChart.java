package io.qgpu.cli.replay;

import java.awt.Color;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The replay's chart: GPU allocation rate (mean over the seeds) against arrived workload, one line
 * per policy, with the ideal (allocation = arrived, up to 100%) for reference.
 *
 * <p>Thread safety: stateless.
 */
public final class ReplayChart {

    /** One colour per policy (colour-blind-safe palette), then a marker shape and a line style each. */
    private static final Color[] COLOURS = {new Color(0x00, 0x72, 0xB2), new Color(0xE6, 0x9F, 0x00), new Color(0x00, 0x9E, 0x73),
        new Color(0xCC, 0x79, 0xA7), new Color(0xD5, 0x5E, 0x00), new Color(0x56, 0xB4, 0xE9), Color.BLACK};
    private static final org.knowm.xchart.style.markers.Marker[] MARKERS = {SeriesMarkers.CIRCLE, SeriesMarkers.SQUARE,
        SeriesMarkers.DIAMOND, SeriesMarkers.TRIANGLE_UP, SeriesMarkers.TRIANGLE_DOWN, SeriesMarkers.CROSS, SeriesMarkers.PLUS};
    private static final java.awt.BasicStroke[] LINES = {org.knowm.xchart.style.lines.SeriesLines.SOLID,
        org.knowm.xchart.style.lines.SeriesLines.DASH_DASH, org.knowm.xchart.style.lines.SeriesLines.DOT_DOT,
        org.knowm.xchart.style.lines.SeriesLines.DASH_DOT};
    /** A marker every this many points (percent of arrived workload). */
    static final int MARK_EVERY = 10;

    private ReplayChart() {
    }

    /** {@code curves}: per policy name, the mean allocation rate (percent) at arrived 1..n percent. */
    public static void write(Map<String, double[]> curves, String title, Path png) throws IOException {
        XYChart chart = new XYChartBuilder().width(900).height(560).title(title)
                .xAxisTitle("arrived workload (% of GPU capacity)").yAxisTitle("GPU allocation rate (%)").build();
        Styler st = chart.getStyler();
        st.setLegendPosition(Styler.LegendPosition.InsideSE);
        st.setMarkerSize(8);
        st.setChartBackgroundColor(Color.WHITE);
        st.setPlotBackgroundColor(Color.WHITE);
        int n = 0;
        for (double[] c : curves.values()) {
            n = Math.max(n, c.length);
        }
        double[] x = new double[n];
        double[] ideal = new double[n];
        for (int i = 0; i < n; i++) {
            x[i] = i + 1;
            ideal[i] = Math.min(100, i + 1);
        }
        XYSeries id = chart.addSeries("ideal", x, ideal);
        id.setMarker(SeriesMarkers.NONE);
        id.setLineColor(Color.LIGHT_GRAY);
        int k = 0;
        for (Map.Entry<String, double[]> e : curves.entrySet()) {
            double[] y = e.getValue();
            Color colour = COLOURS[k % COLOURS.length];
            // the whole curve as a line (no legend entry) ...
            XYSeries line = chart.addSeries(e.getKey() + " ", java.util.Arrays.copyOf(x, y.length), y);
            line.setMarker(SeriesMarkers.NONE);
            line.setLineColor(colour);
            line.setLineStyle(LINES[k % LINES.length]);
            line.setShowInLegend(false);
            // ... and a marker every MARK_EVERY points, in the same colour: the legend shows both
            int marks = (y.length + MARK_EVERY - 1) / MARK_EVERY;
            double[] mx = new double[marks];
            double[] my = new double[marks];
            for (int m = 0; m < marks; m++) {
                int i = Math.min(y.length - 1, m * MARK_EVERY + (k * 2) % MARK_EVERY);   // staggered: marks of equal curves do not hide each other
                mx[m] = x[i];
                my[m] = y[i];
            }
            XYSeries s = chart.addSeries(e.getKey(), mx, my);
            s.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
            s.setMarker(MARKERS[k % MARKERS.length]);
            s.setMarkerColor(colour);
            s.setLineColor(colour);
            k++;
        }
        Path parent = png.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        try (OutputStream os = Files.newOutputStream(png)) {
            BitmapEncoder.saveBitmap(chart, os, BitmapEncoder.BitmapFormat.PNG);
        }
    }

    /** The allocation rate (percent) at arrived 1..max percent, from one replay. */
    public static double[] curve(TraceReplay.Result r, int maxPercent) {
        double[] y = new double[maxPercent];
        for (int p = 1; p <= maxPercent; p++) {
            y[p - 1] = 100.0 * r.allocationAt(p / 100.0);
        }
        return y;
    }

    /** Pointwise mean of curves of equal length. */
    public static double[] mean(List<double[]> curves) {
        double[] m = new double[curves.get(0).length];
        for (double[] c : curves) {
            for (int i = 0; i < m.length; i++) {
                m[i] += c[i] / curves.size();
            }
        }
        return m;
    }
}
