package io.qgpu.benchmarks;

import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateEvent;
import io.qgpu.core.gate.Lease;
import io.qgpu.core.gate.Tenant;
import io.qgpu.core.gate.GateTenantSpec;
import io.qgpu.core.preempt.GpuMode;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Preemption with real threads: an offline worker runs empty slices and checks in between whether
 * it must yield ({@link Lease#shouldYield()}, then {@link Lease#checkpoint()}); the benchmark thread
 * acquires an online lease.
 *
 * <ul>
 *   <li>JMH's sample time of {@code onlineAcquire}: from calling {@code acquire} until the online
 *       lease is held, that is until the offline worker has seen the suspension and parked.</li>
 *   <li>The signal latency, measured inside the benchmark: from calling {@code acquire} until the
 *       offline worker sees the suspension at its check; its p50/p99/p99.9 are printed after each
 *       iteration ("signal latency"). It includes the wait for the worker thread to be on a CPU.</li>
 *   <li>The gate's own part of it: from calling {@code acquire} until the gate has published the
 *       suspension (revoked the offline permit), taken when its {@code ModeChanged} to
 *       {@code PREEMPTING} event reaches a listener ("published").</li>
 * </ul>
 * Between samples (outside the measurement) the online lease is closed and the worker resumes (the
 * release delay is 0 here so that samples come quickly; the preemption bound is large so that no
 * sample is cut short by force).
 *
 * <pre>
 * java -jar qgpu-benchmarks/target/benchmarks.jar GatePreemptionBenchmark -f 1 -wi 2 -i 5
 * </pre>
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class GatePreemptionBenchmark {

    private Gate gate;
    private Tenant online;
    private Thread worker;
    private volatile boolean stop;
    private volatile long requestedAt;
    private volatile long seenAt;
    private final AtomicLong resumes = new AtomicLong();
    private Lease onlineLease;
    private long resumesBefore;
    private long[] samples = new long[1 << 20];
    private int count;
    private final long[] published = new long[1 << 20];
    private volatile int publishedCount;

    @Setup(Level.Trial)
    public void setUp() {
        gate = Gate.create("GPU-preempt", GateConfig.custom()
                .releaseDelay(Duration.ZERO)
                .preemptionBound(Duration.ofSeconds(10))
                .usageReportInterval(Duration.ZERO)
                .build());
        online = gate.register(GateTenantSpec.online("infer").build());
        gate.addListener(e -> {
            if (e instanceof GateEvent.ModeChanged m && m.to() == GpuMode.PREEMPTING) {
                long t = System.nanoTime() - requestedAt;
                int n = publishedCount;
                if (n < published.length) {
                    published[n] = t;
                    publishedCount = n + 1;
                }
            }
        });
        Tenant offline = gate.register(GateTenantSpec.offline("train").build());
        worker = new Thread(() -> {
            try (Lease lease = gate.acquire(offline)) {
                while (!stop) {
                    // one (empty) slice of offline work, then the check between slices
                    if (lease.shouldYield()) {
                        seenAt = System.nanoTime();
                        lease.checkpoint();
                        resumes.incrementAndGet();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "offline-worker");
        worker.setDaemon(true);
        worker.start();
        while (gate.openLeases() == 0 || gate.mode() != GpuMode.OFFLINE) {
            Thread.onSpinWait();
        }
    }

    @Benchmark
    public Lease onlineAcquire() throws InterruptedException {
        resumesBefore = resumes.get();
        requestedAt = System.nanoTime();
        onlineLease = gate.acquire(online);
        return onlineLease;
    }

    @TearDown(Level.Invocation)
    public void afterEach() {
        if (count < samples.length) {
            samples[count++] = seenAt - requestedAt;
        }
        onlineLease.close();
        while (resumes.get() == resumesBefore) {     // the worker runs again before the next sample
            Thread.onSpinWait();
        }
    }

    @TearDown(Level.Iteration)
    public void report() {
        if (count == 0) {
            return;
        }
        print("signal latency (acquire -> offline sees suspension)", Arrays.copyOf(samples, count));
        print("published (acquire -> gate revoked the offline permit)", Arrays.copyOf(published, publishedCount));
        count = 0;
        publishedCount = 0;
    }

    private static void print(String what, long[] s) {
        if (s.length == 0) {
            return;
        }
        Arrays.sort(s);
        int n = s.length;
        System.out.printf("%n%s, %d samples: p50 %.2f us, p99 %.2f us, p99.9 %.2f us, max %.2f us", what, n,
                s[n / 2] / 1e3, s[(int) (n * 0.99)] / 1e3, s[(int) (n * 0.999)] / 1e3, s[n - 1] / 1e3);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        stop = true;
        worker.join();
        if (gate.openLeases() != 0) {
            throw new IllegalStateException("leases leaked: " + gate.openLeases());
        }
        gate.close();
    }
}
