package io.qgpu.nvml;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.qgpu.nvml.internal.FakeNvml;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/** Tests against the fake libnvidia-ml: each starts on a fresh machine and must close its sessions. */
public abstract class FakeNvmlTestBase {
    protected static final FakeNvml FAKE = FakeNvml.control();

    protected String machine() {
        return "dgx-h100";
    }

    @BeforeEach
    public void selectMachine() {
        FakeNvml.machine(FAKE, machine());
    }

    @AfterEach
    public void noSessionLeft() {
        FAKE.fake_nvml_clear_faults();
        assertEquals(0, FAKE.fake_nvml_init_count(), "a test left an NVML session open");
    }

    protected static Nvml open() {
        return Nvml.builder().libraryPath(FakeNvml.path()).open();
    }
}
