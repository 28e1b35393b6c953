package io.qgpu.cli;

import io.qgpu.testkit.sim.ReleaseComparison;
import java.awt.Color;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Offline GPU share against online wait p99 for each release rule: the fixed delays as a line (the
 * frontier they trace), the adaptive rule as one marked point. Up and to the left is better.
 */
final class ParetoChart {

    private ParetoChart() {
    }

    static void write(ReleaseComparison c, Path png) throws IOException {
        List<ReleaseComparison.Point> fixed = c.fixed();
        double[] x = new double[fixed.size()];
        double[] y = new double[fixed.size()];
        for (int i = 0; i < fixed.size(); i++) {
            x[i] = fixed.get(i).onlineWaitP99Nanos() / 1e3;
            y[i] = fixed.get(i).offlineShare() * 100;
        }
        XYChart chart = new XYChartBuilder().width(900).height(560)
                .title(c.scenario().name() + ": offline GPU share vs online wait p99 per release rule")
                .xAxisTitle("online wait p99 (us)").yAxisTitle("offline GPU share (%)").build();
        Styler st = chart.getStyler();
        // the legend goes below the plot, never over a point
        st.setLegendPosition(Styler.LegendPosition.OutsideS);
        st.setLegendLayout(Styler.LegendLayout.Horizontal);
        st.setMarkerSize(9);
        st.setChartBackgroundColor(Color.WHITE);
        st.setPlotBackgroundColor(Color.WHITE);
        chart.getStyler().setYAxisMin(0.0);
        XYSeries f = chart.addSeries("fixed delay " + fixed.get(0).rule() + ".." + fixed.get(fixed.size() - 1).rule(), x, y);
        f.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        f.setMarker(SeriesMarkers.CIRCLE);
        f.setLineColor(new Color(0x1F, 0x77, 0xB4));
        f.setMarkerColor(new Color(0x1F, 0x77, 0xB4));
        for (int i = 0; i < fixed.size(); i++) {
            chart.addAnnotation(new org.knowm.xchart.AnnotationText(fixed.get(i).rule(), x[i], y[i] + 2.5, false));
        }
        ReleaseComparison.Point a = c.adaptive();
        // drawn last (on top), larger, in a colour of its own, with its own label
        XYSeries ad = chart.addSeries(a.rule(), new double[] {a.onlineWaitP99Nanos() / 1e3}, new double[] {a.offlineShare() * 100});
        ad.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
        ad.setMarker(SeriesMarkers.DIAMOND);
        ad.setMarkerColor(new Color(0xD6, 0x27, 0x28));
        ad.setLineColor(new Color(0xD6, 0x27, 0x28));
        // its label to the left of the marker (the fixed delays' labels sit above theirs)
        double minX = a.onlineWaitP99Nanos() / 1e3;
        double maxX = minX;
        for (double v : x) {
            minX = Math.min(minX, v);
            maxX = Math.max(maxX, v);
        }
        double dx = Math.max(1, maxX - minX) * 0.05;
        chart.addAnnotation(new org.knowm.xchart.AnnotationText("adaptive", a.onlineWaitP99Nanos() / 1e3 - dx, a.offlineShare() * 100,
                false));
        Files.createDirectories(png.toAbsolutePath().getParent());
        try (OutputStream os = Files.newOutputStream(png)) {
            BitmapEncoder.saveBitmap(chart, os, BitmapEncoder.BitmapFormat.PNG);
        }
    }
}
