package io.qgpu.cli;

import io.qgpu.testkit.sim.GpuSpec;
import io.qgpu.testkit.sim.ShareSeries;
import io.qgpu.testkit.sim.SimResult;
import io.qgpu.testkit.sim.TenantSpec;
import java.awt.Color;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Draws each tenant's share of one GPU over time as stacked bands (online tenants at the bottom),
 * like the sequence diagram of qGPU's online/offline documentation: who holds the GPU when.
 */
final class ShareChart {

    private static final Color[] ONLINE = {new Color(0xD6, 0x27, 0x28), new Color(0xFF, 0x7F, 0x0E), new Color(0xE3, 0x77, 0xC2)};
    private static final Color[] OFFLINE = {new Color(0x1F, 0x77, 0xB4), new Color(0x2C, 0xA0, 0x2C), new Color(0x94, 0x67, 0xBD),
        new Color(0x17, 0xBE, 0xCF), new Color(0x8C, 0x56, 0x4B), new Color(0xBC, 0xBD, 0x22), new Color(0x7F, 0x7F, 0x7F)};

    private ShareChart() {
    }

    static void write(SimResult r, GpuSpec gpu, Path png) throws IOException {
        ShareSeries s = r.shares();
        int n = s.buckets();
        double[] x = new double[n + 1];
        for (int i = 0; i <= n; i++) {
            x[i] = Math.min(i * (double) s.bucketNanos(), r.scenario().durationNanos()) / 1e9;
        }
        List<TenantSpec> order = new ArrayList<>();
        gpu.tenants().stream().filter(TenantSpec::online).forEach(order::add);
        gpu.tenants().stream().filter(t -> !t.online()).forEach(order::add);

        // cumulative bands, bottom first
        List<double[]> tops = new ArrayList<>();
        double[] below = new double[n + 1];
        for (TenantSpec t : order) {
            double[] top = new double[n + 1];
            double[] share = s.series(t.id());
            for (int i = 0; i <= n; i++) {
                double v = share[Math.min(i, n - 1)] * 100.0;   // the last point repeats the last bucket (step end)
                top[i] = below[i] + v;
            }
            tops.add(top);
            below = top;
        }

        XYChart chart = new XYChartBuilder().width(1100).height(520)
                .title(r.scenario().name() + " - " + gpu.id() + " (" + gpu.policy().wireName() + "): share of the GPU per "
                        + fmtSeconds(s.bucketNanos()) + ", stacked")
                .xAxisTitle("virtual time (s)").yAxisTitle("GPU time (%)").build();
        Styler st = chart.getStyler();
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.StepArea);
        st.setLegendPosition(Styler.LegendPosition.OutsideE);
        st.setChartBackgroundColor(Color.WHITE);
        st.setPlotBackgroundColor(Color.WHITE);
        chart.getStyler().setYAxisMin(0.0);
        chart.getStyler().setYAxisMax(100.0);
        chart.getStyler().setXAxisMin(0.0);
        chart.getStyler().setXAxisMax(r.scenario().durationNanos() / 1e9);
        // XChart paints in insertion order: the highest band first, so lower bands stay visible
        for (int k = order.size() - 1; k >= 0; k--) {
            TenantSpec t = order.get(k);
            String label = t.id() + (t.online() ? " (online)" : " (offline)");
            XYSeries series = chart.addSeries(label, x, tops.get(k));
            series.setMarker(SeriesMarkers.NONE);
            Color c = t.online() ? ONLINE[(order.stream().filter(TenantSpec::online).toList().indexOf(t)) % ONLINE.length]
                    : OFFLINE[(order.stream().filter(q -> !q.online()).toList().indexOf(t)) % OFFLINE.length];
            series.setFillColor(c);
            series.setLineColor(c.darker());
        }
        Files.createDirectories(png.toAbsolutePath().getParent());
        try (OutputStream os = Files.newOutputStream(png)) {
            BitmapEncoder.saveBitmap(chart, os, BitmapEncoder.BitmapFormat.PNG);
        }
    }

    private static String fmtSeconds(long nanos) {
        return nanos % 1_000_000_000L == 0 ? nanos / 1_000_000_000L + " s" : nanos / 1_000_000L + " ms";
    }
}
