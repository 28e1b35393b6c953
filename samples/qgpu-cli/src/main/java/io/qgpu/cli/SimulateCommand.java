package io.qgpu.cli;

import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.preempt.GpuMode;
import io.qgpu.testkit.sim.GpuMetrics;
import io.qgpu.testkit.sim.GpuSpec;
import io.qgpu.testkit.sim.Scenario;
import io.qgpu.testkit.sim.ShareSeries;
import io.qgpu.testkit.sim.SimResult;
import io.qgpu.testkit.sim.Simulator;
import io.qgpu.core.json.Durations;
import io.qgpu.testkit.sim.TenantMetrics;
import io.qgpu.testkit.sim.TraceEvent;
import io.qgpu.testkit.sim.scenario.ScenarioFile;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * {@code qgpu simulate SCENARIO.json}: runs a scenario in the discrete-event simulator, prints
 * per-GPU and per-tenant metrics, and writes a PNG chart of each tenant's GPU share over time, the
 * share time series, the metrics and the trace as CSV.
 */
final class SimulateCommand implements Subcommand {

    @Override
    public String name() {
        return "simulate";
    }

    @Override
    public String summary() {
        return "run a GPU-sharing scenario in virtual time: metrics, share chart (PNG), trace (CSV)";
    }

    @Override
    public String usage() {
        return String.join("\n",
                "usage: qgpu simulate SCENARIO.json [--out DIR] [--seed N] [--duration D] [--no-trace]",
                "",
                "Runs the scenario's tenants (online inference, offline training, ...) on simulated GPUs under",
                "the compute policy engines and online/offline preemption, in virtual time (a 60 s scenario",
                "takes well under a second). Same seed, same numbers.",
                "",
                "  --out DIR       where to write the files (default qgpu-sim-out/<scenario name>)",
                "  --seed N        override the scenario's seed",
                "  --duration D    override the scenario's virtual duration: a number and a unit",
                "                  (ns, us, ms, s, m), e.g. 30s, 2m, 1500ms; a bare number is refused",
                "  --no-trace      do not record or write the event trace",
                "",
                "Files: share-<gpu>.png (stacked GPU share per tenant over time), shares.csv (the same numbers),",
                "metrics.csv (one row per tenant), trace.csv (time_s,gpu,tenant,event,detail).",
                "Scenario files: docs/formats.md; examples: samples/qgpu-cli/scenarios/*.json, e.g.",
                "  qgpu simulate samples/qgpu-cli/scenarios/online-offline-burst-share.json --duration 10s --seed 7 --out target/sim");
    }

    @Override
    public int run(List<String> argv, PrintStream out, PrintStream err) throws IOException {
        Args args = Args.parse(argv, Set.of("--no-trace"), Set.of("--out", "--seed", "--duration"));
        if (args.positionals().size() != 1) {
            throw new UsageException(args.positionals().isEmpty() ? "missing SCENARIO.json" : "one scenario file at a time");
        }
        Path file = Path.of(args.positional(0, "SCENARIO.json"));
        Scenario scenario = ScenarioFile.read(file);
        if (args.option("--seed").isPresent()) {
            String s = args.option("--seed").get();
            try {
                scenario = scenario.withSeed(Long.parseLong(s));
            } catch (NumberFormatException e) {
                throw new UsageException("--seed must be an integer, got " + s);
            }
        }
        if (args.option("--duration").isPresent()) {
            scenario = scenario.withDuration(Durations.parse("--duration", args.option("--duration").get()));
        }
        boolean trace = !args.flag("--no-trace");
        Path outDir = Path.of(args.option("--out").orElse("qgpu-sim-out/" + scenario.name()));

        long t0 = System.nanoTime();
        SimResult r = Simulator.standard().withTrace(trace).run(scenario);
        double took = (System.nanoTime() - t0) / 1e9;

        report(r, took, out);

        Files.createDirectories(outDir);
        List<Path> written = new ArrayList<>();
        System.setProperty("java.awt.headless", "true");
        for (GpuSpec gpu : scenario.gpus()) {
            Path png = outDir.resolve("share-" + gpu.id() + ".png");
            ShareChart.write(r, gpu, png);
            written.add(png);
        }
        written.add(writeShares(r, outDir.resolve("shares.csv")));
        written.add(writeMetrics(r, outDir.resolve("metrics.csv")));
        if (trace) {
            written.add(writeTrace(r, outDir.resolve("trace.csv")));
        }
        out.println();
        out.println("Wrote:");
        for (Path p : written) {
            out.println("  " + p);
        }
        return 0;
    }

    private static void report(SimResult r, double took, PrintStream out) {
        Scenario s = r.scenario();
        out.printf(Locale.ROOT, "qgpu simulate: %s, seed %d, %s of virtual time (%,d events in %.2f s)%n",
                s.name(), s.seed(), secs(s.durationNanos()), r.events(), took);
        if (!s.description().isBlank()) {
            for (String line : wrap(s.description(), 96)) {
                out.println("  " + line);
            }
        }
        out.printf(Locale.ROOT, "  engines: token window %s, grants %s (min %s); preemption bound %s, release delay %s%n",
                dur(s.compute().windowNanos()), dur(s.compute().baseQuotaNanos()), dur(s.compute().minQuotaNanos()),
                dur(s.preemption().preemptionBoundNanos()), dur(s.preemption().releaseDelayNanos()));
        for (GpuSpec spec : s.gpus()) {
            GpuMetrics g = r.gpu(spec.id());
            out.println();
            out.printf(Locale.ROOT, "GPU %s  policy %s (among offline tenants), slicing %s%n", g.gpu(), g.policy().wireName(),
                    g.slicing().wireName());
            out.printf(Locale.ROOT, "  busy %s of the time: online %s, offline %s; idle %s, of which %s waiting out the"
                            + " release delay after online work%n", pct(g.utilization()), pct(g.onlineShare()),
                    pct(g.offlineShare()), pct(1 - g.utilization()), pct(mode(g, GpuMode.RELEASING, s)));
            out.printf(Locale.ROOT, "  time per mode: offline %s, preempting %s, online %s, releasing %s%n",
                    pct(mode(g, GpuMode.OFFLINE, s)), pct(mode(g, GpuMode.PREEMPTING, s)), pct(mode(g, GpuMode.ONLINE, s)),
                    pct(mode(g, GpuMode.RELEASING, s)));
            if (g.preemptions() > 0) {
                out.printf(Locale.ROOT, "  preemption: online waited p50 %s, p99 %s, max %s for the GPU over %d preemptions"
                                + " (bound %s: %s)%s%n",
                        dur(g.preemptionP50Nanos()), dur(g.preemptionP99Nanos()), dur(g.preemptionMaxNanos()), g.preemptions(),
                        dur(s.preemption().preemptionBoundNanos()),
                        g.preemptionMaxNanos() <= s.preemption().preemptionBoundNanos() ? "kept" : "MISSED",
                        g.forcedSuspensions() > 0 ? "; " + g.forcedSuspensions() + " offline suspensions forced at the bound" : "");
            }
            if (g.releases() > 0) {
                out.printf(Locale.ROOT, "  release: back to offline work %s..%s after online went idle (%d times, delay %s);"
                                + " offline ran again after %s..%s%n",
                        dur(g.releaseDelayMinNanos()), dur(g.releaseDelayMaxNanos()), g.releases(),
                        dur(s.preemption().releaseDelayNanos()), dur(g.resumeDelayMinNanos()), dur(g.resumeDelayMaxNanos()));
            }
            if (g.offlineUseOfIdle() >= 0) {
                out.printf(Locale.ROOT, "  offline work used %s of the GPU time left to it that its policy allowed%s%n",
                        pct(g.offlineUseOfIdle()), g.policyHeldNanos() > 0 ? "; the policy held it back "
                                + pct((double) g.policyHeldNanos() / s.durationNanos()) + " of the time" : "");
            }
            out.println();
            out.printf(Locale.ROOT, "  %-14s %-8s %-16s %11s %10s %20s %12s %10s %10s%n", "tenant", "class", "asks", "GPU share",
                    "max/window", "request latency", "waited for", "suspended", "iterations");
            out.printf(Locale.ROOT, "  %-14s %-8s %-16s %11s %10s %20s %12s %10s %10s%n", "", "", "", "(whole run)",
                    "(" + dur(s.compute().windowNanos()) + ")", "p50 / p99", "GPU (max)", "(times)", "");
            for (TenantMetrics t : r.tenants()) {
                if (!t.gpu().equals(spec.id())) {
                    continue;
                }
                long w = s.compute().windowNanos();
                double peak = r.busy(t.tenant()).maxWindowUsage(w, 0, s.durationNanos()) / w;
                boolean online = t.priority() == io.qgpu.api.PriorityClass.ONLINE;
                out.printf(Locale.ROOT, "  %-14s %-8s %-16s %11s %10s %20s %12s %10s %10s%n", t.tenant(), t.priority().wireName(),
                        online ? "preempts" : asks(spec.policy(), t), pct(t.share()), pct(peak),
                        t.requestsCompleted() > 0 ? dur(t.latencyP50Nanos()) + " / " + dur(t.latencyP99Nanos()) : "-",
                        t.preemptions() > 0 ? dur(t.preemptionMaxNanos()) : "-",
                        online ? "-" : t.suspensions() + (t.forcedSuspensions() > 0 ? " (" + t.forcedSuspensions() + " forced)" : ""),
                        t.iterations() > 0 ? String.valueOf(t.iterations()) : "-");
            }
        }
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

    private static Path writeShares(SimResult r, Path file) throws IOException {
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

    private static Path writeMetrics(SimResult r, Path file) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            w.write("gpu,tenant,class,request_pct,limit_pct,gpu_s,share,requests,latency_p50_ms,latency_p99_ms,"
                    + "preemptions,preempt_p99_us,preempt_max_us,suspensions,forced,iterations,grants");
            w.newLine();
            for (TenantMetrics t : r.tenants()) {
                w.write(String.format(Locale.ROOT, "%s,%s,%s,%d,%d,%.6f,%.6f,%d,%s,%s,%d,%s,%s,%d,%d,%d,%d", t.gpu(), t.tenant(),
                        t.priority().wireName(), t.requestPercent(), t.limitPercent(), t.gpuSeconds(), t.share(),
                        t.requestsCompleted(), ms(t.latencyP50Nanos()), ms(t.latencyP99Nanos()), t.preemptions(),
                        us(t.preemptionP99Nanos()), us(t.preemptionMaxNanos()), t.suspensions(), t.forcedSuspensions(),
                        t.iterations(), t.grants()));
                w.newLine();
            }
        }
        return file;
    }

    private static Path writeTrace(SimResult r, Path file) throws IOException {
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

    private static String ms(long nanos) {
        return nanos < 0 ? "" : String.format(Locale.ROOT, "%.3f", nanos / 1e6);
    }

    private static String us(long nanos) {
        return nanos < 0 ? "" : String.format(Locale.ROOT, "%.1f", nanos / 1e3);
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

    private static List<String> wrap(String text, int width) {
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
