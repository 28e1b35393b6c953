package io.qgpu.samples.gpuprobe;

import java.util.List;

/**
 * One probe run on an open {@link Cuda} context: the memory ceiling first (everything freed again), then
 * the busy kernel launched back to back for the requested time, timed with two events around all launches.
 *
 * <p>Thread safety: not thread-safe; runs on the thread that owns the context.
 */
public final class Probe {
    /** Each batch of launches between two waits for the device lasts about this long. */
    static final double BATCH_MILLIS = 100.0;
    /** At most this many launches between two waits, however short one launch is. */
    static final long MAX_BATCH = 1000;

    private Probe() {
    }

    /** Measures with these options; the kernel phase starts at {@link ProbeOptions#startAtMillis()} if that is later. */
    public static ProbeResult run(Cuda cuda, ProbeOptions o) throws CudaException, InterruptedException {
        int major = cuda.attribute(CudaNative.ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        int minor = cuda.attribute(CudaNative.ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        int cc = major * 10 + minor;
        int sms = cuda.attribute(CudaNative.ATTRIBUTE_MULTIPROCESSOR_COUNT);
        long[] info = cuda.memoryInfo();

        MemoryCeiling.Result ceiling = MemoryCeiling.measure(cuda, o.chunkMiB() * MemoryCeiling.MIB, o.maxMiB() * MemoryCeiling.MIB);

        int blocks = sms * o.blocksPerSm();
        long out = cuda.alloc(4L * blocks * o.threads());
        long launches = 0;
        double millis;
        try (Cuda.Kernel kernel = cuda.loadKernel(BusyKernel.ptx(cc), BusyKernel.ENTRY);
             Cuda.Event start = cuda.event();
             Cuda.Event end = cuda.event()) {
            List<Object> args = BusyKernel.arguments(out, o.iterations());
            // one launch first: the JIT and the first launch's setup stay out of the timed phase,
            // and its length sizes the batches
            start.record();
            kernel.launch(blocks, o.threads(), args);
            end.record();
            end.synchronize();
            double one = Math.max(0.001, end.millisSince(start));
            long batch = Math.min(MAX_BATCH, Math.max(1, Math.round(BATCH_MILLIS / one)));

            long wait = o.startAtMillis() - System.currentTimeMillis();
            if (wait > 0) {
                Thread.sleep(wait);
            }
            long deadline = System.nanoTime() + (long) (o.seconds() * 1e9);
            start.record();
            do {
                for (long i = 0; i < batch; i++) {
                    kernel.launch(blocks, o.threads(), args);
                }
                launches += batch;
                cuda.synchronize();
            } while (System.nanoTime() < deadline);
            end.record();
            end.synchronize();
            millis = end.millisSince(start);
        } finally {
            cuda.free(out);
        }
        return new ProbeResult(o.label(), o.device(), cuda.deviceName(), cuda.driverVersion(), cc, sms, info[1], info[0],
                ceiling, blocks, o.threads(), o.iterations(), launches, millis);
    }
}
