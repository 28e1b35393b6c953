package io.qgpu.core.gate.internal;

import static org.junit.jupiter.api.Assertions.*;

import io.qgpu.core.gate.Gate;
import io.qgpu.core.gate.GateConfig;
import io.qgpu.core.gate.GateTenantSpec;
import io.qgpu.core.gate.Lease;
import io.qgpu.core.gate.Tenant;
import io.qgpu.core.gate.TenantUsage;
import io.qgpu.core.internal.SlidingWindow;
import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** A tenant's usage window as the gate keeps it: what the busy-period ring's drain puts in it, and its memory. */
class TenantWindowTest {

    private static final long MS = 1_000_000L;

    /**
     * The drain sums the periods that join the window's last chunk and adds them in one step; the
     * window must answer as one fed each period on its own ({@link SlidingWindow#record}). Seeded
     * leases of random length and gap (both around the chunk span, 10 s / 1024, so that periods both
     * join and start chunks), some queried right away, some after up to 600 leases wait in the ring
     * (drained in several rounds of 256).
     */
    @Test
    void theDrainFillsTheWindowAsRecordingEachPeriodWould() throws InterruptedException {
        long seed = Long.getLong("qgpu.seed", 42L);
        for (long s = seed; s < seed + 10; s++) {
            assertNull(drainMatchesRecording(s), "seed " + s);
        }
    }

    /**
     * The edge of the join rule: a period that ends exactly one span (10 s / 1024 = 9,765,625 ns)
     * after the chunk's start joins it, as {@link SlidingWindow#record} has it. Seen where the window's
     * edge cuts the chunk: a chunk's busy time is assumed packed at its end, so both leases count.
     */
    @Test
    void aPeriodEndingExactlyOneSpanAfterTheChunkStartJoinsIt() throws InterruptedException {
        long span = 9_765_625L;
        long t0 = 1_000 * MS;
        long[] now = {t0};
        Gate gate = Gate.create("GPU-e", GateConfig.custom().window(Duration.ofSeconds(10))
                .usageReportInterval(Duration.ZERO).ticker(() -> now[0]).build());
        try {
            Tenant t = gate.register(GateTenantSpec.offline("train").build());
            try (Lease lease = gate.acquire(t)) {
                now[0] = t0 + MS;
            }
            now[0] = t0 + span - MS;
            try (Lease lease = gate.acquire(t)) {
                now[0] = t0 + span;
            }
            now[0] = t0 + 10_000 * MS + 2 * MS;   // the window starts 2 ms into the chunk
            assertEquals(2 * MS, gate.usage(t).usageNanos());
        } finally {
            gate.close();
        }
    }

    /** @return the first difference, or null */
    static String drainMatchesRecording(long seed) throws InterruptedException {
        SplittableRandom rnd = new SplittableRandom(seed);
        long[] now = {1_000 * MS};
        long window = 10_000 * MS;
        Gate gate = Gate.create("GPU-w", GateConfig.custom().window(Duration.ofNanos(window))
                .usageReportInterval(Duration.ZERO).ticker(() -> now[0]).build());
        try {
            Tenant t = gate.register(GateTenantSpec.offline("train").build());
            SlidingWindow reference = SlidingWindow.bounded(window, window / 1024);
            long total = 0;
            for (int round = 0; round < 40; round++) {
                int leases = rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(600) : 1 + rnd.nextInt(20);
                for (int i = 0; i < leases; i++) {
                    long start = now[0];
                    try (Lease lease = gate.acquire(t)) {
                        now[0] += 1 + rnd.nextLong(8 * MS);
                    }
                    reference.record(start, now[0]);
                    total += now[0] - start;
                    now[0] += rnd.nextLong(12 * MS);
                }
                now[0] += rnd.nextInt(3) == 0 ? rnd.nextLong(2 * window) : 0;
                long expected = reference.usage(now[0]);
                TenantUsage u = gate.usage(t);
                if (u.usageNanos() != expected || u.totalLeaseNanos() != total) {
                    return "round " + round + " at " + now[0] + ": usage " + u.usageNanos() + " (recording each: "
                            + expected + "), total " + u.totalLeaseNanos() + " (" + total + ")";
                }
            }
            return null;
        } finally {
            gate.close();
        }
    }

    /**
     * A tenant whose leases all take the lock-free path never has its usage queried by the gate; its
     * usage window must still forget what left it. Before the fix this tenant's window held 40 windows
     * of chunks (capacity 65,536 after 200,000 leases) and went on growing for as long as it ran.
     */
    @Test
    void aTenantOnTheFastPathKeepsABoundedUsageWindow() throws InterruptedException {
        long[] now = {0};
        Gate gate = Gate.create("GPU-m", GateConfig.custom().window(Duration.ofSeconds(10))
                .usageReportInterval(Duration.ZERO).ticker(() -> now[0]).build());
        try {
            Tenant t = gate.register(GateTenantSpec.offline("train").build());
            for (int i = 0; i < 200_000; i++) {   // 1 ms leases 2 ms apart: 400 s, 40 windows
                try (Lease lease = gate.acquire(t)) {
                    now[0] += MS;
                }
                now[0] += MS;
            }
            // a chunk per span (10 s / 1024): 2,049 in two windows; capacity under twice that
            int capacity = GateInternals.usageWindowCapacity(t);
            assertTrue(capacity <= 4096, "capacity " + capacity);
            // what it kept still counts the last window: half of it busy
            assertEquals(5_000 * MS, gate.usage(t).usageNanos(), 10 * MS);
        } finally {
            gate.close();
        }
    }
}
