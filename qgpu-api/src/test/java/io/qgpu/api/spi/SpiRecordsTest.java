package io.qgpu.api.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class SpiRecordsTest {

    @Test
    void processUsageSampleValidates() {
        ProcessUsageSample s = new ProcessUsageSample("GPU-a", 42, 1_000, 37, 12, 1L << 30);
        assertTrue(s.hasUsedMemory());
        assertFalse(new ProcessUsageSample("GPU-a", 42, 0, 0, 0, ProcessUsageSample.UNKNOWN_MEMORY).hasUsedMemory());
        assertEquals("processUsageSample.smUtilPercent",
                assertThrows(InvalidValueException.class, () -> new ProcessUsageSample("GPU-a", 1, 0, 101, 0, 0)).field());
        assertEquals("processUsageSample.pid",
                assertThrows(InvalidValueException.class, () -> new ProcessUsageSample("GPU-a", -1, 0, 0, 0, 0)).field());
        assertEquals("processUsageSample.usedMemoryBytes",
                assertThrows(InvalidValueException.class, () -> new ProcessUsageSample("GPU-a", 1, 0, 0, 0, -2)).field());
        assertEquals("processUsageSample.gpuUuid",
                assertThrows(InvalidValueException.class, () -> new ProcessUsageSample(" ", 1, 0, 0, 0, 0)).field());
    }

    @Test
    void healthEventValidatesAndFeedsALedgerLikeListener() {
        GpuHealthEvent xid = GpuHealthEvent.xid("GPU-a", 79, "Xid 79");
        assertEquals(Health.UNHEALTHY, xid.health());
        assertEquals(OptionalLong.of(79), xid.xid());
        assertEquals(OptionalLong.empty(), GpuHealthEvent.of("GPU-a", Health.HEALTHY, "reset").xid());
        assertEquals("gpuHealthEvent.cause",
                assertThrows(InvalidValueException.class, () -> GpuHealthEvent.of("GPU-a", Health.HEALTHY, "")).field());
        assertEquals("gpuHealthEvent.xid",
                assertThrows(InvalidValueException.class, () -> GpuHealthEvent.xid("GPU-a", -1, "x")).field());
        List<String> ledger = new ArrayList<>();
        GpuHealthListener l = e -> ledger.add(e.gpuUuid() + "=" + e.health());
        l.onHealthChange(xid);
        assertEquals(List.of("GPU-a=UNHEALTHY"), ledger);
    }
}
