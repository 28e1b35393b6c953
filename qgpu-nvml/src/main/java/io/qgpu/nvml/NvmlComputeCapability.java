package io.qgpu.nvml;

/**
 * CUDA compute capability, for example 9.0 for an H100.
 *
 * <pre>{@code
 * boolean hopper = gpu.computeCapability().major() >= 9;
 * }</pre>
 *
 * @param major major version
 * @param minor minor version
 *
 * <p>Thread safety: immutable.
 */
public record NvmlComputeCapability(int major, int minor) {

    @Override
    public String toString() {
        return major + "." + minor;
    }
}
