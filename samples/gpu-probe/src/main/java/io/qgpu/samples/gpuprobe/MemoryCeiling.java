package io.qgpu.samples.gpuprobe;

import java.util.ArrayList;
import java.util.List;

/**
 * How much device memory a process can allocate: allocates chunks until the driver refuses, halves the
 * chunk after each refusal down to 1 MiB, then frees everything. The result is exact to below 1 MiB:
 * when the search ends, one more MiB would have been refused.
 *
 * <pre>{@code
 * MemoryCeiling.Result r = MemoryCeiling.measure(cuda, 256L << 20, 0);
 * r.bytes();   // what was held at once before the first 1 MiB refusal
 * }</pre>
 *
 * <p>Thread safety: stateless.
 */
public final class MemoryCeiling {
    /** 1 MiB, the smallest chunk the search tries. */
    public static final long MIB = 1L << 20;

    /**
     * What the search found.
     *
     * @param bytes       the most held at once
     * @param allocations how many allocations that took
     * @param refusal     the name of the last refusal's result code, {@code none} when the cap stopped the search
     *
     * <p>Thread safety: immutable.
     */
    public record Result(long bytes, int allocations, String refusal) {
    }

    private MemoryCeiling() {
    }

    /**
     * Runs the search.
     *
     * @param memory     where to allocate
     * @param chunkBytes the first chunk size, at least 1 MiB
     * @param capBytes   stop once this much is held; 0: no cap
     * @throws CudaException when freeing fails (an allocation refusal is the expected end, not an error)
     */
    public static Result measure(DeviceMemory memory, long chunkBytes, long capBytes) throws CudaException {
        if (chunkBytes < MIB) {
            throw new IllegalArgumentException("chunkBytes = " + chunkBytes + ": must be at least 1 MiB");
        }
        if (capBytes < 0) {
            throw new IllegalArgumentException("capBytes = " + capBytes + ": must be 0 (no cap) or more");
        }
        List<Long> held = new ArrayList<>();
        long total = 0;
        long chunk = chunkBytes;
        String refusal = "none";
        try {
            while (chunk >= MIB) {
                long size = chunk;
                if (capBytes > 0) {
                    long left = capBytes - total;
                    if (left <= 0) {
                        break;
                    }
                    size = Math.min(size, left);
                }
                try {
                    held.add(memory.alloc(size));
                    total += size;
                } catch (CudaException refused) {
                    refusal = refused.codeName();
                    chunk /= 2;
                }
            }
        } finally {
            CudaException first = null;
            for (long p : held) {
                try {
                    memory.free(p);
                } catch (CudaException e) {
                    if (first == null) {
                        first = e;
                    }
                }
            }
            if (first != null) {
                throw first;
            }
        }
        return new Result(total, held.size(), refusal);
    }
}
