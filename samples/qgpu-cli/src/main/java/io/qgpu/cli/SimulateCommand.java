package io.qgpu.cli;

import io.qgpu.core.preempt.ReleasePolicy;
import io.qgpu.testkit.sim.GpuSpec;
import io.qgpu.testkit.sim.ReleaseComparison;
import io.qgpu.testkit.sim.Scenario;
import io.qgpu.testkit.sim.SimResult;
import io.qgpu.testkit.sim.Simulator;
import io.qgpu.core.time.Durations;
import io.qgpu.testkit.sim.scenario.ScenarioFile;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@code qgpu simulate SCENARIO.json}: runs a scenario in the discrete-event simulator, prints
 * per-GPU and per-tenant metrics, and writes a PNG chart of each tenant's GPU share over time, the
 * share time series, the metrics and the trace as CSV. {@code --compare} runs it under fixed release
 * delays from 0 to 200 ms and the adaptive rule instead, and draws offline GPU share against online
 * wait p99 (a Pareto chart).
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
                "usage: qgpu simulate SCENARIO.json [--out DIR] [--seed N] [--duration D] [--release adaptive|D]",
                "                     [--chart-bucket window|D] [--no-trace] [--compare]",
                "",
                "Runs the scenario's tenants (online inference, offline training, ...) on simulated GPUs under",
                "the compute policy engines and online/offline preemption, in virtual time (a 60 s scenario",
                "takes well under a second). Same seed, same numbers.",
                "",
                "  --out DIR            where to write the files (default qgpu-sim-out/<scenario name>)",
                "  --seed N             override the scenario's seed",
                "  --duration D         override the scenario's virtual duration: a number and a unit",
                "                       (ns, us, ms, s, m), e.g. 30s, 2m, 1500ms; a bare number is refused",
                "  --release R          the release rule: a fixed delay such as 100ms, or adaptive (the hold picked",
                "                       from the observed online idle gaps and the switch cost: twice the",
                "                       scenario's switch time; at most 200ms)",
                "  --chart-bucket B     bar width of the share chart: window (the compute quota window) or a",
                "                       duration that is a multiple of the scenario's bucket",
                "  --no-trace           do not record or write the event trace",
                "  --compare            run fixed delays 0..200ms and the adaptive rule; print the table and write",
                "                       pareto.png (offline GPU share vs online wait p99) and compare.csv",
                "                       (not with --release: it runs every release rule itself)",
                "",
                "Files: share-<gpu>.png (stacked GPU share per tenant over time), shares.csv (the same numbers),",
                "metrics.csv (one row per tenant and per GPU), trace.csv (time_s,gpu,tenant,event,detail).",
                "None of them may be the scenario file itself (refused before the run, exit 2).",
                "Scenario files: docs/formats.md; examples: samples/qgpu-cli/scenarios/*.json, e.g.",
                "  qgpu simulate samples/qgpu-cli/scenarios/online-offline-burst-share.json --duration 10s --seed 7 --out target/sim");
    }

    @Override
    public int run(List<String> argv, PrintStream out, PrintStream err) throws IOException {
        Args args = Args.parse(argv, Set.of("--no-trace", "--compare"),
                Set.of("--out", "--seed", "--duration", "--release", "--chart-bucket"));
        if (args.positionals().size() != 1) {
            throw new UsageException(args.positionals().isEmpty() ? "missing SCENARIO.json" : "one scenario file at a time");
        }
        Path file = OutputNames.userPath("SCENARIO.json", args.positional(0, "SCENARIO.json"));
        if (args.flag("--compare") && args.option("--release").isPresent()) {
            throw new io.qgpu.api.InvalidValueException("--release", args.option("--release").get(), "cannot be combined with"
                    + " --compare, which runs every release rule itself (fixed delays 0..200ms and adaptive); drop one of the two");
        }
        new FileRoles().input("SCENARIO.json", file).check();
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
        if (args.option("--release").isPresent()) {
            scenario = scenario.withPreemption(scenario.preemption().toBuilder().releasePolicy(release(args.option("--release").get(),
                    scenario)).build());
        }
        String nameKey = file + ": name";
        OutputNames.component(nameKey, scenario.name());
        Path outDir = args.option("--out").isPresent() ? OutputNames.userPath("--out", args.option("--out").get())
                : OutputNames.file(Path.of("qgpu-sim-out"), "", nameKey, scenario.name(), "");
        List<Path> charts = new ArrayList<>();
        for (int i = 0; i < scenario.gpus().size(); i++) {
            charts.add(OutputNames.file(outDir, "share-", file + ": " + gpuKey(file, scenario, i), scenario.gpus().get(i).id(), ".png"));
        }
        FileRoles files = new FileRoles().input("SCENARIO.json", file);
        if (args.flag("--compare")) {
            files.outputIn("--out", outDir, outDir.resolve("pareto.png")).outputIn("--out", outDir, outDir.resolve("compare.csv"));
        } else {
            charts.forEach(png -> files.outputIn("--out", outDir, png));
            for (String name : args.flag("--no-trace") ? List.of("shares.csv", "metrics.csv")
                    : List.of("shares.csv", "metrics.csv", "trace.csv")) {
                files.outputIn("--out", outDir, outDir.resolve(name));
            }
        }
        files.check();
        System.setProperty("java.awt.headless", "true");
        List<Path> written = new ArrayList<>();
        if (args.flag("--compare")) {
            ReleaseComparison c = ReleaseComparison.run(Simulator.standard(), scenario, ReleaseComparison.DEFAULT_DELAYS,
                    ReleaseComparison.adaptiveFor(scenario));
            SimReport.print(c, out);
            Files.createDirectories(outDir);
            Path png = outDir.resolve("pareto.png");
            ParetoChart.write(c, png);
            written.add(png);
            written.add(SimFiles.writeComparison(c, outDir.resolve("compare.csv")));
        } else {
            long chartBucket = chartBucket(args.option("--chart-bucket").orElse(null), scenario);
            boolean trace = !args.flag("--no-trace");
            long t0 = System.nanoTime();
            SimResult r = Simulator.standard().withTrace(trace).run(scenario);
            SimReport.print(r, (System.nanoTime() - t0) / 1e9, out);
            Files.createDirectories(outDir);
            for (int i = 0; i < scenario.gpus().size(); i++) {
                GpuSpec gpu = scenario.gpus().get(i);
                Path png = charts.get(i);
                ShareChart.write(r, gpu, png, chartBucket);
                written.add(png);
            }
            written.add(SimFiles.writeShares(r, outDir.resolve("shares.csv")));
            written.add(SimFiles.writeMetrics(r, outDir.resolve("metrics.csv")));
            if (trace) {
                written.add(SimFiles.writeTrace(r, outDir.resolve("trace.csv")));
            }
        }
        out.println();
        out.println("Wrote:");
        for (Path p : written) {
            out.println("  " + p);
        }
        return 0;
    }

    /** How the scenario file names GPU {@code i}'s id: {@code gpu.id} (one GPU) or {@code gpus[i].id}. */
    private static String gpuKey(Path file, Scenario scenario, int i) {
        boolean array = scenario.gpus().size() > 1;
        try {
            array = io.qgpu.json.QgpuJson.mapper().readTree(file.toFile()).has("gpus");
        } catch (IOException | RuntimeException e) {
            // the file was read a moment ago; keep the guess from the count
        }
        return array ? "gpus[" + i + "].id" : "gpu.id";
    }

    /** {@code adaptive} or a fixed delay such as {@code 100ms}. */
    static ReleasePolicy release(String value, Scenario scenario) {
        if (value.equals("adaptive")) {
            return ReleaseComparison.adaptiveFor(scenario);
        }
        try {
            return ReleasePolicy.fixed(Durations.parse("--release", value));
        } catch (io.qgpu.api.InvalidValueException e) {
            throw new UsageException("--release must be adaptive or a delay such as 100ms, got " + value);
        }
    }

    /** The chart's bar width: the scenario's bucket, the quota window, or a multiple of the bucket. */
    static long chartBucket(String value, Scenario scenario) {
        if (value == null) {
            return scenario.bucketNanos();
        }
        long b = value.equals("window") ? scenario.compute().windowNanos()
                : Durations.parse("--chart-bucket", value).toNanos();
        if (b <= 0 || b % scenario.bucketNanos() != 0) {
            throw new UsageException("--chart-bucket must be a positive multiple of the scenario's bucket ("
                    + SimReport.dur(scenario.bucketNanos()) + "), got " + value);
        }
        return b;
    }
}
