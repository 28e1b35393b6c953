package io.qgpu.core.gate.internal;

import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateTenantSpec;
import io.qgpu.core.gate.Lease;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A tenant whose leases all take the lock-free path never has its usage queried by the gate; its
 * usage window must still forget what left it. Before the fix this tenant's window held 80 windows
 * of chunks (capacity 65,536 after 200,000 leases) and went on growing for as long as it ran.
 */
class UsageWindowMemoryTest {

    private static final long MS = 1_000_000L;

    @Test
    void aTenantOnTheFastPathKeepsABoundedUsageWindow() throws InterruptedException {
        long[] now = {0};
        Gate gate = Gate.create("GPU-m", GateConfig.custom().window(Duration.ofSeconds(10))
                .usageReportInterval(Duration.ZERO).ticker(() -> now[0]).build());
        try {
            TenantState t = (TenantState) gate.register(GateTenantSpec.offline("train").build());
            for (int i = 0; i < 200_000; i++) {   // 1 ms leases 2 ms apart: 400 s, 40 windows
                try (Lease lease = gate.acquire(t)) {
                    now[0] += MS;
                }
                now[0] += MS;
            }
            // a chunk per span (10 s / 1024): 2,049 in two windows; capacity under twice that
            int capacity = t.usageWindowCapacity();
            assertTrue(capacity <= 4096, "capacity " + capacity);
            // what it kept still counts the last window: half of it busy
            assertEquals(5_000 * MS, gate.usage(t).usageNanos(), 10 * MS);
        } finally {
            gate.close();
        }
    }
}
