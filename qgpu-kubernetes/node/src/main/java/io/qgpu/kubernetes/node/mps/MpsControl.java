package io.qgpu.kubernetes.node.mps;

import java.io.IOException;

/**
 * The commands {@link MpsSupervisor} gives one GPU's MPS control daemon. {@link ProcessMpsControl} runs
 * {@code nvidia-cuda-mps-control}; tests substitute their own.
 */
public interface MpsControl {

    /**
     * Starts the GPU's control daemon in the background ({@code nvidia-cuda-mps-control -d} with the GPU's
     * pipe and log directories and {@code CUDA_VISIBLE_DEVICES} set to the GPU) and returns once it has
     * detached.
     *
     * @throws IOException when the command cannot run or exits with an error
     */
    void start(String gpuUuid) throws IOException;

    /** Whether the GPU's daemon answers ({@code get_server_list} succeeds). */
    boolean healthy(String gpuUuid);

    /**
     * Asks the GPU's daemon to shut down ({@code quit}).
     *
     * @throws IOException when the command cannot run or the daemon does not answer
     */
    void quit(String gpuUuid) throws IOException;
}
