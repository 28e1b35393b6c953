package io.qgpu.samples.gpuprobe;

/**
 * A CUDA driver call that did not return {@code CUDA_SUCCESS}: names the call, the result code and its
 * name, for example {@code cuCtxCreate_v2 returned 2 (CUDA_ERROR_OUT_OF_MEMORY)}.
 *
 * <p>Thread safety: immutable.
 */
public final class CudaException extends Exception {
    private static final long serialVersionUID = 1L;

    private final String call;
    private final int code;
    private final String codeName;

    public CudaException(String call, int code, String codeName) {
        super(call + " returned " + code + " (" + codeName + ")");
        this.call = call;
        this.code = code;
        this.codeName = codeName;
    }

    /** The driver function, by its exported symbol name. */
    public String call() {
        return call;
    }

    /** The {@code CUresult}. */
    public int code() {
        return code;
    }

    /** The {@code CUresult}'s name, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    public String codeName() {
        return codeName;
    }
}
