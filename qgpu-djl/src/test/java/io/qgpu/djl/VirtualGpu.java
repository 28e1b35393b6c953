package io.qgpu.djl;

import static org.junit.jupiter.api.Assertions.fail;

import ai.djl.ndarray.NDList;
import ai.djl.translate.Batchifier;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorContext;
import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.ManualGateTimer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * The tests' clock: a gate on a manual ticker and a hand-cranked timer, a translator whose forward passes
 * take a fixed time on that clock (the real model computes; the virtual time is what the gate counts), and a
 * driver that moves the clock only while the worker is held by the gate.
 */
final class VirtualGpu {
    /**
     * The tests' worker threads, one per task. Not the common pool: with 2 CPUs its parallelism is 1, and on
     * JDK 25 {@code CompletableFuture.supplyAsync} runs there even so (JDK 17 starts a thread per task at that
     * parallelism), so a worker held by the gate would keep a second task from ever starting.
     */
    static final ExecutorService THREADS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "test-worker");
        t.setDaemon(true);
        return t;
    });
    final AtomicLong now = new AtomicLong(1_000_000_000L);
    final ManualGateTimer timer = new ManualGateTimer(now::get);
    /** Virtual [start, end] of every forward pass, in order. */
    final List<long[]> periods = new CopyOnWriteArrayList<>();
    final AtomicLong progress = new AtomicLong();

    Gate gate(GateConfig.Builder config) {
        return Gate.create("GPU-virtual", config.ticker(now::get).timer(timer).usageReportInterval(Duration.ZERO).build());
    }

    /** {@code delegate} with each forward pass (each processInput / batchProcessInput) taking {@code nanos} of virtual time. */
    <I, O> Translator<I, O> timed(Translator<I, O> delegate, long nanos) {
        return new Translator<>() {
            @Override
            public NDList processInput(TranslatorContext ctx, I input) throws Exception {
                NDList l = delegate.processInput(ctx, input);
                pass(nanos);
                return l;
            }

            @Override
            public NDList batchProcessInput(TranslatorContext ctx, List<I> inputs) throws Exception {
                NDList l = delegate.batchProcessInput(ctx, inputs);
                pass(nanos);
                return l;
            }

            @Override
            public O processOutput(TranslatorContext ctx, NDList list) throws Exception {
                return delegate.processOutput(ctx, list);
            }

            @Override
            public List<O> batchProcessOutput(TranslatorContext ctx, NDList list) throws Exception {
                return delegate.batchProcessOutput(ctx, list);
            }

            @Override
            public Batchifier getBatchifier() {
                return delegate.getBatchifier();
            }
        };
    }

    private void pass(long nanos) {
        long start = now.get();
        long end = now.addAndGet(nanos);
        periods.add(new long[] {start, end});
        progress.incrementAndGet();
    }

    /**
     * Moves the clock to the timer's next task whenever the worker is held by the gate ({@code held}), until
     * the worker ends. The worker moves the clock only inside forward passes, so the two never move it at
     * once, except right after a wake-up, before the gate has let the worker go (then the clock may jump to
     * a later task: the gate still decides from the ticker, and the audit holds for any timeline).
     */
    void drive(Future<?> worker, BooleanSupplier held) {
        long hang = System.nanoTime() + 20_000_000_000L;
        while (!worker.isDone()) {
            if (System.nanoTime() > hang) {
                fail("the worker made no progress: held=" + held.getAsBoolean() + ", next timer at " + timer.nextAt());
            }
            if (!held.getAsBoolean() || timer.nextAt() == Long.MAX_VALUE) {
                Thread.yield();
                continue;
            }
            long p = progress.get();
            now.accumulateAndGet(timer.nextAt(), Math::max);
            timer.runDue();
            long settle = System.nanoTime() + 200_000_000L;  // speed only: see above
            while (!worker.isDone() && progress.get() == p && System.nanoTime() < settle) {
                Thread.yield();
            }
        }
    }

    /**
     * The most lease time in any window of {@code windowNanos}: the periods' overlap with each window that ends
     * at a period's end (the sliding sum peaks there).
     */
    long maxInWindow(long windowNanos) {
        long max = 0;
        for (long[] end : periods) {
            long to = end[1];
            long from = to - windowNanos;
            long sum = 0;
            for (long[] p : periods) {
                sum += Math.max(0, Math.min(p[1], to) - Math.max(p[0], from));
            }
            max = Math.max(max, sum);
        }
        return max;
    }

    long longestPeriod() {
        return periods.stream().mapToLong(p -> p[1] - p[0]).max().orElse(0);
    }
}
