/** JNA binding of NVML: discovery, usage sampling and health events on real NVIDIA GPUs. */
module io.qgpu.nvml {
    requires transitive io.qgpu.api;
    requires com.sun.jna;
    requires org.slf4j;

    // exports are added as packages land
}
