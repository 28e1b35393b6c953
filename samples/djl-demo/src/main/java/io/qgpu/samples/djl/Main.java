package io.qgpu.samples.djl;

import ai.djl.Device;
import ai.djl.Model;
import ai.onnxruntime.OrtException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.GateRegistry;
import io.qgpu.djl.OnnxRuntimeOptions;
import io.qgpu.djl.QgpuDjl;
import io.qgpu.djl.QgpuEnvironment;
import io.qgpu.djl.testing.OnnxMlp;
import java.io.ByteArrayInputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The DJL demo: an HTTP inference server (the online tenant) and an offline batch job in one JVM run the same
 * real model, a multi-layer perceptron written as ONNX by {@link OnnxMlp}, through DJL's ONNX Runtime engine
 * on the CPU; the program sends bursts of requests to itself and prints the online latency (p50, p99) and the
 * offline throughput, first without the gate, then with it (the two tenants read from {@code QGPU_*}
 * environments, as a pod's would be).
 *
 * <pre>
 * ./mvnw -q -DskipTests -pl samples/djl-demo -am package
 * java -jar samples/djl-demo/target/djl-demo.jar            # about 12 s
 * java -jar samples/djl-demo/target/djl-demo.jar --quick    # a few seconds
 * java -jar samples/djl-demo/target/djl-demo.jar --cuda     # ONNX Runtime's CUDA provider (needs onnxruntime_gpu; untested)
 * </pre>
 */
public final class Main {

    static final int INPUTS = 256;
    static final int OUTPUTS = 64;

    /** What one phase measured. */
    record Phase(String name, long[] latencies, int[] statuses, long[] handlerNanos, long[] gateWaits,
                 double offlineRowsPerSecond, long preemptions, int leakedLeases) {

        long ok() {
            return Arrays.stream(statuses).filter(x -> x == 200).count();
        }
    }

    /** Both phases. */
    record Report(DemoConfig config, OnnxMlp model, Phase withoutGate, Phase withGate) {
    }

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        DemoConfig c = DemoConfig.defaults();
        boolean cuda = false;
        String usage = "usage: java -jar djl-demo.jar [--quick] [--cuda]";
        for (String a : args) {
            switch (a) {
                case "--quick" -> c = DemoConfig.quick();
                case "--cuda" -> cuda = true;
                case "--help", "-h" -> {
                    System.out.println(usage);
                    return;
                }
                default -> {
                    System.err.println("unknown argument: " + a + " (" + usage + ")");
                    System.exit(2);
                }
            }
        }
        offline(Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI()).getParent());
        Report r;
        try {
            r = run(c, cuda, System.out);
        } catch (OrtException e) {
            System.err.println("ONNX Runtime refused the " + (cuda ? "CUDA provider" : "model") + ": " + e.getMessage()
                    + (cuda ? " (--cuda needs com.microsoft.onnxruntime:onnxruntime_gpu on the class path and a GPU)" : ""));
            System.exit(1);
            return;
        }
        print(r, System.out);
    }

    /**
     * DJL stays off the network: offline mode, no telemetry (DJL's engine start otherwise asks the cloud
     * metadata address), caches in {@code dir/djl-cache}. Settings given on the command line win.
     */
    static void offline(Path dir) {
        System.setProperty("ai.djl.offline", System.getProperty("ai.djl.offline", "true"));
        System.setProperty("OPT_OUT_TRACKING", System.getProperty("OPT_OUT_TRACKING", "true"));
        String cache = dir.resolve("djl-cache").toString();
        System.setProperty("DJL_CACHE_DIR", System.getProperty("DJL_CACHE_DIR", cache));
        System.setProperty("ENGINE_CACHE_DIR", System.getProperty("ENGINE_CACHE_DIR", cache));
    }

    /** Runs both phases; progress goes to {@code log}. */
    static Report run(DemoConfig c, boolean cuda, PrintStream log) throws Exception {
        OnnxMlp mlp = OnnxMlp.builder().inputs(INPUTS).hidden(c.hidden()).outputs(OUTPUTS).seed(42).build();
        log.printf(Locale.ROOT, "qgpu DJL demo: an HTTP server and a batch job share one model on ONNX Runtime (%s)%n",
                cuda ? "CUDA provider" : "CPU");
        log.printf(Locale.ROOT, "  model: %s, %d KB of ONNX, %.2f M multiply-adds per row%n", mlp,
                mlp.toBytes().length / 1024, mlp.multiplyAddsPerRow() / 1e6);
        log.printf(Locale.ROOT, "  online: %d requests of %d rows in %d bursts of %d, one every %d ms, %d ms pause%n",
                c.requests(), c.requestRows(), c.bursts(), c.burstSize(), c.requestInterval().toMillis(), c.pause().toMillis());
        log.printf(Locale.ROOT, "  offline: %d workers, batches of %d rows, a checkpoint between batches; release delay %d ms%n%n",
                c.offlineWorkers(), c.offlineRows(), c.releaseDelay().toMillis());
        try (Model model = load(mlp, cuda)) {
            log.println("  running without the gate...");
            Phase without = phase("without the gate", c, model, false);
            log.println("  running with the gate...");
            Phase with = phase("with the gate", c, model, true);
            log.println();
            return new Report(c, mlp, without, with);
        }
    }

    /** The model on ONNX Runtime, one intra-op thread per prediction; with {@code cuda}, the CUDA provider. */
    static Model load(OnnxMlp mlp, boolean cuda) throws Exception {
        Map<String, Object> options = new HashMap<>();
        options.put("intraOpNumThreads", "1");
        if (cuda) {
            Map<String, String> env = new HashMap<>(System.getenv());
            env.putIfAbsent(QgpuEnvironment.PRIORITY, "online");
            options.putAll(OnnxRuntimeOptions.cuda(QgpuEnvironment.from(env), 0));
        }
        // loaded on the CPU device in both cases: with CUDA, ONNX Runtime's provider runs the graph on the GPU
        Model model = Model.newInstance("mlp", Device.cpu(), "OnnxRuntime");
        model.load(new ByteArrayInputStream(mlp.toBytes()), options);
        return model;
    }

    private static Phase phase(String name, DemoConfig c, Model model, boolean gated) throws Exception {
        GateRegistry gates = null;
        QgpuDjl online = null;
        QgpuDjl offline = null;
        Queue<Long> gateWaits = new ConcurrentLinkedQueue<>();
        AtomicLong preemptions = new AtomicLong();
        if (gated) {
            // the preemption bound is longer than an offline batch: online waits for the batches in progress
            gates = GateRegistry.create(uuid -> GateConfig.custom().policy(IsolationPolicy.ELASTIC)
                    .releaseDelay(c.releaseDelay()).preemptionBound(Duration.ofMillis(50)).build());
            // the two tenants as their pods' environments would describe them
            online = QgpuDjl.fromEnvironment(QgpuEnvironment.from(Map.of("QGPU_PRIORITY", "online",
                    "QGPU_TENANT", "inference")), gates, 0);
            offline = QgpuDjl.fromEnvironment(QgpuEnvironment.from(Map.of("QGPU_PRIORITY", "offline",
                    "QGPU_TENANT", "batch")), gates, 0);
            Gate gate = online.gate();
            gate.addListener(e -> {
                if (e instanceof GateEvent.LeaseGranted g && g.tenant().equals("inference")) {
                    gateWaits.add(g.waitedNanos());
                } else if (e instanceof GateEvent.Suspended s && s.reason() == GateEvent.SuspendReason.PREEMPTED) {
                    preemptions.incrementAndGet();
                }
            });
        }
        OfflineJob job = new OfflineJob(model, c, offline);
        try (OnlineServer server = new OnlineServer(model, c.requestRows(), online)) {
            job.start();
            long t0 = System.nanoTime();
            long r0 = job.rows();
            OpenLoopClient.Outcome o = OpenLoopClient.run(server.uri(), c);
            double seconds = (System.nanoTime() - t0) / 1e9;
            double rate = (job.rows() - r0) / seconds;
            job.stop();
            long[] handler = server.handlerNanos().stream().mapToLong(Long::longValue).toArray();
            int leaked = 0;
            if (gates != null) {
                leaked = online.gate().openLeases();
                gates.close();
            }
            return new Phase(name, o.latencies(), o.statuses(), handler,
                    gateWaits.stream().mapToLong(Long::longValue).toArray(), rate, preemptions.get(), leaked);
        }
    }

    static long percentile(long[] values, double p) {
        if (values.length == 0) {
            return 0;
        }
        long[] s = values.clone();
        Arrays.sort(s);
        return s[Math.min(s.length - 1, (int) Math.floor(p * s.length))];
    }

    static void print(Report r, PrintStream out) {
        out.printf(Locale.ROOT, "  online latency, client side (planned send to answer):%n");
        out.printf(Locale.ROOT, "  %-18s %12s %12s %18s %10s%n", "", "p50", "p99", "offline rows/s", "answered");
        for (Phase p : new Phase[] {r.withoutGate(), r.withGate()}) {
            out.printf(Locale.ROOT, "  %-18s %9.2f ms %9.2f ms %18.0f %6d/%d%n", p.name(), percentile(p.latencies(), 0.5) / 1e6,
                    percentile(p.latencies(), 0.99) / 1e6, p.offlineRowsPerSecond(), p.ok(), p.latencies().length);
        }
        out.printf(Locale.ROOT, "%n  server side (in the request handler):%n");
        out.printf(Locale.ROOT, "  %-18s %12s %12s %14s %14s%n", "", "handler p50", "handler p99", "gate wait p50", "gate wait p99");
        for (Phase p : new Phase[] {r.withoutGate(), r.withGate()}) {
            out.printf(Locale.ROOT, "  %-18s %9.2f ms %9.2f ms %11.2f ms %11.2f ms%n", p.name(),
                    percentile(p.handlerNanos(), 0.5) / 1e6, percentile(p.handlerNanos(), 0.99) / 1e6,
                    percentile(p.gateWaits(), 0.5) / 1e6, percentile(p.gateWaits(), 0.99) / 1e6);
        }
        out.printf(Locale.ROOT, "%n  with the gate, the batch job was suspended at a checkpoint %d times; %d leases left open.%n",
                r.withGate().preemptions(), r.withGate().leakedLeases());
    }
}
