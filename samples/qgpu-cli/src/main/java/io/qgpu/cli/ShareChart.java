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

    /**
     * @param barNanos the bar width: the series' bucket or a multiple of it (for example the quota
     *                 window, so that a share enforced per window is read at that width)
     */
    static void write(SimResult r, GpuSpec gpu, Path png, long barNanos) throws IOException {
        ShareSeries s = r.shares();
        int perBar = (int) (barNanos / s.bucketNanos());
        int n = (s.buckets() + perBar - 1) / perBar;
        double[] x = new double[n + 1];
        for (int i = 0; i <= n; i++) {
            x[i] = Math.min(i * (double) barNanos, r.scenario().durationNanos()) / 1e9;
        }
        List<TenantSpec> order = new ArrayList<>();
        gpu.tenants().stream().filter(TenantSpec::online).forEach(order::add);
        gpu.tenants().stream().filter(t -> !t.online()).forEach(order::add);

        // cumulative bands, bottom first
        List<double[]> tops = new ArrayList<>();
        double[] below = new double[n + 1];
        for (TenantSpec t : order) {
            double[] top = new double[n + 1];
            double[] share = bars(s, t.id(), perBar, r.scenario().durationNanos());
            for (int i = 0; i <= n; i++) {
                double v = share[Math.min(i, n - 1)] * 100.0;   // the last point repeats the last bucket (step end)
                top[i] = below[i] + v;
            }
            tops.add(top);
            below = top;
        }

        XYChart chart = new XYChartBuilder().width(1100).height(520)
                .title(r.scenario().name() + " - " + gpu.id() + " (" + gpu.policy().wireName() + "): share of the GPU per "
                        + fmtSeconds(barNanos) + ", stacked (quota window " + fmtSeconds(r.scenario().compute().windowNanos())
                        + ")")
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

    /** The share per bar of {@code k} buckets, weighted by each bucket's length (the last may be short). */
    private static double[] bars(ShareSeries s, String tenant, int k, long duration) {
        double[] share = s.series(tenant);
        int n = (share.length + k - 1) / k;
        double[] out = new double[n];
        for (int b = 0; b < n; b++) {
            double busy = 0;
            double len = 0;
            for (int i = b * k; i < Math.min(share.length, (b + 1) * k); i++) {
                double l = Math.min(s.bucketNanos(), duration - s.bucketStartNanos(i));
                busy += share[i] * l;
                len += l;
            }
            out[b] = len == 0 ? 0 : busy / len;
        }
        return out;
    }

    private static String fmtSeconds(long nanos) {
        return nanos % 1_000_000_000L == 0 ? nanos / 1_000_000_000L + " s" : nanos / 1_000_000L + " ms";
    }
}
