package io.qgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.NativeLibrary;
import io.qgpu.nvml.Nvml;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link NvmlLiveCheck} on the fake libnvidia-ml: it passes when the workload's process is there with its
 * memory and an SM share, and it fails, naming each check, when it is not (so the real-GPU run of
 * {@code samples/nvml-check/run-live-check.sh} can fail).
 */
class NvmlLiveCheckTest {
    private static final long MIB = 1024L * 1024;
    private NativeLibrary fake;
    private Nvml nvml;

    @BeforeEach
    void open() {
        nvml = Nvml.builder().libraryPath(InventoryCommandTest.fake()).open();
        fake = NativeLibrary.getInstance(nvml.library());
        InventoryCommand.selectFakeMachine(nvml.library(), "t4x4");
    }

    private int call(String fn, Object... args) {
        return fake.getFunction(fn).invokeInt(args);
    }

    private String run(long pid, long minMiB, int expectedCode) throws InterruptedException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int code = NvmlLiveCheck.run(nvml, pid, minMiB, 2, 0, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(expectedCode, code, out);
        return out;
    }

    @Test
    void passesWhenTheWorkloadIsListedWithMemoryAndSmShare() throws InterruptedException {
        assertEquals(0, call("fake_nvml_add_process", 1, 4242, 5000 * MIB));
        assertEquals(0, call("fake_nvml_add_sample", 1, 4242, 10L, 80, 5));
        assertEquals(0, call("fake_nvml_set_utilization", 1, 90, 7));
        String out = run(4242, 4000, 0);
        assertTrue(out.contains("pid 4242 mem 5000 MiB sm 80%"), out);
        assertTrue(out.contains("live check: all passed"), out);
        assertTrue(nvml.isClosed(), "the check closes the session");
    }

    @Test
    void failsAndNamesEachCheckWhenTheWorkloadIsMissing() throws InterruptedException {
        assertEquals(0, call("fake_nvml_add_process", 1, 4242, 1000 * MIB));
        String out = run(4242, 4000, 1);
        assertTrue(out.contains("FAIL pid 4242 listed by nvmlDeviceGetComputeRunningProcesses with >= 4000 MiB"), out);
        assertTrue(out.contains("FAIL pid 4242 in the sampler's report with >= 4000 MiB"), out);
        assertTrue(out.contains("FAIL pid 4242 given a non-zero SM share in some sample"), out);
        assertTrue(out.contains("FAIL a non-zero GPU utilization in some sample"), out);
        assertTrue(out.contains("live check: 4 failed"), out);
    }
}
