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

    private ReplayChart() {
    }

    /** {@code curves}: per policy name, the mean allocation rate (percent) at arrived 1..n percent. */
    public static void write(Map<String, double[]> curves, String title, Path png) throws IOException {
        XYChart chart = new XYChartBuilder().width(900).height(560).title(title)
                .xAxisTitle("arrived workload (% of GPU capacity)").yAxisTitle("GPU allocation rate (%)").build();
        Styler st = chart.getStyler();
        st.setLegendPosition(Styler.LegendPosition.InsideNW);
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
        for (Map.Entry<String, double[]> e : curves.entrySet()) {
            double[] y = e.getValue();
            XYSeries s = chart.addSeries(e.getKey(), java.util.Arrays.copyOf(x, y.length), y);
            s.setMarker(SeriesMarkers.NONE);
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
    public static double[] curve(Replay.Result r, int maxPercent) {
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
