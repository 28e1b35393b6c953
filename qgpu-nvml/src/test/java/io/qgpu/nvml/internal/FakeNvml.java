package io.qgpu.nvml.internal;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The control functions of the fake libnvidia-ml (src/test/c/fake_nvml.c), bound through JNA on the
 * same library file the binding under test loads, so both see one state.
 */
public interface FakeNvml extends Library {

    /** Directory the build compiled the fake into (system property set by the POM). */
    static Path dir() {
        String d = System.getProperty("qgpu.fakeNvml.dir");
        if (d == null) {
            throw new IllegalStateException("system property qgpu.fakeNvml.dir is not set (run the tests through Maven)");
        }
        return Path.of(d);
    }

    /** The full fake. */
    static Path path() {
        return existing(dir().resolve("libnvidia-ml.so.1"));
    }

    /** A fake without the optional nvmlDeviceGetNumaNodeId. */
    static Path oldPath() {
        return existing(dir().resolve("old").resolve("libnvidia-ml.so.1"));
    }

    /** A fake that also lacks the required nvmlDeviceGetPciInfo_v3. */
    static Path brokenPath() {
        return existing(dir().resolve("broken").resolve("libnvidia-ml.so.1"));
    }

    private static Path existing(Path p) {
        if (!Files.isRegularFile(p)) {
            throw new IllegalStateException(p + " is missing: the build compiles it in generate-test-resources");
        }
        return p;
    }

    /** The control functions of the full fake. */
    static FakeNvml control() {
        return control(path());
    }

    static FakeNvml control(Path library) {
        return Native.load(library.toAbsolutePath().toString(), FakeNvml.class);
    }

    // ---- exported by fake_nvml.c ----

    int fake_nvml_select_machine(String name);

    void fake_nvml_machine(byte[] buf, int len);

    int fake_nvml_init_count();

    long fake_nvml_init_calls();

    long fake_nvml_shutdown_calls();

    long fake_nvml_calls(String function);

    int fake_nvml_set_fault(String function, int code, long skip, long times);

    void fake_nvml_clear_faults();

    int fake_nvml_gpu_lost_after(int gpu, long calls);

    int fake_nvml_inject_xid(int gpu, long xid);

    int fake_nvml_add_process(int gpu, int pid, long usedBytes);

    int fake_nvml_grow_processes_on_query(int gpu, int extra);

    int fake_nvml_add_sample(int gpu, int pid, long timeStampMicros, int smUtil, int memUtil);

    int fake_nvml_set_utilization(int gpu, int gpuPercent, int memPercent);

    int fake_nvml_set_name(int gpu, String name);

    int fake_nvml_set_link(int gpu, int link, int up);

    int fake_nvml_set_mig(int gpu, int current, int pending);

    /** GPU {@code gpu}'s compute mode as the fake holds it ({@code nvmlComputeMode_t}), not counted as a call. */
    int fake_nvml_compute_mode(int gpu);

    /** Sets GPU {@code gpu}'s compute mode behind NVML's back; 0, or -1 for a bad index or mode. */
    int fake_nvml_set_compute_mode(int gpu, int mode);

    int fake_nvml_add_mig_process(int gpu, int slot, int pid, long usedBytes);

    int fake_nvml_add_mps_process(int gpu, int pid, long usedBytes);

    int fake_nvml_set_fixed_sample_count(int gpu, int on);

    void fake_nvml_set_container_view(int on);

    int fake_nvml_set_link_remote_type(int gpu, int link, int type);

    int fake_nvml_set_link_remote(int gpu, int link, int bus);

    int fake_nvml_set_visible(int mask);

    /** Selects a machine (clearing faults and counters) and fails the test setup if the name is unknown. */
    static void machine(FakeNvml fake, String name) {
        if (fake.fake_nvml_select_machine(name) != 0) {
            throw new IllegalArgumentException("fake NVML has no machine " + name);
        }
    }
}
