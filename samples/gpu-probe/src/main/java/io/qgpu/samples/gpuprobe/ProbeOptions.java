package io.qgpu.samples.gpuprobe;

import java.util.regex.Pattern;

/**
 * What one probe run does, from the command line.
 *
 * <pre>{@code
 * ProbeOptions o = ProbeOptions.parse("--label", "a", "--seconds", "10", "--chunk-mib", "128");
 * o.seconds();   // 10.0
 * }</pre>
 *
 * @param label        a name for the run, printed in the result line ({@code [A-Za-z0-9._-]+})
 * @param library      the CUDA driver library to load, a name for the loader or a path
 * @param device       the CUDA device ordinal, as the process sees it (after {@code CUDA_VISIBLE_DEVICES})
 * @param chunkMiB     the first allocation size of the memory-ceiling search; halved after each refusal down to 1 MiB
 * @param maxMiB       stop the search once this much is allocated; 0: no cap (allocate until the driver refuses)
 * @param seconds      how long the timed kernel phase runs
 * @param iterations   dependent FMA iterations each kernel thread runs per launch
 * @param blocksPerSm  kernel blocks per multiprocessor (the grid is this times the device's SM count)
 * @param threads      threads per block, a multiple of 32 up to 1024
 * @param startAtMillis wall-clock time (ms since the epoch) to wait for before the kernel phase; 0: no wait.
 *                     Lets two probes started together time their kernels over the same interval.
 *
 * <p>Thread safety: immutable.
 */
public record ProbeOptions(String label, String library, int device, long chunkMiB, long maxMiB, double seconds,
                           int iterations, int blocksPerSm, int threads, long startAtMillis) {

    /** The default CUDA driver library name. */
    public static final String DEFAULT_LIBRARY = "libcuda.so.1";

    private static final Pattern LABEL = Pattern.compile("[A-Za-z0-9._-]{1,64}");

    /** The flags and what they take, for {@code --help}. */
    public static final String USAGE = String.join("\n",
            "usage: gpu-probe [flags]",
            "  --label NAME          name printed in the result line (default probe)",
            "  --library PATH        CUDA driver library (default " + DEFAULT_LIBRARY + ")",
            "  --device N            CUDA device ordinal (default 0)",
            "  --chunk-mib N         first allocation size of the ceiling search (default 256)",
            "  --max-mib N           stop allocating at N MiB; 0: until the driver refuses (default 0)",
            "  --seconds S           length of the timed kernel phase (default 5)",
            "  --iterations N        FMA iterations per thread per launch (default 1048576)",
            "  --blocks-per-sm N     grid size in blocks per multiprocessor (default 8)",
            "  --threads N           threads per block, multiple of 32, at most 1024 (default 256)",
            "  --start-at EPOCH_MS   wait until this wall-clock time before the kernel phase (default 0: no wait)",
            "exit codes: 0 measured, 2 bad flag, 3 no CUDA driver, 4 a CUDA call failed");

    /** The defaults: everything as {@link #USAGE} lists. */
    public static ProbeOptions defaults() {
        return new ProbeOptions("probe", DEFAULT_LIBRARY, 0, 256, 0, 5.0, 1 << 20, 8, 256, 0);
    }

    /**
     * Parses {@code --flag value} pairs (also {@code --flag=value}) over the defaults.
     *
     * @throws UsageException for an unknown flag, a missing value or a value out of range
     */
    public static ProbeOptions parse(String... args) throws UsageException {
        ProbeOptions o = defaults();
        String label = o.label;
        String library = o.library;
        int device = o.device;
        long chunkMiB = o.chunkMiB;
        long maxMiB = o.maxMiB;
        double seconds = o.seconds;
        int iterations = o.iterations;
        int blocksPerSm = o.blocksPerSm;
        int threads = o.threads;
        long startAt = o.startAtMillis;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            String flag;
            String value;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                flag = arg.substring(0, eq);
                value = arg.substring(eq + 1);
            } else {
                flag = arg;
                value = i + 1 < args.length ? args[++i] : null;
            }
            if (!flag.startsWith("--")) {
                throw new UsageException(flag, value, "not a flag: flags start with -- (see --help)");
            }
            switch (flag) {
                case "--label" -> {
                    String v = need(flag, value);
                    if (!LABEL.matcher(v).matches()) {
                        throw new UsageException(flag, v, "must be 1 to 64 of A-Z a-z 0-9 . _ -");
                    }
                    label = v;
                }
                case "--library" -> {
                    String v = need(flag, value);
                    if (v.isBlank()) {
                        throw new UsageException(flag, v, "must name a library");
                    }
                    library = v;
                }
                case "--device" -> device = (int) integer(flag, value, 0, 1023);
                case "--chunk-mib" -> chunkMiB = integer(flag, value, 1, 1L << 20);
                case "--max-mib" -> maxMiB = integer(flag, value, 0, 1L << 24);
                case "--seconds" -> seconds = decimal(flag, value);
                case "--iterations" -> iterations = (int) integer(flag, value, 1, Integer.MAX_VALUE);
                case "--blocks-per-sm" -> blocksPerSm = (int) integer(flag, value, 1, 64);
                case "--threads" -> {
                    threads = (int) integer(flag, value, 32, 1024);
                    if (threads % 32 != 0) {
                        throw new UsageException(flag, value, "must be a multiple of 32 (a whole number of warps)");
                    }
                }
                case "--start-at" -> startAt = integer(flag, value, 0, Long.MAX_VALUE);
                default -> throw new UsageException(flag, value, "unknown flag (see --help)");
            }
        }
        return new ProbeOptions(label, library, device, chunkMiB, maxMiB, seconds, iterations, blocksPerSm, threads, startAt);
    }

    private static String need(String flag, String value) throws UsageException {
        if (value == null) {
            throw new UsageException(flag, null, "needs a value");
        }
        return value;
    }

    private static long integer(String flag, String value, long min, long max) throws UsageException {
        String v = need(flag, value);
        long n;
        try {
            n = Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(flag, v, "must be a whole number between " + min + " and " + max);
        }
        if (n < min || n > max) {
            throw new UsageException(flag, v, "must be a whole number between " + min + " and " + max);
        }
        return n;
    }

    private static double decimal(String flag, String value) throws UsageException {
        String v = need(flag, value);
        double d;
        try {
            d = Double.parseDouble(v.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(flag, v, "must be a number of seconds above 0 and at most 3600");
        }
        if (!(d > 0 && d <= 3600)) {
            throw new UsageException(flag, v, "must be a number of seconds above 0 and at most 3600");
        }
        return d;
    }
}
