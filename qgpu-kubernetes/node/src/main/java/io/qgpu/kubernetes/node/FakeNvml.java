package io.qgpu.kubernetes.node;

import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;

/**
 * The node agents' {@code --machine} option: asks qgpu's fake NVML library (built from qgpu-nvml's test
 * sources, {@code libnvidia-ml.so.1} in {@code qgpu-nvml/target/fake-nvml}) to play one of its machines.
 *
 * <pre>{@code
 * FakeNvml.selectMachine("/path/to/fake-nvml/libnvidia-ml.so.1", "t4x4");
 * }</pre>
 *
 * <p>Thread safety: stateless; call it before opening NVML sessions.
 */
public final class FakeNvml {
    /** The control function of the fake NVML library that picks the machine it plays. */
    public static final String SELECT = "fake_nvml_select_machine";

    private FakeNvml() {
    }

    /**
     * Asks the fake NVML library to play a machine; refused for any other library.
     *
     * @throws IllegalArgumentException naming {@code --machine} and the value, or the library that is not the fake one
     */
    public static void selectMachine(String library, String machine) {
        Function select;
        try {
            select = NativeLibrary.getInstance(library).getFunction(SELECT);
        } catch (UnsatisfiedLinkError e) {
            throw new IllegalArgumentException("--machine works only with the fake NVML library "
                    + "(qgpu-nvml/target/fake-nvml/libnvidia-ml.so.1); " + library + " does not export " + SELECT);
        }
        if (select.invokeInt(new Object[] {machine}) != 0) {
            throw new IllegalArgumentException("--machine " + machine + ": the fake NVML library plays "
                    + String.join(", ", AgentChecks.FAKE_MACHINES));
        }
    }
}
