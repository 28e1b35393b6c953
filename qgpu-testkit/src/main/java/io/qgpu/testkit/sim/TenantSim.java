package io.qgpu.testkit.sim;

import java.util.ArrayDeque;
import java.util.SplittableRandom;
import org.jspecify.annotations.Nullable;

/** One tenant's workload generator, work queue and counters during a run (package-internal). */
final class TenantSim {

    /** A unit of GPU work: a kernel or a request, with the GPU time it still needs. */
    static final class Item {
        final long arrival;
        double remaining;
        final boolean request;
        final boolean lastOfIteration;

        Item(long arrival, double remaining, boolean request, boolean lastOfIteration) {
            this.arrival = arrival;
            this.remaining = remaining;
            this.request = request;
            this.lastOfIteration = lastOfIteration;
        }
    }

    final TenantSpec spec;
    final String id;
    final boolean online;
    final SplittableRandom rnd;
    private final SimRun run;
    private @Nullable GpuSim gpu;

    final ArrayDeque<Item> queue = new ArrayDeque<>();
    @Nullable Item current;
    /** The machine knows this tenant has work (Submit applied, Idle not yet). */
    boolean submitted;
    long suspendEpoch;
    private long iterationStart;

    final BusyLog.Builder busy = new BusyLog.Builder();
    final LongList latencies = new LongList();
    final LongList preemptionWaits = new LongList();
    final LongList onlineWaits = new LongList();
    long suspensions;
    long forced;
    long iterations;
    long grants;

    TenantSim(TenantSpec spec, SplittableRandom rnd, SimRun run) {
        this.spec = spec;
        this.id = spec.id();
        this.online = spec.online();
        this.rnd = rnd;
        this.run = run;
    }

    void attach(GpuSim g) {
        this.gpu = g;
        long from = spec.activeFromNanos();
        if (from < run.end()) {
            run.at(from, this::begin);
        }
    }

    boolean hasWork() {
        return current != null || !queue.isEmpty();
    }

    /** The item to run: the one in progress, or the next queued; null when the tenant has no work. */
    @Nullable Item next() {
        if (current == null) {
            current = queue.poll();
        }
        return current;
    }

    /** The item in progress; called only while the tenant runs one (a call without one is a bug of the simulator). */
    Item running() {
        return Required.of(current, id, "has no item in progress");
    }

    /** The GPU this tenant runs on; set by {@link #attach} before any of its work is scheduled. */
    private GpuSim gpu() {
        return Required.of(gpu, id, "is not attached to a GPU");
    }

    private boolean active() {
        return run.now() < spec.activeUntilNanos();
    }

    private void begin() {
        Workload w = spec.workload();
        if (w instanceof Workload.ClosedLoop c) {
            addWork(new Item(run.now(), c.kernel().sample(rnd), false, false));
        } else if (w instanceof Workload.OpenLoop) {
            scheduleArrival();
        } else if (w instanceof Workload.Training) {
            startIteration();
        }
    }

    private void scheduleArrival() {
        Workload.OpenLoop o = (Workload.OpenLoop) spec.workload();
        double gapNanos = -Math.log(1.0 - rnd.nextDouble()) * 1e9 / o.ratePerSecond();
        long t = run.now() + Math.max(1, Math.round(gapNanos));
        if (t < spec.activeUntilNanos() && t <= run.end()) {
            run.at(t, () -> {
                addWork(new Item(run.now(), o.service().sample(rnd), true, false));
                scheduleArrival();
            });
        }
    }

    private void startIteration() {
        if (!active()) {
            return;
        }
        Workload.Training t = (Workload.Training) spec.workload();
        long compute = t.compute().sample(rnd);
        int k = t.kernelsPerIteration();
        iterationStart = run.now();
        long each = compute / k;
        for (int i = 0; i < k; i++) {
            long len = i == k - 1 ? compute - each * (k - 1) : each;
            queue.add(new Item(run.now(), len, false, i == k - 1));
        }
        if (!submitted) {
            gpu().onWork(this);
        }
    }

    private void addWork(Item item) {
        queue.add(item);
        if (!submitted) {
            gpu().onWork(this);
        }
    }

    /**
     * {@code current} finished at now: count it and produce what follows (the next kernel at once, or
     * after a think/data-loading gap).
     */
    void complete() {
        Item done = running();
        current = null;
        Workload w = spec.workload();
        if (done.request) {
            long latency = run.now() - done.arrival;
            latencies.add(latency);
            if (run.tracing()) {
                run.trace(gpu().id, id, TraceKind.REQUEST_DONE, "latency=" + Dist.fmt(latency));
            }
        } else if (w instanceof Workload.ClosedLoop c) {
            long think = c.think().sample(rnd);
            if (think == 0) {
                if (active()) {
                    queue.add(new Item(run.now(), c.kernel().sample(rnd), false, false));
                }
            } else if (run.now() + think < spec.activeUntilNanos()) {
                run.at(run.now() + think, () -> addWork(new Item(run.now(), c.kernel().sample(rnd), false, false)));
            }
        } else if (w instanceof Workload.Training t && done.lastOfIteration) {
            iterations++;
            if (run.tracing()) {
                run.trace(gpu().id, id, TraceKind.ITERATION, "n=" + iterations + " took=" + Dist.fmt(run.now() - iterationStart));
            }
            long gap = t.dataLoad().sample(rnd);
            if (gap == 0) {
                startIteration();
            } else {
                run.at(run.now() + gap, this::startIteration);
            }
        }
    }

    long pendingRequests() {
        long n = 0;
        if (current != null && current.request) {
            n++;
        }
        for (Item i : queue) {
            if (i.request) {
                n++;
            }
        }
        return n;
    }

    long activeNanos(long end) {
        long from = Math.min(spec.activeFromNanos(), end);
        long until = Math.min(spec.activeUntilNanos(), end);
        return Math.max(0, until - from);
    }
}
