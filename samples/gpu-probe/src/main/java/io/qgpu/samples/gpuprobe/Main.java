package io.qgpu.samples.gpuprobe;

import java.io.PrintStream;

/**
 * {@code java -jar gpu-probe.jar [flags]}: measures the device-memory ceiling and the kernel throughput a
 * CUDA client gets, and prints them as one {@link ProbeResult#line() line}. Exit codes: 0 measured,
 * 2 a bad flag (one line naming the flag and the value), 3 {@code no CUDA driver} (the driver library
 * cannot be loaded), 4 a CUDA call failed (one line naming the call and the result).
 */
public final class Main {
    /** Exit code of a measured run. */
    public static final int OK = 0;
    /** Exit code of a bad flag. */
    public static final int USAGE = 2;
    /** Exit code when the CUDA driver library cannot be loaded. */
    public static final int NO_DRIVER = 3;
    /** Exit code when a CUDA call fails. */
    public static final int CUDA_FAILED = 4;

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the probe; returns the exit code. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        for (String a : args) {
            if (a.equals("--help") || a.equals("-h")) {
                out.println(ProbeOptions.USAGE);
                return OK;
            }
        }
        ProbeOptions options;
        try {
            options = ProbeOptions.parse(args);
        } catch (UsageException e) {
            err.println("gpu-probe: " + e.getMessage());
            return USAGE;
        }
        try (Cuda cuda = Cuda.load(options.library(), options.device())) {
            out.println(Probe.run(cuda, options).line());
            return OK;
        } catch (NoDriverException e) {
            err.println("no CUDA driver (" + e.getMessage() + ")");
            return NO_DRIVER;
        } catch (CudaException e) {
            err.println("gpu-probe: " + e.getMessage());
            return CUDA_FAILED;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("gpu-probe: interrupted");
            return CUDA_FAILED;
        }
    }
}
