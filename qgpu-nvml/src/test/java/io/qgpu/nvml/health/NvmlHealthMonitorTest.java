package io.qgpu.nvml.health;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.spi.GpuHealthEvent;
import io.qgpu.nvml.FakeNvmlTestBase;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlReturn;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Xid events through the fake's event sets, handled on the monitor thread. Tests wait for the listener
 * (a queue with a generous bound, never a sleep); the fake wakes the waiting thread at once.
 */
class NvmlHealthMonitorTest extends FakeNvmlTestBase {
    private static final Duration WAIT = Duration.ofMillis(50);

    private static GpuHealthEvent next(BlockingQueue<GpuHealthEvent> q) throws InterruptedException {
        GpuHealthEvent e = q.poll(30, TimeUnit.SECONDS);
        if (e == null) {
            throw new AssertionError("no health event came");
        }
        return e;
    }

    @Test
    void criticalXidMakesTheGpuUnhealthy() throws Exception {
        BlockingQueue<GpuHealthEvent> events = new LinkedBlockingQueue<>();
        try (Nvml nvml = open();
             NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(WAIT).listener(events::add).start()) {
            assertEquals(8, monitor.watchedGpus().size());
            assertTrue(monitor.isRunning());
            String uuid = nvml.device(3).uuid();
            FAKE.fake_nvml_inject_xid(3, 79);
            GpuHealthEvent e = next(events);
            assertEquals(uuid, e.gpuUuid());
            assertEquals(Health.UNHEALTHY, e.health());
            assertEquals(OptionalLong.of(79), e.xid());
            assertTrue(e.cause().contains("fallen off the bus"), e.cause());
            assertEquals(Health.UNHEALTHY, nvml.health(uuid));
        }
    }

    @Test
    void applicationXidsAreIgnored() throws Exception {
        BlockingQueue<GpuHealthEvent> events = new LinkedBlockingQueue<>();
        try (Nvml nvml = open();
             NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(WAIT).listener(events::add).start()) {
            for (long xid : List.of(13L, 31L, 43L, 45L, 68L, 109L)) {
                FAKE.fake_nvml_inject_xid(0, xid);
            }
            FAKE.fake_nvml_inject_xid(1, 48);
            // events come in order: when GPU 1's arrives, GPU 0's six were handled
            GpuHealthEvent e = next(events);
            assertEquals(nvml.device(1).uuid(), e.gpuUuid());
            assertEquals(OptionalLong.of(48), e.xid());
            assertEquals(7, monitor.eventsSeen());
            assertEquals(Health.HEALTHY, nvml.health(nvml.device(0).uuid()));
            assertTrue(events.isEmpty());
            assertEquals(Set.of(13L, 31L, 43L, 45L, 68L, 109L), monitor.ignoredXids());
        }
    }

    @Test
    void ignoredListIsConfigurable() throws Exception {
        BlockingQueue<GpuHealthEvent> events = new LinkedBlockingQueue<>();
        try (Nvml nvml = open();
             NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(WAIT).ignoredXids(List.of(79L))
                     .listener(events::add).start()) {
            FAKE.fake_nvml_inject_xid(2, 79);
            FAKE.fake_nvml_inject_xid(2, 13);
            GpuHealthEvent e = next(events);
            assertEquals(OptionalLong.of(13), e.xid(), "13 counts once the default list is replaced");
            assertEquals(2, monitor.eventsSeen());
        }
    }

    @Test
    void secondXidOnAnUnhealthyGpuTellsNobody() throws Exception {
        BlockingQueue<GpuHealthEvent> events = new LinkedBlockingQueue<>();
        try (Nvml nvml = open();
             NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(WAIT).listener(events::add).start()) {
            FAKE.fake_nvml_inject_xid(5, 94);
            FAKE.fake_nvml_inject_xid(5, 95);
            FAKE.fake_nvml_inject_xid(6, 95);
            assertEquals(nvml.device(5).uuid(), next(events).gpuUuid());
            assertEquals(nvml.device(6).uuid(), next(events).gpuUuid());
            assertEquals(3, monitor.eventsSeen());
            assertTrue(events.isEmpty());
        }
    }

    @Test
    void lostGpuFromAnyCallIsReportedToTheMonitorsListeners() throws Exception {
        BlockingQueue<GpuHealthEvent> events = new LinkedBlockingQueue<>();
        try (Nvml nvml = open();
             NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(WAIT).listener(events::add).start()) {
            io.qgpu.nvml.NvmlDevice gpu7 = nvml.device(7);
            FAKE.fake_nvml_gpu_lost_after(7, 0);
            assertThrows(RuntimeException.class, gpu7::utilization);
            GpuHealthEvent e = next(events);
            assertEquals(gpu7.uuid(), e.gpuUuid());
            assertTrue(e.cause().contains("GPU_IS_LOST"));
            assertTrue(e.xid().isEmpty());
            assertTrue(monitor.isRunning());
        }
    }

    @Test
    void lostGpuReportedByTheEventWaitIsFoundByProbing() throws Exception {
        BlockingQueue<GpuHealthEvent> events = new LinkedBlockingQueue<>();
        try (Nvml nvml = open()) {
            String uuid4 = nvml.device(4).uuid();
            try (NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(WAIT).listener(events::add)
                    .start()) {
                FAKE.fake_nvml_gpu_lost_after(4, 0);
                FAKE.fake_nvml_set_fault("nvmlEventSetWait_v2", NvmlReturn.GPU_IS_LOST.code(), 0, 1);
                GpuHealthEvent e = next(events);
                assertEquals(uuid4, e.gpuUuid());
                assertEquals(Set.of(uuid4), nvml.unhealthyGpus());
                assertTrue(monitor.isRunning(), "the monitor goes on after a lost GPU");
            }
        }
    }

    @Test
    void closeStopsTheThreadAndFreesTheEventSet() {
        try (Nvml nvml = open()) {
            NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(WAIT).start();
            assertTrue(monitor.isRunning());
            monitor.close();
            assertFalse(monitor.isRunning());
            assertEquals(1, FAKE.fake_nvml_calls("nvmlEventSetFree"));
            monitor.close(); // idempotent
            assertEquals(1, FAKE.fake_nvml_calls("nvmlEventSetFree"));
            assertEquals(0, FAKE.fake_nvml_inject_xid(0, 79), "no set is registered any more");
        }
    }

    @Test
    void closingTheSessionUnderTheMonitorEndsItsThread() throws Exception {
        Nvml nvml = open();
        NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(WAIT).start();
        nvml.close(); // waits for the wait in flight; the next wait sees a closed session
        monitor.close();
        assertFalse(monitor.isRunning());
    }

    @Test
    void gpusWithoutXidEventsAreNotWatched() {
        FAKE.fake_nvml_set_fault("nvmlDeviceRegisterEvents", NvmlReturn.NOT_SUPPORTED.code(), 2, 1);
        try (Nvml nvml = open(); NvmlHealthMonitor monitor = NvmlHealthMonitor.builder(nvml).waitTimeout(WAIT).start()) {
            assertEquals(7, monitor.watchedGpus().size());
            assertEquals(1, monitor.unwatchedGpus().size());
            assertTrue(monitor.unwatchedGpus().get(0).contains("NOT_SUPPORTED"));
        }
    }

    @Test
    void failedStartCleansUp() {
        FAKE.fake_nvml_set_fault("nvmlDeviceRegisterEvents", NvmlReturn.NO_PERMISSION.code(), 1, 1);
        try (Nvml nvml = open()) {
            assertThrows(RuntimeException.class, () -> NvmlHealthMonitor.builder(nvml).start());
            assertEquals(1, FAKE.fake_nvml_calls("nvmlEventSetFree"));
        }
    }

    @Test
    void builderRefusesBadInput() {
        try (Nvml nvml = open()) {
            NvmlHealthMonitor.Builder b = NvmlHealthMonitor.builder(nvml);
            assertEquals("health.waitTimeout",
                    assertThrows(InvalidValueException.class, () -> b.waitTimeout(Duration.ofMillis(1))).field());
            assertEquals("health.ignoredXids[]",
                    assertThrows(InvalidValueException.class, () -> b.ignoredXids(List.of(-3L))).field());
            assertThrows(InvalidValueException.class, () -> b.listener(null));
        }
    }
}
