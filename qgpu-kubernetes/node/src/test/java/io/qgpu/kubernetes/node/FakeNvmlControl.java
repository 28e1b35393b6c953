package io.qgpu.kubernetes.node;

import com.sun.jna.Library;
import com.sun.jna.Native;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The control functions of the fake libnvidia-ml that the build compiles from qgpu-nvml's test
 * sources into target/fake-nvml, bound through JNA on the same file the agent under test (the device
 * plugin or the DRA driver) loads, so both see one state. Shared with those modules' tests through this
 * module's test jar; their POMs set {@code qgpu.fakeNvml.dir}.
 */
public interface FakeNvmlControl extends Library {

    /** The fake library (system property set by the POM). */
    static Path path() {
        String d = System.getProperty("qgpu.fakeNvml.dir");
        if (d == null) {
            throw new IllegalStateException("system property qgpu.fakeNvml.dir is not set (run the tests through Maven)");
        }
        Path p = Path.of(d, "libnvidia-ml.so.1");
        if (!Files.isRegularFile(p)) {
            throw new IllegalStateException(p + " is missing: the build compiles it in generate-test-resources");
        }
        return p;
    }

    static FakeNvmlControl load() {
        return Native.load(path().toAbsolutePath().toString(), FakeNvmlControl.class);
    }

    int fake_nvml_select_machine(String name);

    int fake_nvml_init_count();

    int fake_nvml_inject_xid(int gpu, long xid);

    /** Takes NVLink {@code link} of GPU {@code gpu} down ({@code up} 0) or up (1); until the next machine is selected. */
    int fake_nvml_set_link(int gpu, int link, int up);

    void fake_nvml_clear_faults();

    /** Makes NVML function {@code fn} return {@code code}: the next {@code skip} calls pass, then {@code times} calls fail. */
    int fake_nvml_set_fault(String fn, int code, long skip, long times);

    /** GPU {@code gpu}'s compute mode as the fake holds it (0 DEFAULT, 3 EXCLUSIVE_PROCESS). */
    int fake_nvml_compute_mode(int gpu);

    /** Sets GPU {@code gpu}'s compute mode behind NVML's back. */
    int fake_nvml_set_compute_mode(int gpu, int mode);
}
