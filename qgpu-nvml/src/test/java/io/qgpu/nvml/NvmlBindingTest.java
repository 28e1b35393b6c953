package io.qgpu.nvml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.TopologyLevel;
import io.qgpu.api.spi.GpuHealthEvent;
import io.qgpu.nvml.internal.FakeNvml;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The binding through JNA into the fake library: values, return codes, buffers, init, lost GPUs. */
class NvmlBindingTest extends FakeNvmlTestBase {

    @Test
    void readsTheMachine() {
        try (Nvml nvml = open()) {
            assertEquals("580.65.06", nvml.driverVersion());
            assertEquals("13.580.65.06", nvml.nvmlVersion());
            assertEquals(8, nvml.deviceCount());
            NvmlDevice d = nvml.device(3);
            assertTrue(d.uuid().startsWith("GPU-"), d.uuid());
            assertEquals("NVIDIA H100 80GB HBM3", d.name());
            assertEquals(3, d.index());
            assertEquals(3, d.minorNumber());
            NvmlMemory m = d.memory();
            assertEquals(80 * GpuDevice.GIB, m.total());
            assertEquals(512 * GpuDevice.MIB, m.reserved());
            assertEquals(m.total() - m.reserved(), m.free());
            assertEquals(0, m.used());
            NvmlPciInfo pci = d.pciInfo();
            assertEquals("00000000:5D:00.0", pci.busId());
            assertEquals("0000:5D:00.0", pci.busIdLegacy());
            assertEquals(0x5d, pci.bus());
            assertEquals(0x233010deL, pci.pciDeviceId(), "read as unsigned");
            assertEquals(new NvmlComputeCapability(9, 0), d.computeCapability());
            assertEquals(new NvmlMigMode(NvmlMigMode.State.DISABLED, NvmlMigMode.State.DISABLED), d.migMode());
            assertEquals(0, d.numaNode());
            assertEquals(1, nvml.device(5).numaNode());
            assertEquals(TopologyLevel.NODE, d.commonAncestor(nvml.device(0)));
            assertEquals(TopologyLevel.SYSTEM, d.commonAncestor(nvml.device(7)));
            assertEquals(d.uuid(), nvml.deviceByUuid(d.uuid()).uuid());
            assertTrue(nvml.deviceByUuid(d.uuid()) == d, "one object per handle");
        }
    }

    @Test
    void nvLinksAreIteratedUntilInvalidArgument() {
        try (Nvml nvml = open()) {
            List<NvmlNvLink> links = nvml.device(0).nvLinks();
            assertEquals(18, links.size());
            assertTrue(links.stream().allMatch(NvmlNvLink::active));
            assertEquals(19, FAKE.fake_nvml_calls("nvmlDeviceGetNvLinkState"), "18 links and one INVALID_ARGUMENT");
            FAKE.fake_nvml_set_link(0, 4, 0);
            List<NvmlNvLink> after = nvml.device(0).nvLinks();
            assertFalse(after.get(4).active());
            assertEquals(Optional.empty(), after.get(4).remote());
        }
        FakeNvml.machine(FAKE, "t4x4");
        try (Nvml nvml = open()) {
            assertEquals(List.of(), nvml.device(0).nvLinks(), "NOT_SUPPORTED: no NVLink");
            assertEquals(NvmlMigMode.NOT_SUPPORTED, nvml.device(0).migMode());
            assertEquals(new NvmlComputeCapability(7, 5), nvml.device(0).computeCapability());
        }
    }

    @Test
    void unknownUuidIsNotFound() {
        try (Nvml nvml = open()) {
            NvmlException e = assertThrows(NvmlException.class, () -> nvml.deviceByUuid("GPU-nope"));
            assertEquals(NvmlReturn.NOT_FOUND, e.result());
            assertEquals("nvmlDeviceGetHandleByUUID", e.function());
            NvmlException past = assertThrows(NvmlException.class, () -> nvml.device(8));
            assertEquals(NvmlReturn.INVALID_ARGUMENT, past.result());
            assertThrows(InvalidValueException.class, () -> nvml.device(-1));
        }
    }

    /** Each bound function, called through the binding, with the fault injected on it. */
    static Stream<Arguments> functions() {
        List<Arguments> all = new ArrayList<>();
        add(all, "nvmlSystemGetDriverVersion", n -> n.driverVersion());
        add(all, "nvmlSystemGetNVMLVersion", n -> n.nvmlVersion());
        add(all, "nvmlDeviceGetCount_v2", n -> n.deviceCount());
        add(all, "nvmlDeviceGetHandleByIndex_v2", n -> n.device(1));
        add(all, "nvmlDeviceGetHandleByUUID", n -> n.deviceByUuid("GPU-x"));
        add(all, "nvmlDeviceGetUUID", n -> n.device(2));
        add(all, "nvmlDeviceGetName", n -> n.device(0).name());
        add(all, "nvmlDeviceGetIndex", n -> n.device(0).index());
        add(all, "nvmlDeviceGetMinorNumber", n -> n.device(0).minorNumber());
        add(all, "nvmlDeviceGetMemoryInfo_v2", n -> n.device(0).memory());
        add(all, "nvmlDeviceGetUtilizationRates", n -> n.device(0).utilization());
        add(all, "nvmlDeviceGetComputeRunningProcesses_v3", n -> n.device(0).runningComputeProcesses());
        add(all, "nvmlDeviceGetProcessUtilization", n -> n.device(0).processUtilization(0));
        add(all, "nvmlDeviceGetPciInfo_v3", n -> n.device(0).pciInfo());
        add(all, "nvmlDeviceGetTopologyCommonAncestor", n -> n.device(0).commonAncestor(n.device(1)));
        add(all, "nvmlDeviceGetNvLinkState", n -> n.device(0).nvLinkActive(0));
        add(all, "nvmlDeviceGetNvLinkRemotePciInfo_v2", n -> n.device(0).nvLinkRemotePciInfo(0));
        add(all, "nvmlDeviceGetMigMode", n -> n.device(0).migMode());
        add(all, "nvmlDeviceGetCudaComputeCapability", n -> n.device(0).computeCapability());
        add(all, "nvmlDeviceGetComputeMode", n -> n.device(0).computeMode());
        add(all, "nvmlDeviceSetComputeMode", n -> n.device(0).setComputeMode(NvmlComputeMode.EXCLUSIVE_PROCESS));
        add(all, "nvmlDeviceGetNumaNodeId", n -> n.device(0).numaNode());
        add(all, "nvmlEventSetCreate", n -> n.createEventSet().close());
        add(all, "nvmlDeviceRegisterEvents", n -> {
            try (NvmlEventSet s = n.createEventSet()) {
                s.register(n.device(0), NvmlEventSet.XID_CRITICAL_ERROR);
            }
        });
        add(all, "nvmlEventSetWait_v2", n -> {
            try (NvmlEventSet s = n.createEventSet()) {
                s.await(0);
            }
        });
        add(all, "nvmlEventSetFree", n -> n.createEventSet().close());
        return all.stream();
    }

    private static void add(List<Arguments> all, String fn, Consumer<Nvml> call) {
        all.add(Arguments.of(fn, call));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("functions")
    void everyFunctionReportsItsReturnCodeTyped(String function, Consumer<Nvml> call) {
        try (Nvml nvml = open()) {
            for (NvmlReturn r : List.of(NvmlReturn.NO_PERMISSION, NvmlReturn.UNKNOWN, NvmlReturn.NOT_READY)) {
                FAKE.fake_nvml_clear_faults();
                FAKE.fake_nvml_set_fault(function, r.code(), 0, 1);
                NvmlException e = assertThrows(NvmlException.class, () -> call.accept(nvml), function);
                assertEquals(r, e.result(), function);
                assertEquals(r.code(), e.rawCode());
                assertEquals(function, e.function());
                assertTrue(e.getMessage().contains(function) && e.getMessage().contains(r.cName()), e.getMessage());
            }
            // a code this binding does not know keeps its raw value
            FAKE.fake_nvml_clear_faults();
            FAKE.fake_nvml_set_fault(function, 4711, 0, 1);
            NvmlException e = assertThrows(NvmlException.class, () -> call.accept(nvml));
            assertEquals(NvmlReturn.UNRECOGNIZED, e.result());
            assertEquals(4711, e.rawCode());
            assertTrue(e.getMessage().contains("return code 4711"), e.getMessage());
        }
    }

    @Test
    void computeModeIsKeptPerGpuAndSetThroughNvml() {
        try (Nvml nvml = open()) {
            NvmlDevice two = nvml.device(2);
            assertEquals(NvmlComputeMode.DEFAULT, two.computeMode(), "a loaded machine starts in DEFAULT");
            two.setComputeMode(NvmlComputeMode.EXCLUSIVE_PROCESS);
            assertEquals(NvmlComputeMode.EXCLUSIVE_PROCESS, two.computeMode());
            assertEquals(3, FAKE.fake_nvml_compute_mode(2));
            assertEquals(0, FAKE.fake_nvml_compute_mode(1), "only that GPU");
            assertEquals(NvmlComputeMode.DEFAULT, nvml.device(1).computeMode());
            two.setComputeMode(NvmlComputeMode.DEFAULT);
            assertEquals(0, FAKE.fake_nvml_compute_mode(2));

            // set behind NVML's back, as nvidia-smi -c does
            assertEquals(0, FAKE.fake_nvml_set_compute_mode(3, 2));
            assertEquals(NvmlComputeMode.PROHIBITED, nvml.device(3).computeMode());

            // the setter's refusal is typed, and the mode stays as it was
            FAKE.fake_nvml_set_fault("nvmlDeviceSetComputeMode", NvmlReturn.NO_PERMISSION.code(), 0, 1);
            NvmlException e = assertThrows(NvmlException.class, () -> two.setComputeMode(NvmlComputeMode.EXCLUSIVE_PROCESS));
            assertEquals(NvmlReturn.NO_PERMISSION, e.result());
            assertEquals("nvmlDeviceSetComputeMode", e.function());
            assertEquals(Optional.of(two.uuid()), e.gpu());
            assertEquals(NvmlComputeMode.DEFAULT, two.computeMode());
            two.setComputeMode(NvmlComputeMode.EXCLUSIVE_PROCESS);   // the fault was for one call
            assertEquals(NvmlComputeMode.EXCLUSIVE_PROCESS, two.computeMode());

            InvalidValueException bad = assertThrows(InvalidValueException.class, () -> two.setComputeMode(NvmlComputeMode.UNRECOGNIZED));
            assertEquals("nvml.setComputeMode.mode", bad.field());
            assertEquals(4, FAKE.fake_nvml_calls("nvmlDeviceSetComputeMode"), "the refused mode never reached NVML");
        }
        FakeNvml.machine(FAKE, "dgx-h100");
        assertEquals(0, FAKE.fake_nvml_compute_mode(2), "loading a machine resets the modes");
    }

    @Test
    void computeModesMapTheirValues() {
        for (NvmlComputeMode m : NvmlComputeMode.values()) {
            if (m != NvmlComputeMode.UNRECOGNIZED) {
                assertEquals(m, NvmlComputeMode.of(m.nvmlValue()));
            }
        }
        assertEquals(3, NvmlComputeMode.EXCLUSIVE_PROCESS.nvmlValue());
        assertEquals(NvmlComputeMode.UNRECOGNIZED, NvmlComputeMode.of(4));
        assertEquals(NvmlComputeMode.UNRECOGNIZED, NvmlComputeMode.of(-1));
    }

    @Test
    void everyReturnCodeMapsToItsCase() {
        for (NvmlReturn r : NvmlReturn.values()) {
            if (r != NvmlReturn.UNRECOGNIZED) {
                assertEquals(r, NvmlReturn.of(r.code()));
            }
        }
        assertEquals(33, NvmlReturn.values().length, "0..30, 999 and UNRECOGNIZED");
        assertEquals(NvmlReturn.GPU_IS_LOST, NvmlReturn.of(15));
        assertEquals("NVML_ERROR_GPU_IS_LOST", NvmlReturn.GPU_IS_LOST.cName());
        assertEquals(NvmlReturn.UNRECOGNIZED, NvmlReturn.of(31));
        assertEquals(NvmlReturn.UNRECOGNIZED, NvmlReturn.of(-5));
        assertEquals(NvmlReturn.UNKNOWN, NvmlReturn.of(999));
        assertTrue(new NvmlException("f", 15, "GPU-a") instanceof io.qgpu.api.QgpuException);
    }

    @Test
    void stringsGrowTheirBufferOnInsufficientSize() {
        String longName = "NVIDIA H100 80GB HBM3 " + "x".repeat(150);
        FAKE.fake_nvml_set_name(2, longName);
        try (Nvml nvml = open()) {
            assertEquals(longName, nvml.device(2).name());
            assertEquals(2, FAKE.fake_nvml_calls("nvmlDeviceGetName"), "96 bytes, then 192");
        }
    }

    @Test
    void processListGrowsWhileProcessesAppear() {
        for (int i = 0; i < 40; i++) {
            FAKE.fake_nvml_add_process(1, 1000 + i, (i + 1) * GpuDevice.MIB);
        }
        FAKE.fake_nvml_add_process(1, 2000, -1L);
        FAKE.fake_nvml_grow_processes_on_query(1, 30);
        try (Nvml nvml = open()) {
            List<NvmlProcess> procs = nvml.device(1).runningComputeProcesses();
            // the count query said 41, then 30 more appeared: the first read is too small, the second fits
            assertEquals(71, procs.size());
            assertEquals(3, FAKE.fake_nvml_calls("nvmlDeviceGetComputeRunningProcesses_v3"));
            assertEquals(new NvmlProcess(1000, GpuDevice.MIB, 0xFFFFFFFFL, 0xFFFFFFFFL), procs.get(0));
            NvmlProcess unknown = procs.get(40);
            assertEquals(2000, unknown.pid());
            assertEquals(-1, unknown.usedMemoryBytes());
            assertFalse(unknown.usedMemoryKnown());
            assertTrue(nvml.device(0).runningComputeProcesses().isEmpty(), "count query SUCCESS: none");
        }
    }

    @Test
    void processListThatNeverSettlesIsAnError() {
        FAKE.fake_nvml_add_process(0, 7, GpuDevice.MIB);
        FAKE.fake_nvml_set_fault("nvmlDeviceGetComputeRunningProcesses_v3", NvmlReturn.INSUFFICIENT_SIZE.code(), 0, -1);
        try (Nvml nvml = open()) {
            NvmlException e = assertThrows(NvmlException.class, () -> nvml.device(0).runningComputeProcesses());
            assertEquals(NvmlReturn.INSUFFICIENT_SIZE, e.result());
        }
    }

    @Test
    void processUtilizationSinceATimestamp() {
        FAKE.fake_nvml_add_sample(0, 11, 1_000, 30, 5);
        FAKE.fake_nvml_add_sample(0, 12, 2_000, 60, 7);
        FAKE.fake_nvml_add_sample(0, 11, 3_000, 40, 6);
        try (Nvml nvml = open()) {
            NvmlDevice d = nvml.device(0);
            assertEquals(3, d.processUtilization(0).size());
            List<NvmlProcessUtilization> recent = d.processUtilization(1_000);
            assertEquals(List.of(new NvmlProcessUtilization(12, 2_000, 60, 7, 0, 0),
                    new NvmlProcessUtilization(11, 3_000, 40, 6, 0, 0)), recent);
            assertEquals(List.of(), d.processUtilization(3_000), "NOT_FOUND: nothing newer");
            assertEquals(List.of(), nvml.device(1).processUtilization(0));
        }
    }

    @Test
    void memoryVersionFieldIsSent() {
        FAKE.fake_nvml_add_process(4, 99, 3 * GpuDevice.GIB);
        try (Nvml nvml = open()) {
            // the fake refuses any other version with ARGUMENT_VERSION_MISMATCH
            assertEquals(3 * GpuDevice.GIB, nvml.device(4).memory().used());
        }
    }

    @Test
    void initIsReferenceCounted() {
        Nvml a = open();
        Nvml b = open();
        Nvml c = open();
        assertEquals(1, FAKE.fake_nvml_init_count());
        assertEquals(1, FAKE.fake_nvml_init_calls());
        a.close();
        a.close(); // idempotent
        b.close();
        assertEquals(1, FAKE.fake_nvml_init_count());
        assertEquals(8, c.deviceCount());
        c.close();
        assertEquals(0, FAKE.fake_nvml_init_count());
        assertEquals(1, FAKE.fake_nvml_shutdown_calls());
        NvmlException e = assertThrows(NvmlException.class, c::deviceCount);
        assertEquals(NvmlReturn.UNINITIALIZED, e.result());
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        try (Nvml again = open()) {
            assertEquals(8, again.deviceCount());
            assertEquals(2, FAKE.fake_nvml_init_calls());
        }
    }

    @Test
    void failingInitIsTypedAndTakesNoReference() {
        FAKE.fake_nvml_set_fault("nvmlInit_v2", NvmlReturn.DRIVER_NOT_LOADED.code(), 0, 1);
        NvmlException e = assertThrows(NvmlException.class, FakeNvmlTestBase::open);
        assertEquals(NvmlReturn.DRIVER_NOT_LOADED, e.result());
        assertEquals("nvmlInit_v2", e.function());
        assertEquals(0, FAKE.fake_nvml_init_count());
        try (Nvml nvml = open()) {
            assertEquals(1, FAKE.fake_nvml_init_count());
        }
    }

    @Test
    void initFlagsUseInitWithFlags() {
        try (Nvml nvml = Nvml.builder().libraryPath(FakeNvml.path()).initFlags(1).open()) {
            assertEquals(1, FAKE.fake_nvml_calls("nvmlInitWithFlags"));
            assertEquals(0, FAKE.fake_nvml_calls("nvmlInit_v2"));
            InvalidValueException e = assertThrows(InvalidValueException.class, FakeNvmlTestBase::open);
            assertEquals("nvml.initFlags", e.field());
        }
    }

    @Test
    void missingLibraryIsATypedError() {
        NvmlLibraryException e = assertThrows(NvmlLibraryException.class,
                () -> Nvml.builder().libraryPath(Path.of("/nonexistent/libnvidia-ml.so.1")).open());
        assertEquals(NvmlReturn.LIBRARY_NOT_FOUND, e.result());
        assertTrue(e.library().endsWith("/nonexistent/libnvidia-ml.so.1"));
        assertTrue(e.getMessage().contains("qgpu.nvml.library"), e.getMessage());
        assertTrue(e.getCause() instanceof UnsatisfiedLinkError);
    }

    @Test
    void defaultLibraryComesFromTheSystemProperty() {
        String before = System.getProperty("qgpu.nvml.library");
        System.setProperty("qgpu.nvml.library", FakeNvml.path().toString());
        try (Nvml nvml = Nvml.open()) {
            assertEquals(FakeNvml.path().toString(), nvml.library());
            assertEquals(8, nvml.deviceCount());
        } finally {
            if (before == null) {
                System.clearProperty("qgpu.nvml.library");
            } else {
                System.setProperty("qgpu.nvml.library", before);
            }
        }
        System.setProperty("qgpu.nvml.library", "/nonexistent/libnvidia-ml.so.1");
        try {
            NvmlLibraryException e = assertThrows(NvmlLibraryException.class, Nvml::open);
            assertEquals(NvmlReturn.LIBRARY_NOT_FOUND, e.result());
        } finally {
            System.clearProperty("qgpu.nvml.library");
        }
    }

    @Test
    void missingRequiredSymbolIsATypedErrorNamingIt() {
        NvmlLibraryException e = assertThrows(NvmlLibraryException.class,
                () -> Nvml.builder().libraryPath(FakeNvml.brokenPath()).open());
        assertEquals(NvmlReturn.FUNCTION_NOT_FOUND, e.result());
        assertEquals("nvmlDeviceGetPciInfo_v3", e.function());
        assertTrue(e.getMessage().contains("nvmlDeviceGetPciInfo_v3"), e.getMessage());
        assertEquals(0, FakeNvml.control(FakeNvml.brokenPath()).fake_nvml_init_count(), "no init on a refused library");
    }

    @Test
    void missingOptionalSymbolGivesUnknownNuma() {
        FakeNvml old = FakeNvml.control(FakeNvml.oldPath());
        FakeNvml.machine(old, "t4x4");
        try (Nvml nvml = Nvml.builder().libraryPath(FakeNvml.oldPath()).open()) {
            assertEquals(-1, nvml.device(0).numaNode());
            assertEquals(4, nvml.deviceCount());
        }
        assertEquals(0, old.fake_nvml_init_count());
    }

    @Test
    void lostGpuBecomesUnhealthyAndListenersAreTold() {
        FAKE.fake_nvml_gpu_lost_after(6, 2);
        List<GpuHealthEvent> events = new ArrayList<>();
        try (Nvml nvml = open()) {
            nvml.addHealthListener(events::add);
            NvmlDevice d = nvml.device(6);               // GetUUID: call 1
            assertEquals("NVIDIA H100 80GB HBM3", d.name()); // call 2
            NvmlException e = assertThrows(NvmlException.class, d::memory);
            assertEquals(NvmlReturn.GPU_IS_LOST, e.result());
            assertEquals(Optional.of(d.uuid()), e.gpu());
            assertEquals(Health.UNHEALTHY, nvml.health(d.uuid()));
            assertEquals(Health.HEALTHY, nvml.health(nvml.device(5).uuid()));
            assertThrows(NvmlException.class, d::pciInfo);
            assertEquals(1, events.size(), "told once: " + events);
            GpuHealthEvent ev = events.get(0);
            assertEquals(d.uuid(), ev.gpuUuid());
            assertEquals(Health.UNHEALTHY, ev.health());
            assertTrue(ev.cause().contains("GPU_IS_LOST") && ev.cause().contains("nvmlDeviceGetMemoryInfo_v2"), ev.cause());
            assertTrue(ev.xid().isEmpty());
            assertEquals(java.util.Set.of(d.uuid()), nvml.unhealthyGpus());
        }
    }

    @Test
    void listenerFailureDoesNotStopTheOthers() {
        List<String> told = new ArrayList<>();
        try (Nvml nvml = open()) {
            nvml.addHealthListener(e -> {
                throw new IllegalStateException("boom");
            });
            Nvml.Registration r = nvml.addHealthListener(e -> told.add(e.gpuUuid()));
            assertTrue(nvml.reportHealth(GpuHealthEvent.of("GPU-a", Health.UNHEALTHY, "test")));
            assertFalse(nvml.reportHealth(GpuHealthEvent.of("GPU-a", Health.UNHEALTHY, "again")));
            assertTrue(nvml.reportHealth(GpuHealthEvent.of("GPU-a", Health.HEALTHY, "reset")));
            r.close();
            nvml.reportHealth(GpuHealthEvent.of("GPU-b", Health.UNHEALTHY, "after removal"));
            assertEquals(List.of("GPU-a", "GPU-a"), told);
        }
    }

    @Test
    void eventsArriveThroughTheEventSet() {
        try (Nvml nvml = open(); NvmlEventSet set = nvml.createEventSet()) {
            set.register(nvml.device(2), NvmlEventSet.XID_CRITICAL_ERROR);
            assertEquals(Optional.empty(), set.await(0), "TIMEOUT: empty");
            assertEquals(1, FAKE.fake_nvml_inject_xid(2, 79));
            assertEquals(0, FAKE.fake_nvml_inject_xid(3, 79), "GPU 3 is not registered");
            NvmlEvent e = set.await(1000).orElseThrow();
            assertTrue(e.isXid());
            assertEquals(79, e.eventData());
            assertEquals(nvml.device(2), e.device());
            assertEquals(0xFFFFFFFFL, e.gpuInstanceId());
            NvmlException notSupported = assertThrows(NvmlException.class,
                    () -> set.register(nvml.device(0), 1L << 40));
            assertEquals(NvmlReturn.NOT_SUPPORTED, notSupported.result());
        }
        try (Nvml nvml = open()) {
            NvmlEventSet set = nvml.createEventSet();
            set.close();
            long waits = FAKE.fake_nvml_calls("nvmlEventSetWait_v2");
            NvmlException closed = assertThrows(NvmlException.class, () -> set.await(0));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            assertThrows(NvmlException.class, () -> set.register(nvml.device(0), NvmlEventSet.XID_CRITICAL_ERROR));
            assertEquals(waits, FAKE.fake_nvml_calls("nvmlEventSetWait_v2"), "a freed handle never reaches NVML");
        }
    }

    @Test
    void badArgumentsAreNamed() {
        try (Nvml nvml = open()) {
            NvmlDevice d = nvml.device(0);
            assertEquals("nvml.nvLink.link", assertThrows(InvalidValueException.class, () -> d.nvLinkActive(-1)).field());
            assertEquals("nvml.processUtilization.lastSeenMicros",
                    assertThrows(InvalidValueException.class, () -> d.processUtilization(-1)).field());
            assertEquals("nvml.device.uuid", assertThrows(InvalidValueException.class, () -> nvml.deviceByUuid(" ")).field());
        }
        assertEquals("nvml.libraryName",
                assertThrows(InvalidValueException.class, () -> Nvml.builder().libraryName("")).field());
    }

    @Test
    void machinesDiffer() {
        FakeNvml.machine(FAKE, "t4x4");
        try (Nvml nvml = open()) {
            List<String> names = nvml.devices().stream().map(NvmlDevice::name).distinct().collect(Collectors.toList());
            assertEquals(List.of("Tesla T4"), names);
            assertEquals(16 * GpuDevice.GIB, nvml.device(0).memory().total());
        }
        assertThrows(IllegalArgumentException.class, () -> FakeNvml.machine(FAKE, "cray-1"));
    }
}
