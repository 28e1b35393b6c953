package io.qgpu.cli;

import io.qgpu.cli.replay.ReplayChart;
import io.qgpu.cli.replay.TraceChecks;
import io.qgpu.cli.replay.TraceCsv;
import io.qgpu.cli.replay.TraceNode;
import io.qgpu.cli.replay.TracePod;
import io.qgpu.cli.replay.TraceReplay;
import io.qgpu.cli.replay.Workload;
import io.qgpu.core.placement.FragmentationScorer;
import io.qgpu.core.placement.RequestMix;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * {@code qgpu replay}: replays a GPU cluster trace (a node list and a pod list in the columns of
 * Alibaba's {@code cluster-trace-gpu-v2023}) through the placement engine under several policies and
 * seeds, and reports the GPU allocation rate against the arrived workload: a CSV per policy, a
 * summary CSV, a chart, and a table at the chosen arrived share.
 */
final class ReplayCommand implements Subcommand {

    @Override
    public String name() {
        return "replay";
    }

    @Override
    public String summary() {
        return "replay a GPU cluster trace (openb node/pod CSVs): allocation rate vs arrived workload per policy";
    }

    @Override
    public String usage() {
        return String.join("\n",
                "usage: qgpu replay --nodes NODES.csv --pods PODS.csv [--policies P,P] [--seeds 42-51] [--ratio 1.3]",
                "                   [--at 1.3] [--coverage 0.95] [--no-cpu-pods] [--no-cpu-balance] [--resolution 100]",
                "                   [--shortlist N] [--threads N] [--out DIR]",
                "",
                "Builds the arrival stream as the FGD paper's simulator does (pods sorted by name and shuffled with",
                "the seed, then copies drawn with the seed until the GPU capacity asked reaches --ratio times the",
                "cluster's), places each pod once through the placement engine and ledger (host CPU and memory as a",
                "node filter; pods never leave), and records the share of GPU capacity allocated as the workload arrives.",
                "",
                "  --nodes FILE       node list: sn,cpu_milli,memory_mib,gpu,model",
                "  --pods FILE        pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,...]",
                "  --policies LIST    comma separated: binpack, spread, default, fragmentation, fragmentation-sample,",
                "                     kube-dra, dra-allocator (default binpack,fragmentation); kube-dra is Kubernetes' default",
                "                     path as a baseline: kube-scheduler's default node scores (LeastAllocated +",
                "                     BalancedAllocation on CPU and memory) over its adaptive share of the nodes, ties broken",
                "                     at random with the seed, and the DRA allocator's first-fit devices in index order;",
                "                     dra-allocator is qgpu's DRA allocator deciding each pod as a ResourceClaim on the",
                "                     nodes' ResourceSlices (no API server), with fragmentation-sample's engine",
                "  --seeds S          seeds: a range 42-51 or a list 42,43 (default 42-51)",
                "  --ratio R          inflate the workload to R times the GPU capacity (default 1.3)",
                "  --at A             report the allocation rate once A times the capacity has arrived (default: --ratio)",
                "  --coverage C       typical requests of the fragmentation policy: the most frequent pod shapes",
                "                     covering C of the pods (default 0.95)",
                "  --no-cpu-pods      leave CPU-only pods out of the typical requests (the paper keeps them: all free GPU",
                "                     capacity counts as fragmentation for them)",
                "  --no-cpu-balance   score the fragmentation policies with the paper's measure alone, without qgpu's",
                "                     CPU balance term (free GPU compute that a node's free CPU cannot feed at the",
                "                     CPU the request mix asks per GPU)",
                "  --resolution R     the fragmentation score's resolution: R steps of the sigmoid of the delta, as the",
                "                     paper's integer score out of 100 (default 100); 0 for the exact linear score",
                "  --shortlist N      how many nodes, best first by load, the fragmentation policies and dra-allocator",
                "                     search GPU sets and score fragmentation on per pod (default: every node, as the",
                "                     paper's simulator; the DRA allocator's jar defaults to 8, its --shortlist)",
                "  --threads N        replays run side by side, one per thread (default: the number of processors);",
                "                     each replay is sequential and seeded, so the numbers do not depend on N",
                "  --out DIR          where to write curve-<policy>.csv, summary.csv and curve.png (default qgpu-replay-out);",
                "                     none of them may be --nodes or --pods (refused before the run, exit 2)");
    }

    /** The most the workload may be inflated to, in times the cluster's GPU capacity (the replay's own limit). */
    static final double MAX_RATIO = 100;
    /** The most replays run side by side. */
    static final int MAX_THREADS = 1024;

    @Override
    public int run(List<String> args, PrintStream out, PrintStream err) throws IOException {
        Args a = Args.parse(args, Set.of("--no-cpu-pods", "--no-cpu-balance"), Set.of("--nodes", "--pods", "--policies", "--seeds", "--ratio", "--at", "--coverage",
                "--resolution", "--shortlist", "--threads", "--out"));
        Path nodesFile = OutputNames.userPath("--nodes", a.option("--nodes").orElseThrow(() -> new UsageException("missing --nodes")));
        Path podsFile = OutputNames.userPath("--pods", a.option("--pods").orElseThrow(() -> new UsageException("missing --pods")));
        List<TraceReplay.Policy> policies = new ArrayList<>();
        for (String p : a.option("--policies").orElse("binpack,fragmentation").split(",")) {
            policies.add(TraceReplay.Policy.fromName(p.trim()));
        }
        List<Long> seeds = seeds(a.option("--seeds").orElse("42-51"));
        String ratioText = a.option("--ratio").orElse("1.3");
        double ratio = number("--ratio", ratioText);
        if (ratio > MAX_RATIO) {
            throw new UsageException("--ratio " + ratioText + ": must be more than 0 and at most " + (int) MAX_RATIO
                    + " (times the cluster's GPU capacity)");
        }
        double at = number("--at", a.option("--at").orElse(ratioText));
        if (at > ratio) {
            throw new UsageException("--at " + a.option("--at").orElse("") + ": must be at most --ratio (" + ratioText
                    + "): no workload arrives after --ratio times the capacity");
        }
        double coverage = number("--coverage", a.option("--coverage").orElse("0.95"));
        if (coverage > 1) {
            throw new UsageException("--coverage " + a.option("--coverage").orElse("") + ": must be more than 0 and at most 1");
        }
        String resText = a.option("--resolution").orElse(Integer.toString(FragmentationScorer.PAPER_RESOLUTION));
        int resolution;
        try {
            resolution = Integer.parseInt(resText.trim());
        } catch (NumberFormatException e) {
            resolution = -1;
        }
        if (resolution < 0 || resolution > FragmentationScorer.MAX_RESOLUTION) {
            throw new UsageException("--resolution " + resText + ": must be 0 (the exact linear score) or a whole number of steps"
                    + " between 1 and " + FragmentationScorer.MAX_RESOLUTION);
        }
        int shortlist = TraceReplay.EVERY_NODE;
        if (a.option("--shortlist").isPresent()) {
            String v = a.option("--shortlist").get();
            try {
                shortlist = Integer.parseInt(v.trim());
            } catch (NumberFormatException e) {
                shortlist = -1;
            }
            if (shortlist < 1) {
                throw new UsageException("--shortlist " + v + ": must be a whole number of nodes, 1 or more (leave it out for every node)");
            }
        }
        Path outDir = OutputNames.userPath("--out", a.option("--out").orElse("qgpu-replay-out"));
        String threadsText = a.option("--threads").orElse(Integer.toString(Runtime.getRuntime().availableProcessors()));
        int threads;
        try {
            threads = Integer.parseInt(threadsText.trim());
        } catch (NumberFormatException e) {
            threads = 0;
        }
        if (threads < 1 || threads > MAX_THREADS) {
            throw new UsageException("--threads " + threadsText + ": must be a whole number between 1 and " + MAX_THREADS);
        }

        FileRoles files = new FileRoles().input("--nodes", nodesFile).input("--pods", podsFile)
                .outputIn("--out", outDir, outDir.resolve("summary.csv")).outputIn("--out", outDir, outDir.resolve("curve.png"));
        for (TraceReplay.Policy policy : policies) {
            files.outputIn("--out", outDir, OutputNames.file(outDir, "curve-", "--policies", policy.wireName(), ".csv"));
        }
        files.check();
        List<TraceNode> nodes = TraceCsv.nodes(nodesFile);
        List<TracePod> pods = TraceCsv.pods(podsFile);
        long capacity = 0;
        for (TraceNode n : nodes) {
            capacity += 1000L * n.gpus();
        }
        if (capacity == 0) {
            throw new UsageException("--nodes " + nodesFile + ": no node has a GPU (the gpu column is 0 on all "
                    + nodes.size() + " rows); nothing to replay");
        }
        if (pods.isEmpty()) {
            throw new UsageException("--pods " + podsFile + ": holds no pods (only the header); nothing to replay");
        }
        if (pods.stream().noneMatch(p -> p.gpus() > 0)) {
            throw new UsageException("--pods " + podsFile + ": no pod asks for a GPU (num_gpu is 0 on every row); nothing to replay");
        }
        TraceChecks.warnings(nodes, pods, nodesFile, podsFile).forEach(w -> out.println("warning: " + w));
        RequestMix typical = Workload.typicalMix(pods, coverage, !a.flag("--no-cpu-pods"));
        out.printf(Locale.ROOT, "%d nodes, %d GPUs, %d pods; %d typical request shapes; inflating to %.0f%%, reporting at %.0f%%%n",
                nodes.size(), capacity / 1000, pods.size(), typical.size(), ratio * 100, at * 100);
        Files.createDirectories(outDir);
        int maxPercent = (int) Math.floor(ratio * 100 + 1e-9);
        Map<String, double[]> means = new LinkedHashMap<>();
        StringBuilder summary = new StringBuilder("policy,seed,arrived_percent,allocation_percent,placed,refused\n");
        out.printf(Locale.ROOT, "%-22s %8s %8s %8s   %s%n", "policy", "mean", "min", "max", "per seed");
        Map<String, TraceReplay.Result> results = runAll(nodes, pods, capacity, ratio, policies, seeds, typical, resolution,
                !a.flag("--no-cpu-balance"), shortlist, threads);
        for (TraceReplay.Policy policy : policies) {
            List<double[]> curves = new ArrayList<>();
            List<Double> atShare = new ArrayList<>();
            for (long seed : seeds) {
                TraceReplay.Result r = results.get(policy.wireName() + "/" + seed);
                curves.add(ReplayChart.curve(r, maxPercent));
                double v = 100 * r.allocationAt(at);
                atShare.add(v);
                summary.append(String.format(Locale.ROOT, "%s,%d,%.2f,%.3f,%d,%d%n", policy.wireName(), seed,
                        Math.min(at, r.arrivedShare()) * 100, v, r.placed(), r.refused()));
            }
            double[] mean = ReplayChart.mean(curves);
            means.put(policy.wireName(), mean);
            writeCurve(OutputNames.file(outDir, "curve-", "--policies", policy.wireName(), ".csv"), seeds, curves, mean);
            StringBuilder per = new StringBuilder();
            for (double v : atShare) {
                per.append(String.format(Locale.ROOT, " %.2f", v));
            }
            out.printf(Locale.ROOT, "%-22s %7.2f%% %7.2f%% %7.2f%%  %s%n", policy.wireName(),
                    atShare.stream().mapToDouble(Double::doubleValue).average().orElse(0),
                    atShare.stream().mapToDouble(Double::doubleValue).min().orElse(0),
                    atShare.stream().mapToDouble(Double::doubleValue).max().orElse(0), per.toString().trim());
        }
        Files.writeString(outDir.resolve("summary.csv"), summary);
        ReplayChart.write(means, String.format(Locale.ROOT, "GPU allocation vs arrived workload (mean of %d seeds)", seeds.size()),
                outDir.resolve("curve.png"));
        out.println("wrote " + outDir.resolve("summary.csv") + ", curve-<policy>.csv and curve.png");
        return 0;
    }

    /** Every (policy, seed) replay, side by side on {@code threads} threads; keyed {@code policy/seed}. */
    private static Map<String, TraceReplay.Result> runAll(List<TraceNode> nodes, List<TracePod> pods, long capacity, double ratio,
                                                     List<TraceReplay.Policy> policies, List<Long> seeds, RequestMix typical,
                                                     int resolution, boolean cpuBalance, int shortlist, int threads) {
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, threads));
        try {
            Map<String, Future<TraceReplay.Result>> futures = new LinkedHashMap<>();
            for (TraceReplay.Policy policy : policies) {
                for (long seed : seeds) {
                    futures.put(policy.wireName() + "/" + seed, pool.submit(() ->
                            TraceReplay.run(nodes, Workload.stream(pods, capacity, ratio, seed), policy, seed, typical, resolution, cpuBalance,
                                    shortlist)));
                }
            }
            Map<String, TraceReplay.Result> out = new LinkedHashMap<>();
            for (Map.Entry<String, Future<TraceReplay.Result>> e : futures.entrySet()) {
                try {
                    out.put(e.getKey(), e.getValue().get());
                } catch (ExecutionException ex) {
                    Throwable c = ex.getCause();
                    if (c instanceof RuntimeException re) {
                        throw re;
                    }
                    throw new IllegalStateException("replay " + e.getKey() + " failed", c);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while replaying " + e.getKey(), ex);
                }
            }
            return out;
        } finally {
            pool.shutdownNow();
        }
    }

    private static void writeCurve(Path file, List<Long> seeds, List<double[]> curves, double[] mean) throws IOException {
        StringBuilder sb = new StringBuilder("arrived_percent");
        for (long s : seeds) {
            sb.append(",seed_").append(s);
        }
        sb.append(",mean\n");
        for (int i = 0; i < mean.length; i++) {
            sb.append(i + 1);
            for (double[] c : curves) {
                sb.append(String.format(Locale.ROOT, ",%.3f", c[i]));
            }
            sb.append(String.format(Locale.ROOT, ",%.3f%n", mean[i]));
        }
        Files.writeString(file, sb);
    }

    static List<Long> seeds(String spec) {
        List<Long> out = new ArrayList<>();
        try {
            for (String part : spec.split(",")) {
                String p = part.trim();
                int dash = p.indexOf('-', 1);
                if (dash > 0) {
                    long from = Long.parseLong(p.substring(0, dash));
                    long to = Long.parseLong(p.substring(dash + 1));
                    if (to < from || to - from > 10_000) {
                        throw new UsageException("--seeds " + spec + ": a range must go up, by at most 10000 seeds");
                    }
                    for (long s = from; s <= to; s++) {
                        out.add(s);
                    }
                } else {
                    out.add(Long.parseLong(p));
                }
            }
        } catch (NumberFormatException e) {
            throw new UsageException("--seeds " + spec + ": not a seed list (42-51 or 42,43)");
        }
        return out;
    }

    private static double number(String flag, String v) {
        try {
            double d = Double.parseDouble(v);
            if (!(d > 0) || Double.isInfinite(d)) {
                throw new UsageException(flag + " " + v + ": must be a number > 0");
            }
            return d;
        } catch (NumberFormatException e) {
            throw new UsageException(flag + " " + v + ": not a number");
        }
    }
}
