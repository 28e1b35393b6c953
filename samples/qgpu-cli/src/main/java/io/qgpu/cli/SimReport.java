package io.qgpu.cli;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.PriorityClass;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.testkit.sim.GpuMetrics;
import io.qgpu.testkit.sim.GpuSpec;
import io.qgpu.testkit.sim.ReleaseComparison;
import io.qgpu.testkit.sim.Scenario;
import io.qgpu.testkit.sim.SimResult;
import io.qgpu.testkit.sim.TenantMetrics;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The text {@code qgpu simulate} prints: what each GPU and tenant got, each figure named for what it measures. */
final class SimReport {

    private SimReport() {
    }

    static void print(SimResult r, double took, PrintStream out) {
        Scenario s = r.scenario();
        out.printf(Locale.ROOT, "qgpu simulate: %s, seed %d, %s of virtual time (%,d events in %.2f s)%n",
                s.name(), s.seed(), secs(s.durationNanos()), r.events(), took);
        if (!s.description().isBlank()) {
            for (String line : wrap(s.description(), 96)) {
                out.println("  " + line);
            }
        }
        out.printf(Locale.ROOT, "  engines: token window %s, grants %s (min %s); preemption bound %s, release %s;"
                        + " preemption cost: %s%n",
                dur(s.compute().windowNanos()), dur(s.compute().baseQuotaNanos()), dur(s.compute().minQuotaNanos()),
                dur(s.preemption().preemptionBoundNanos()), s.preemption().releasePolicy().describe(), s.cost().describe());
        for (GpuSpec spec : s.gpus()) {
            gpu(r, spec, out);
        }
    }

    private static void gpu(SimResult r, GpuSpec spec, PrintStream out) {
        Scenario s = r.scenario();
        GpuMetrics g = r.gpu(spec.id());
        out.println();
        out.printf(Locale.ROOT, "GPU %s  policy %s (among offline tenants), slicing %s, release %s%n", g.gpu(), g.policy().wireName(),
                g.slicing().wireName(), g.releasePolicy());
        out.printf(Locale.ROOT, "  raw GPU utilisation %s (online %s, offline %s); idle %s, of which %s idle in the release"
                        + " delay while offline work waited%n", pct(g.utilization()), pct(g.onlineShare()),
                pct(g.offlineShare()), pct(1 - g.utilization()), pct((double) g.releaseIdleNanos() / s.durationNanos()));
        out.printf(Locale.ROOT, "  time per mode: offline %s, preempting %s, online %s, releasing %s%n",
                pct(mode(g, GpuMode.OFFLINE, s)), pct(mode(g, GpuMode.PREEMPTING, s)), pct(mode(g, GpuMode.ONLINE, s)),
                pct(mode(g, GpuMode.RELEASING, s)));
        if (g.onlineSubmissions() > 0) {
            out.printf(Locale.ROOT, "  online wait (submission to its work running on the GPU, all %d submissions): p50 %s,"
                    + " p99 %s, max %s; %d offline/online switches%n", g.onlineSubmissions(), dur(g.onlineWaitP50Nanos()),
                    dur(g.onlineWaitP99Nanos()), dur(g.onlineWaitMaxNanos()), g.switches());
        }
        if (g.preemptions() > 0) {
            out.printf(Locale.ROOT, "  preemption: online waited p50 %s, p99 %s, max %s for the machine to hand over the GPU,"
                            + " over %d preemptions (bound %s: %s)%s%n",
                    dur(g.preemptionP50Nanos()), dur(g.preemptionP99Nanos()), dur(g.preemptionMaxNanos()), g.preemptions(),
                    dur(s.preemption().preemptionBoundNanos()),
                    g.preemptionMaxNanos() <= s.preemption().preemptionBoundNanos() ? "kept" : "MISSED",
                    g.forcedSuspensions() > 0 ? "; " + g.forcedSuspensions() + " offline suspensions forced at the bound" : "");
        }
        if (g.releases() > 0) {
            out.printf(Locale.ROOT, "  release: back to offline work %s..%s after online went idle (%d times, rule %s);"
                            + " offline ran again after %s..%s%n",
                    dur(g.releaseDelayMinNanos()), dur(g.releaseDelayMaxNanos()), g.releases(),
                    g.releasePolicy(), dur(g.resumeDelayMinNanos()), dur(g.resumeDelayMaxNanos()));
        }
        if (g.offlineUseOfIdle() >= 0) {
            out.printf(Locale.ROOT, "  in mode OFFLINE, while offline work had work its policy allowed, it kept the GPU busy %s"
                            + " of that time%s%n", pct(g.offlineUseOfIdle()), g.policyHeldNanos() > 0 ? "; the policy held it back "
                            + pct((double) g.policyHeldNanos() / s.durationNanos()) + " of the run" : "");
        }
        out.println();
        out.printf(Locale.ROOT, "  %-14s %-8s %-16s %11s %10s %20s %12s %10s %10s%n", "tenant", "class", "asks", "GPU share",
                "max/window", "request latency", "online wait", "suspended", "iterations");
        out.printf(Locale.ROOT, "  %-14s %-8s %-16s %11s %10s %20s %12s %10s %10s%n", "", "", "", "(whole run)",
                "(" + dur(s.compute().windowNanos()) + ")", "p50 / p99", "p99", "(times)", "");
        for (TenantMetrics t : r.tenants()) {
            if (!t.gpu().equals(spec.id())) {
                continue;
            }
            boolean online = t.priority() == PriorityClass.ONLINE;
            out.printf(Locale.ROOT, "  %-14s %-8s %-16s %11s %10s %20s %12s %10s %10s%n", t.tenant(), t.priority().wireName(),
                    online ? "preempts" : asks(spec.policy(), t), pct(t.share()), pct(t.maxWindowShare()),
                    t.requestsCompleted() > 0 ? dur(t.latencyP50Nanos()) + " / " + dur(t.latencyP99Nanos()) : "-",
                    online ? dur(t.onlineWaitP99Nanos()) : "-",
                    online ? "-" : t.suspensions() + (t.forcedSuspensions() > 0 ? " (" + t.forcedSuspensions() + " forced)" : ""),
                    t.iterations() > 0 ? String.valueOf(t.iterations()) : "-");
        }
    }

    /** The release-rule comparison as a table. */
    static void print(ReleaseComparison c, PrintStream out) {
        out.printf(Locale.ROOT, "qgpu simulate --compare: %s, seed %d, %s; preemption cost: %s%n", c.scenario().name(),
                c.scenario().seed(), secs(c.scenario().durationNanos()), c.scenario().cost().describe());
        out.printf(Locale.ROOT, "  %-36s %14s %16s %20s%n", "release rule", "offline share", "online wait p99",
                "idle in the delay");
        List<ReleaseComparison.Point> all = new ArrayList<>(c.fixed());
        all.add(c.adaptive());
        for (ReleaseComparison.Point p : all) {
            out.printf(Locale.ROOT, "  %-36s %14s %16s %20s%n", p.rule(), pct(p.offlineShare()), dur(p.onlineWaitP99Nanos()),
                    pct(p.releaseIdleShare()));
        }
        List<ReleaseComparison.Point> beaten = c.dominating(c.adaptive(), ReleaseComparison.FRONTIER_TOLERANCE);
        out.println(beaten.isEmpty()
                ? "  the adaptive rule is on or above the fixed-delay frontier: no fixed delay gives more offline time"
                + " (by over 0.1 point) at the same or a lower online p99"
                : "  BELOW the frontier: " + beaten.stream().map(ReleaseComparison.Point::rule).toList()
                + " give more offline time (by over 0.1 point) at the same or a lower online p99");
    }

    private static double mode(GpuMetrics g, GpuMode m, Scenario s) {
        return (double) g.modeNanos().get(m) / s.durationNanos();
    }

    private static String asks(IsolationPolicy p, TenantMetrics t) {
        return switch (p) {
            case BEST_EFFORT -> "equal share";
            case FIXED_SHARE -> t.requestPercent() + "% fixed";
            case BURST_SHARE -> t.requestPercent() + "% + idle";
            case ELASTIC -> t.requestPercent() + "%.." + t.limitPercent() + "%";
        };
    }

    static String pct(double v) {
        return String.format(Locale.ROOT, "%.1f%%", v * 100);
    }

    static String secs(long nanos) {
        return trim(String.format(Locale.ROOT, "%.3f", nanos / 1e9)) + " s";
    }

    /** Three significant digits: 1.23ms, 456us, 2.5s, 100ms. */
    static String dur(long nanos) {
        if (nanos < 0) {
            return "-";
        }
        if (nanos >= 1_000_000_000L) {
            return sig(nanos / 1e9) + "s";
        }
        if (nanos >= 1_000_000L) {
            return sig(nanos / 1e6) + "ms";
        }
        if (nanos >= 1_000L) {
            return sig(nanos / 1e3) + "us";
        }
        return nanos + "ns";
    }

    private static String sig(double v) {
        String s = new java.math.BigDecimal(v).round(new java.math.MathContext(3)).toPlainString();
        return trim(s);
    }

    private static String trim(String s) {
        if (s.contains(".")) {
            s = s.replaceAll("0+$", "");
            if (s.endsWith(".")) {
                s = s.substring(0, s.length() - 1);
            }
        }
        return s;
    }

    static List<String> wrap(String text, int width) {
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        for (String word : text.split("\\s+")) {
            if (line.length() + word.length() + 1 > width && line.length() > 0) {
                lines.add(line.toString());
                line.setLength(0);
            }
            if (line.length() > 0) {
                line.append(' ');
            }
            line.append(word);
        }
        if (line.length() > 0) {
            lines.add(line.toString());
        }
        return lines;
    }
}
