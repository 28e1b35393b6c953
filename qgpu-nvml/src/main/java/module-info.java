/**
 * JNA binding of NVML: discovery, usage sampling and health events on real NVIDIA GPUs.
 * Start at {@link io.qgpu.nvml.Nvml}.
 */
module io.qgpu.nvml {
    requires static transitive org.jspecify;
    requires transitive io.qgpu.api;
    requires com.sun.jna;
    requires org.slf4j;

    exports io.qgpu.nvml;
    exports io.qgpu.nvml.discovery;
    exports io.qgpu.nvml.usage;
    exports io.qgpu.nvml.health;

    // JNA reads and writes the Structure fields and implements the Library interface by reflection
    opens io.qgpu.nvml.internal to com.sun.jna;
}
