package io.qgpu.cli;

import io.qgpu.testkit.sim.GpuMetrics;
import io.qgpu.testkit.sim.ReleaseComparison;
import io.qgpu.testkit.sim.ShareSeries;
import io.qgpu.testkit.sim.SimResult;
import io.qgpu.testkit.sim.TenantMetrics;
import io.qgpu.testkit.sim.TraceEvent;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The CSV files {@code qgpu simulate} writes. */
final class SimFiles {

    private SimFiles() {
    }

    static Path writeShares(SimResult r, Path file) throws IOException {
        ShareSeries s = r.shares();
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            w.write("time_s," + String.join(",", s.tenants()));
            w.newLine();
            for (int i = 0; i < s.buckets(); i++) {
                StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%.3f", s.bucketStartNanos(i) / 1e9));
                for (String t : s.tenants()) {
                    sb.append(String.format(Locale.ROOT, ",%.4f", s.share(t, i)));
                }
                w.write(sb.toString());
                w.newLine();
            }
        }
        return file;
    }

    /**
     * One row per tenant ({@code level} tenant) and one per GPU ({@code level} gpu, tenant {@code *});
     * a column that does not apply to the row is empty.
     */
    static Path writeMetrics(SimResult r, Path file) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            w.write("level,gpu,tenant,class,request_pct,limit_pct,gpu_s,share,max_window_share,requests,latency_p50_ms,"
                    + "latency_p99_ms,online_wait_p99_us,preemptions,preempt_p99_us,preempt_max_us,suspensions,forced,"
                    + "iterations,grants,utilization,online_share,offline_share,release_idle_s,offline_mode_s,"
                    + "online_submissions,online_wait_p50_us,online_wait_max_us,switches,release_rule");
            w.newLine();
            for (TenantMetrics t : r.tenants()) {
                w.write(String.format(Locale.ROOT, "tenant,%s,%s,%s,%d,%d,%.6f,%.6f,%.6f,%d,%s,%s,%s,%d,%s,%s,%d,%d,%d,%d,,,,,,,,,,",
                        t.gpu(), t.tenant(), t.priority().wireName(), t.requestPercent(), t.limitPercent(), t.gpuSeconds(),
                        t.share(), t.maxWindowShare(), t.requestsCompleted(), ms(t.latencyP50Nanos()), ms(t.latencyP99Nanos()),
                        us(t.onlineWaitP99Nanos()), t.preemptions(), us(t.preemptionP99Nanos()), us(t.preemptionMaxNanos()),
                        t.suspensions(), t.forcedSuspensions(), t.iterations(), t.grants()));
                w.newLine();
            }
            for (GpuMetrics g : r.gpus()) {
                long offlineMode = g.modeNanos().get(io.qgpu.core.preempt.GpuMode.OFFLINE);
                w.write(String.format(Locale.ROOT, "gpu,%s,*,%s,,,,,,,,,%s,%d,%s,%s,,%d,,,%.6f,%.6f,%.6f,%.6f,%.6f,%d,%s,%s,%d,%s",
                        g.gpu(), g.policy().wireName(), us(g.onlineWaitP99Nanos()), g.preemptions(), us(g.preemptionP99Nanos()),
                        us(g.preemptionMaxNanos()), g.forcedSuspensions(), g.utilization(), g.onlineShare(), g.offlineShare(),
                        g.releaseIdleNanos() / 1e9, offlineMode / 1e9, g.onlineSubmissions(), us(g.onlineWaitP50Nanos()),
                        us(g.onlineWaitMaxNanos()), g.switches(), g.releasePolicy()));
                w.newLine();
            }
        }
        return file;
    }

    static Path writeTrace(SimResult r, Path file) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            w.write(TraceEvent.csvHeader());
            w.newLine();
            for (TraceEvent e : r.trace()) {
                w.write(e.toCsv());
                w.newLine();
            }
        }
        return file;
    }

    /** One row per release rule: offline share, online wait p99, idle in the delay. */
    static Path writeComparison(ReleaseComparison c, Path file) throws IOException {
        List<ReleaseComparison.Point> all = new ArrayList<>(c.fixed());
        all.add(c.adaptive());
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            w.write("rule,offline_share,online_wait_p99_us,release_idle_share");
            w.newLine();
            for (ReleaseComparison.Point p : all) {
                w.write(String.format(Locale.ROOT, "\"%s\",%.6f,%s,%.6f", p.rule(), p.offlineShare(), us(p.onlineWaitP99Nanos()),
                        p.releaseIdleShare()));
                w.newLine();
            }
        }
        return file;
    }

    private static String ms(long nanos) {
        return nanos < 0 ? "" : String.format(Locale.ROOT, "%.3f", nanos / 1e6);
    }

    private static String us(long nanos) {
        return nanos < 0 ? "" : String.format(Locale.ROOT, "%.1f", nanos / 1e3);
    }

}
