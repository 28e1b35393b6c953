package io.qgpu.nvml.usage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.spi.ProcessUsageSample;
import io.qgpu.api.spi.ProcessUsageSource;
import io.qgpu.nvml.FakeNvmlTestBase;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlException;
import io.qgpu.nvml.NvmlReturn;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Usage sampling through the fake: utilization, per-process memory and SM, tenants by pid. */
class NvmlUsageSamplerTest extends FakeNvmlTestBase {
    private static final long MIB = GpuDevice.MIB;

    @Override
    protected String machine() {
        return "t4x4";
    }

    private static final TenantResolver TENANTS = TenantResolver.of(Map.of(101L, "job-a", 102L, "job-a", 201L, "job-b"));

    @Test
    void snapshotMapsProcessesToTenants() {
        FAKE.fake_nvml_set_utilization(1, 73, 20);
        FAKE.fake_nvml_add_process(1, 101, 1024 * MIB);
        FAKE.fake_nvml_add_process(1, 102, 512 * MIB);
        FAKE.fake_nvml_add_process(1, 201, 2048 * MIB);
        FAKE.fake_nvml_add_process(1, 999, -1L);
        FAKE.fake_nvml_add_sample(1, 101, 1_000, 10, 1);
        FAKE.fake_nvml_add_sample(1, 101, 2_000, 25, 2);
        FAKE.fake_nvml_add_sample(1, 201, 1_500, 40, 3);
        FAKE.fake_nvml_add_sample(1, 303, 1_800, 5, 0); // ran, then exited: no memory entry
        try (Nvml nvml = open()) {
            String gpu = nvml.device(1).uuid();
            NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).tenants(TENANTS).build();
            GpuUsage u = sampler.sample(gpu);
            assertEquals(gpu, u.gpuUuid());
            assertEquals(73, u.gpuUtilPercent());
            assertEquals(20, u.memoryUtilPercent());
            assertEquals(2_000, u.newestSampleMicros());
            assertTrue(u.smSampled());
            assertEquals(List.of(
                    new ProcessUsage(101, Optional.of("job-a"), 1024 * MIB, 25, 2, true, Optional.empty(), false),
                    new ProcessUsage(102, Optional.of("job-a"), 512 * MIB, 0, 0, false, Optional.empty(), false),
                    new ProcessUsage(201, Optional.of("job-b"), 2048 * MIB, 40, 3, true, Optional.empty(), false),
                    new ProcessUsage(303, Optional.empty(), -1, 5, 0, true, Optional.empty(), false),
                    new ProcessUsage(999, Optional.empty(), -1, 0, 0, false, Optional.empty(), false)), u.processes());
            assertEquals(new TenantProcessUsage("job-a", List.of(101L, 102L), 1536 * MIB, 25), u.tenants().get("job-a"));
            assertEquals(new TenantProcessUsage("job-b", List.of(201L), 2048 * MIB, 40), u.tenants().get("job-b"));
            assertEquals(List.of(303L, 999L), u.unattributed().stream().map(ProcessUsage::pid).toList());

            // the next sample covers only what came since
            FAKE.fake_nvml_add_sample(1, 102, 2_500, 60, 9);
            GpuUsage next = sampler.sample(gpu);
            assertEquals(new TenantProcessUsage("job-a", List.of(101L, 102L), 1536 * MIB, 60), next.tenants().get("job-a"));
            assertEquals(0, next.tenants().get("job-b").smUtilPercent());
            assertEquals(2_500, next.newestSampleMicros());
            GpuUsage idle = sampler.sample(gpu);
            assertTrue(idle.processes().stream().noneMatch(ProcessUsage::sampled));
        }
    }

    @Test
    void processUsageSourceReturnsSamplesSinceATimestamp() {
        FAKE.fake_nvml_add_process(0, 101, 300 * MIB);
        FAKE.fake_nvml_add_sample(0, 101, 3_000, 30, 4);
        FAKE.fake_nvml_add_sample(0, 102, 1_000, 50, 5);
        FAKE.fake_nvml_add_sample(0, 101, 2_000, 20, 3);
        try (Nvml nvml = open()) {
            String gpu = nvml.device(0).uuid();
            ProcessUsageSource source = NvmlUsageSampler.builder(nvml).build();
            assertEquals(List.of(
                    new ProcessUsageSample(gpu, 102, 1_000, 50, 5, ProcessUsageSample.UNKNOWN_MEMORY),
                    new ProcessUsageSample(gpu, 101, 2_000, 20, 3, 300 * MIB),
                    new ProcessUsageSample(gpu, 101, 3_000, 30, 4, 300 * MIB)), source.samples(gpu, 0));
            assertEquals(List.of(new ProcessUsageSample(gpu, 101, 3_000, 30, 4, 300 * MIB)), source.samples(gpu, 2_000));
            assertEquals(List.of(), source.samples(gpu, 3_000));
            assertFalse(source.samples(gpu, 0).get(0).hasUsedMemory());
        }
    }

    @Test
    void unknownGpuIsAnInvalidValue() {
        try (Nvml nvml = open()) {
            NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).build();
            InvalidValueException e = assertThrows(InvalidValueException.class, () -> sampler.sample("GPU-none"));
            assertEquals("usage.gpuUuid", e.field());
            assertEquals("GPU-none", e.value());
            assertThrows(InvalidValueException.class, () -> sampler.samples("GPU-none", 0));
            String gpu = nvml.device(0).uuid();
            assertEquals("processUsage.sinceMicros",
                    assertThrows(InvalidValueException.class, () -> sampler.samples(gpu, -1)).field());
        }
    }

    @Test
    void resolverReturningNullIsNamed() {
        FAKE.fake_nvml_add_process(0, 5, MIB);
        try (Nvml nvml = open()) {
            String gpu = nvml.device(0).uuid();
            NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).tenants(pid -> null).build();
            InvalidValueException e = assertThrows(InvalidValueException.class, () -> sampler.sample(gpu));
            assertEquals("tenantResolver(5)", e.field());
        }
    }

    @Test
    void gpusWithoutProcessSamplesStillReportMemory() {
        FAKE.fake_nvml_add_process(2, 101, 64 * MIB);
        FAKE.fake_nvml_add_sample(2, 101, 1_000, 50, 5);
        try (Nvml nvml = open()) {
            String gpu = nvml.device(2).uuid();
            NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).tenants(TENANTS).build();
            // as on a MIG-enabled GPU
            FAKE.fake_nvml_set_fault("nvmlDeviceGetProcessUtilization", NvmlReturn.NOT_SUPPORTED.code(), 0, -1);
            GpuUsage u = sampler.sample(gpu);
            assertFalse(u.smSampled());
            assertEquals(new TenantProcessUsage("job-a", List.of(101L), 64 * MIB, 0), u.tenants().get("job-a"));
            NvmlException e = assertThrows(NvmlException.class, () -> sampler.samples(gpu, 0));
            assertEquals(NvmlReturn.NOT_SUPPORTED, e.result());
        }
    }

    @Test
    void nvmlFailuresPassThroughTyped() {
        try (Nvml nvml = open()) {
            String gpu = nvml.device(2).uuid();
            NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).build();
            FAKE.fake_nvml_set_fault("nvmlDeviceGetProcessUtilization", NvmlReturn.NO_PERMISSION.code(), 0, 1);
            NvmlException e = assertThrows(NvmlException.class, () -> sampler.sample(gpu));
            assertEquals(NvmlReturn.NO_PERMISSION, e.result());
            FAKE.fake_nvml_set_fault("nvmlDeviceGetComputeRunningProcesses_v3", NvmlReturn.GPU_IS_LOST.code(), 0, 1);
            assertEquals(NvmlReturn.GPU_IS_LOST, assertThrows(NvmlException.class, () -> sampler.sample(gpu)).result());
            assertEquals(io.qgpu.api.Health.UNHEALTHY, nvml.health(gpu));
        }
    }
}
