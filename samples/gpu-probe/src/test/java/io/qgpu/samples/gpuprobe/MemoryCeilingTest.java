package io.qgpu.samples.gpuprobe;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The ceiling search on a fake device with a fixed capacity: exact to below 1 MiB, never above, all freed. */
class MemoryCeilingTest {
    private static final long MIB = MemoryCeiling.MIB;

    /** A device that refuses an allocation that would take it past its capacity, as a pinned-memory limit does. */
    static final class FakeDevice implements DeviceMemory {
        final long capacity;
        final Map<Long, Long> live = new HashMap<>();
        long used;
        long next = 0x1000;
        long peak;

        FakeDevice(long capacity) {
            this.capacity = capacity;
        }

        @Override
        public long alloc(long bytes) throws CudaException {
            if (used + bytes > capacity) {
                throw new CudaException("cuMemAlloc_v2", CudaNative.CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY");
            }
            used += bytes;
            peak = Math.max(peak, used);
            live.put(next, bytes);
            next += bytes;
            return next - bytes;
        }

        @Override
        public void free(long pointer) throws CudaException {
            Long bytes = live.remove(pointer);
            if (bytes == null) {
                throw new CudaException("cuMemFree_v2", 1, "CUDA_ERROR_INVALID_VALUE");
            }
            used -= bytes;
        }
    }

    @ParameterizedTest
    @CsvSource({"8192, 256", "8191.5, 256", "16384, 1024", "3, 256", "0.5, 256", "100000, 4096"})
    void findsTheCapacityToBelowOneMib(double capacityMiB, long chunkMiB) throws CudaException {
        long capacity = (long) (capacityMiB * MIB);
        FakeDevice d = new FakeDevice(capacity);
        MemoryCeiling.Result r = MemoryCeiling.measure(d, chunkMiB * MIB, 0);
        assertTrue(r.bytes() <= capacity, "never above: " + r.bytes());
        assertTrue(capacity - r.bytes() < MIB, "within 1 MiB: " + r.bytes() + " of " + capacity);
        assertEquals(r.bytes(), d.peak);
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", r.refusal());
        assertEquals(0, d.used, "everything freed");
        assertTrue(d.live.isEmpty());
    }

    @Test
    void stopsAtTheCapWithoutARefusal() throws CudaException {
        FakeDevice d = new FakeDevice(80L << 30);
        MemoryCeiling.Result r = MemoryCeiling.measure(d, 256 * MIB, 1000 * MIB);
        assertEquals(1000 * MIB, r.bytes());
        assertEquals(4, r.allocations(), "256 + 256 + 256 + 232");
        assertEquals("none", r.refusal());
        assertEquals(0, d.used);
    }

    @Test
    void refusesAChunkBelowOneMib() {
        assertThrows(IllegalArgumentException.class, () -> MemoryCeiling.measure(new FakeDevice(MIB), MIB - 1, 0));
    }
}
