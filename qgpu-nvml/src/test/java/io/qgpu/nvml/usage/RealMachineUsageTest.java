package io.qgpu.nvml.usage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.spi.ProcessUsageSample;
import io.qgpu.nvml.FakeNvmlTestBase;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlDevice;
import io.qgpu.nvml.NvmlMigDevice;
import io.qgpu.nvml.NvmlProcessUtilization;
import io.qgpu.nvml.internal.FakeNvml;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Usage sampling against what real drivers do: MIG (utilization NOT_SUPPORTED, NO_PERMISSION for the
 * parent's process list in a container), MPS clients, a fixed answer to the sample count query and
 * values above 100%. Before these fixes the sampler threw on the first MIG case and on any value above
 * 100%, and did not see MPS clients.
 */
class RealMachineUsageTest extends FakeNvmlTestBase {
    private static final long MIB = 1L << 20;
    private static final TenantResolver TENANTS = TenantResolver.of(Map.of(500L, "job-a", 501L, "job-b", 201L, "mps-a"));

    @Test
    void migGpuInAContainerIsSampledThroughItsInstances() {
        FakeNvml.machine(FAKE, "a100-mig");
        FAKE.fake_nvml_add_mig_process(0, 0, 500, 1024 * MIB);
        FAKE.fake_nvml_add_mig_process(0, 2, 501, 2048 * MIB);
        try (Nvml nvml = open()) {
            NvmlDevice gpu = nvml.device(0);
            List<NvmlMigDevice> migs = gpu.migDevices();
            NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).tenants(TENANTS).build();
            GpuUsage u = sampler.sample(gpu.uuid());
            assertEquals(-1, u.gpuUtilPercent(), "utilization is NOT_SUPPORTED with MIG on");
            assertFalse(u.utilizationKnown());
            assertFalse(u.smSampled());
            assertTrue(u.processesListed());
            assertEquals(List.of(
                    new ProcessUsage(500, Optional.of("job-a"), 1024 * MIB, 0, 0, false,
                            Optional.of(migs.get(0).device().uuid()), false),
                    new ProcessUsage(501, Optional.of("job-b"), 2048 * MIB, 0, 0, false,
                            Optional.of(migs.get(2).device().uuid()), false)), u.processes());
            // one instance on its own, by its MIG UUID
            GpuUsage one = sampler.sample(migs.get(2).device().uuid());
            assertEquals(List.of(501L), one.processes().stream().map(ProcessUsage::pid).toList());
            assertEquals(-1, one.gpuUtilPercent());
        }
    }

    @Test
    void aPrivilegedProcessMapsTheParentsProcessesToInstancesByTheirIds() {
        FakeNvml.machine(FAKE, "a100-mig");
        FAKE.fake_nvml_set_container_view(0);
        FAKE.fake_nvml_add_mig_process(0, 1, 500, 64 * MIB);
        FAKE.fake_nvml_add_mig_process(0, 3, 501, 32 * MIB);
        try (Nvml nvml = open()) {
            NvmlDevice gpu = nvml.device(0);
            List<NvmlMigDevice> migs = gpu.migDevices();
            GpuUsage u = NvmlUsageSampler.builder(nvml).tenants(TENANTS).build().sample(gpu.uuid());
            assertEquals(List.of(Optional.of(migs.get(1).device().uuid()), Optional.of(migs.get(3).device().uuid())),
                    u.processes().stream().map(ProcessUsage::migInstance).toList());
            assertEquals(2, FAKE.fake_nvml_calls("nvmlDeviceGetComputeRunningProcesses_v3"),
                    "the parent's list (count query and read) was enough");
        }
    }

    @Test
    void mpsClientsAreTenantsToo() {
        FAKE.fake_nvml_add_process(0, 100, 256 * MIB);   // the MPS server
        FAKE.fake_nvml_add_mps_process(0, 201, 1024 * MIB);
        FAKE.fake_nvml_add_mps_process(0, 100, 256 * MIB); // listed in both: counted once
        FAKE.fake_nvml_add_sample(0, 201, 1_000, 35, 4);
        try (Nvml nvml = open()) {
            String gpu = nvml.device(0).uuid();
            NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).tenants(TENANTS).build();
            GpuUsage u = sampler.sample(gpu);
            assertEquals(List.of(100L, 201L), u.processes().stream().map(ProcessUsage::pid).toList());
            ProcessUsage client = u.processes().get(1);
            assertTrue(client.mps());
            assertFalse(u.processes().get(0).mps());
            assertEquals(256 * MIB, u.processes().get(0).usedMemoryBytes());
            assertEquals(new TenantProcessUsage("mps-a", List.of(201L), 1024 * MIB, 35), u.tenants().get("mps-a"));
            assertEquals(List.of(new ProcessUsageSample(gpu, 201, 1_000, 35, 4, 1024 * MIB)), sampler.samples(gpu, 0));
        }
    }

    @Test
    void aRefusedComputeListOnAGpuWithoutMigIsReportedNotThrown() {
        FAKE.fake_nvml_add_process(0, 100, 256 * MIB);
        FAKE.fake_nvml_add_mps_process(0, 201, 1024 * MIB);
        FAKE.fake_nvml_set_fault("nvmlDeviceGetComputeRunningProcesses_v3", 4 /* NO_PERMISSION */, 0, -1);
        try (Nvml nvml = open()) {
            GpuUsage u = NvmlUsageSampler.builder(nvml).tenants(TENANTS).build().sample(nvml.device(0).uuid());
            assertFalse(u.processesListed());
            assertEquals(List.of(201L), u.processes().stream().map(ProcessUsage::pid).toList(), "the MPS client is still seen");
        }
    }

    @Test
    void aFixedAnswerToTheCountQueryLosesNoSample() {
        FAKE.fake_nvml_set_fixed_sample_count(1, 1);
        for (int pid = 1; pid <= 3; pid++) {
            FAKE.fake_nvml_add_sample(1, pid, 1_000 + pid, 10 * pid, 1);
        }
        try (Nvml nvml = open()) {
            List<NvmlProcessUtilization> s = nvml.device(1).processUtilization(0);
            assertEquals(List.of(1L, 2L, 3L), s.stream().map(NvmlProcessUtilization::pid).toList());
            assertEquals(List.of(10, 20, 30), s.stream().map(NvmlProcessUtilization::smPercent).toList());
        }
    }

    @Test
    void aSampleAbove100PercentIsSkippedAndTheOthersKept() {
        FAKE.fake_nvml_add_sample(2, 101, 1_000, 50, 5);
        FAKE.fake_nvml_add_sample(2, 102, 1_100, 150, 5);
        FAKE.fake_nvml_add_sample(2, 103, 1_200, 30, 0xFFFFFFFF);
        FAKE.fake_nvml_add_sample(2, 104, 1_300, 100, 100);
        FAKE.fake_nvml_set_utilization(2, 130, 40);
        try (Nvml nvml = open()) {
            String gpu = nvml.device(2).uuid();
            NvmlUsageSampler sampler = NvmlUsageSampler.builder(nvml).build();
            assertEquals(List.of(101L, 104L), sampler.samples(gpu, 0).stream().map(ProcessUsageSample::pid).toList());
            GpuUsage u = sampler.sample(gpu);
            assertEquals(100, u.gpuUtilPercent(), "device utilization above 100% is clamped");
            assertEquals(40, u.memoryUtilPercent());
            assertEquals(List.of(101L, 104L), u.processes().stream().filter(ProcessUsage::sampled)
                    .map(ProcessUsage::pid).toList());
            assertEquals(1_300, u.newestSampleMicros());
        }
    }
}
