package io.qgpu.samples.gpuprobe;

/**
 * The CUDA driver library could not be loaded, or lacks a symbol the probe needs.
 *
 * <p>Thread safety: immutable.
 */
public final class NoDriverException extends Exception {
    private static final long serialVersionUID = 1L;

    public NoDriverException(String message, Throwable cause) {
        super(message, cause);
    }
}
