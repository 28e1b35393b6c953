package io.qgpu.kubernetes.node.mps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Slice;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The daemon-side limits: their commands, the floor of the rules, and the choice per GPU (issue 38 item 2). */
class MpsLimitsTest {
    static final String A = "GPU-a";
    static final String B = "GPU-b";
    static final long GIB = 1L << 30;

    static Placement shared(String tenant, long bytes, int limit, String gpu) {
        Claim c = Claim.builder(tenant).gpus(1).memoryBytes(bytes).compute(Math.min(limit, 10), limit).priority(PriorityClass.ONLINE).build();
        return new Placement(c, "node-a", List.of(new Slice(gpu, bytes, Math.min(limit, 10), limit)));
    }

    static Placement exclusive(String tenant, String gpu) {
        Claim c = Claim.builder(tenant).gpus(1).exclusive().priority(PriorityClass.OFFLINE).build();
        return new Placement(c, "node-a", List.of(new Slice(gpu, 80 * GIB, 100, 100)));
    }

    @Test
    void commandsSetTheDefaultsAndARunningServersLimitsOnDeviceZero() {
        MpsLimits l = new MpsLimits(8192, 70);
        assertEquals(List.of("set_default_device_pinned_mem_limit 0 8192M", "set_default_active_thread_percentage 70"), l.defaultCommands());
        assertEquals(List.of("set_device_pinned_mem_limit 4242 0 8192M", "set_active_thread_percentage 4242 70"), l.serverCommands(4242));
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> l.serverCommands(0));
        assertEquals("mpsLimits.serverPid", e.field());
    }

    @Test
    void nonsenseIsRefusedNamingTheFieldAndTheValue() {
        InvalidValueException m = assertThrows(InvalidValueException.class, () -> new MpsLimits(0, 50));
        assertEquals("mpsLimits.memoryMib", m.field());
        assertEquals(0L, m.value());
        InvalidValueException t = assertThrows(InvalidValueException.class, () -> new MpsLimits(1024, 101));
        assertEquals("mpsLimits.activeThreadPercentage", t.field());
        assertEquals(101, t.value());
        assertThrows(InvalidValueException.class, () -> new MpsLimits(1024, 0));
    }

    @Test
    void theFloorIsTheSmallestSliceTheRulesAllow() {
        assertEquals(new MpsLimits(1024, 5), MpsLimits.smallest(GranularityRules.ofDefaults()), "qgpu: 1 GiB, 5%");
        assertEquals(new MpsLimits(1, 1), MpsLimits.smallest(GranularityRules.hami()), "hami: 1 MiB, 1%");
        assertEquals(new MpsLimits(256, 1), MpsLimits.smallest(GranularityRules.gpuManager()));
        GranularityRules noMinimum = GranularityRules.custom().name("x").memoryUnitBytes(512 * GpuDevice.MIB).minMemoryBytes(0)
                .computeUnit(10).maxTenantsPerGpu(8).memoryPerTenantSlotBytes(0).build();
        assertEquals(new MpsLimits(512, 10), MpsLimits.smallest(noMinimum), "no minimum: one memory unit");
    }

    @Test
    void aGpuWithoutASliceGetsTheFloor() {
        MpsLimits floor = new MpsLimits(1024, 5);
        assertEquals(floor, MpsLimits.forGpu(A, List.of(), floor));
        assertEquals(floor, MpsLimits.forGpu(A, List.of(shared("t1", 8 * GIB, 70, B)), floor), "a slice on another GPU");
        assertEquals(floor, MpsLimits.forGpu(A, List.of(exclusive("t2", A)), floor), "an exclusive claim bypasses MPS");
    }

    @Test
    void aGpuWithOneSliceGetsItsLimits() {
        assertEquals(new MpsLimits(8192, 70), MpsLimits.forGpu(A, List.of(shared("t1", 8 * GIB, 70, A)), new MpsLimits(1024, 5)));
        assertEquals(new MpsLimits(8191, 30), MpsLimits.forGpu(A, List.of(shared("t1", 8 * GIB - 1, 30, A)), new MpsLimits(1024, 5)),
                "whole MiB, rounded down, as the client's variable");
    }

    @Test
    void aGpuWithSeveralSlicesGetsTheLargestOfEachLimit() {
        MpsLimits l = MpsLimits.forGpu(A, List.of(shared("t1", 30 * GIB, 30, A), shared("t2", 10 * GIB, 50, A), shared("t3", 40 * GIB, 20, B)),
                new MpsLimits(1024, 5));
        assertEquals(new MpsLimits(30720, 50), l, "no tenant of the GPU is held below its own limit");
    }

    @Test
    void theModeFlagNamesItsValues() {
        assertEquals(MpsDaemonMode.EXTERNAL, MpsDaemonMode.parse("external"));
        assertEquals(MpsDaemonMode.AGENT, MpsDaemonMode.parse(" Agent "));
        InvalidValueException e = assertThrows(InvalidValueException.class, () -> MpsDaemonMode.parse("pod"));
        assertEquals("--mps-daemons = \"pod\": must be one of external, agent", e.getMessage());
    }
}
