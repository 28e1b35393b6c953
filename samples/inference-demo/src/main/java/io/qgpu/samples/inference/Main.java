package io.qgpu.samples.inference;

import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.Tenant;
import io.qgpu.core.gate.GateTenantSpec;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The inference demo: an HTTP inference server on loopback and an offline batch job in the same JVM
 * share one simulated GPU; the program sends bursts of requests to itself and prints the online
 * latency (p50, p99) and the offline throughput, first without the runtime gate, then with it.
 *
 * <pre>
 * ./mvnw -q -DskipTests -pl samples/inference-demo -am package
 * java -jar samples/inference-demo/target/inference-demo.jar          # about 10 s
 * java -jar samples/inference-demo/target/inference-demo.jar --quick  # about 2 s
 * </pre>
 */
public final class Main {

    /** What one phase measured. */
    record Phase(String name, long[] latencies, int[] statuses, long[] gateWaits, long[] serverTimes,
                 double offlineSlicesPerSecond, long preemptions, int leakedLeases) {

        long percentile(double p) {
            return Main.percentile(latencies, p);
        }

        long ok() {
            return Arrays.stream(statuses).filter(x -> x == 200).count();
        }
    }

    /** Both phases. */
    record Report(DemoConfig config, Phase withoutGate, Phase withGate) {
    }

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        DemoConfig c = DemoConfig.defaults();
        for (String a : args) {
            if (a.equals("--quick")) {
                c = DemoConfig.quick();
            } else if (a.equals("--help") || a.equals("-h")) {
                System.out.println("usage: java -jar inference-demo.jar [--quick]");
                return;
            } else {
                System.err.println("unknown argument: " + a + " (usage: java -jar inference-demo.jar [--quick])");
                System.exit(2);
            }
        }
        print(run(c, System.out), System.out);
    }

    /** Runs both phases and returns what they measured; progress goes to {@code log}. */
    static Report run(DemoConfig c, PrintStream log) throws Exception {
        log.printf(Locale.ROOT, "qgpu inference demo: online requests and an offline batch job share one simulated GPU%n");
        log.printf(Locale.ROOT, "  online: %d requests in %d bursts of %d, one every %d ms, %.1f ms of GPU each, %d ms pause between bursts%n",
                c.requests(), c.bursts(), c.burstSize(), c.requestInterval().toMillis(),
                c.onlineKernel().toNanos() / 1e6, c.pause().toMillis());
        log.printf(Locale.ROOT, "  offline: %d workers, slices of %.1f ms of GPU; gate release delay %d ms%n%n",
                c.offlineWorkers(), c.offlineSlice().toNanos() / 1e6, c.releaseDelay().toMillis());
        log.println("  running without the gate...");
        Phase without = phase("without the gate", c, false);
        log.println("  running with the gate...");
        Phase with = phase("with the gate", c, true);
        log.println();
        return new Report(c, without, with);
    }

    private static Phase phase(String name, DemoConfig c, boolean gated) throws Exception {
        FakeGpu gpu = new FakeGpu();
        Gate gate = null;
        Tenant online = null;
        Tenant offline = null;
        AtomicLong preemptions = new AtomicLong();
        if (gated) {
            // the preemption bound is longer than a slice: online waits for the slices in progress
            // (at most one per offline worker) instead of overrunning them by force
            gate = Gate.create("GPU-demo", GateConfig.custom().releaseDelay(c.releaseDelay())
                    .preemptionBound(Duration.ofMillis(50)).build());
            online = gate.register(GateTenantSpec.online("inference").build());
            offline = gate.register(GateTenantSpec.offline("batch").build());
            gate.addListener(e -> {
                if (e instanceof GateEvent.Suspended s && s.reason() == GateEvent.SuspendReason.PREEMPTED) {
                    preemptions.incrementAndGet();
                }
            });
        }
        BatchJob job = new BatchJob(gpu, c.offlineWorkers(), c.offlineSlice().toNanos(), gate, offline);
        try (InferenceServer server = new InferenceServer(gpu, c.onlineKernel().toNanos(), gate, online)) {
            job.start();
            long t0 = System.nanoTime();
            long s0 = job.slices();
            OpenLoopClient.Outcome o = OpenLoopClient.run(server.uri(), c);
            long[] gateWaits = server.timings().stream().mapToLong(x -> x[0]).toArray();
            long[] serverTimes = server.timings().stream().mapToLong(x -> x[1]).toArray();
            double seconds = (System.nanoTime() - t0) / 1e9;
            double rate = (job.slices() - s0) / seconds;
            job.stop();
            int leaked = 0;
            if (gate != null) {
                leaked = gate.openLeases();
                gate.close();
            }
            return new Phase(name, o.latencies(), o.statuses(), gateWaits, serverTimes, rate, preemptions.get(), leaked);
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
        out.printf(Locale.ROOT, "  %-18s %12s %12s %18s %10s%n", "", "p50", "p99", "offline slices/s", "answered");
        for (Phase p : new Phase[] {r.withoutGate(), r.withGate()}) {
            out.printf(Locale.ROOT, "  %-18s %9.2f ms %9.2f ms %18.0f %6d/%d%n", p.name(), p.percentile(0.50) / 1e6,
                    p.percentile(0.99) / 1e6, p.offlineSlicesPerSecond(), p.ok(), p.latencies().length);
        }
        out.printf(Locale.ROOT, "%n  server side (in the request handler):%n");
        out.printf(Locale.ROOT, "  %-18s %12s %12s %14s %14s%n", "", "handler p50", "handler p99", "gate wait p50", "gate wait p99");
        for (Phase p : new Phase[] {r.withoutGate(), r.withGate()}) {
            out.printf(Locale.ROOT, "  %-18s %9.2f ms %9.2f ms %11.2f ms %11.2f ms%n", p.name(),
                    percentile(p.serverTimes(), 0.5) / 1e6, percentile(p.serverTimes(), 0.99) / 1e6,
                    percentile(p.gateWaits(), 0.5) / 1e6, percentile(p.gateWaits(), 0.99) / 1e6);
        }
        out.printf(Locale.ROOT, "%n  with the gate, offline work was suspended at a checkpoint %d times; %d leases left open.%n",
                r.withGate().preemptions(), r.withGate().leakedLeases());
    }
}
