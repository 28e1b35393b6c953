package io.qgpu.kubernetes.node.mps;

import java.io.IOException;
import java.util.Optional;

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

    /**
     * Gives the GPU's daemon one command of its interactive shell (such as {@code get_server_list} or
     * {@code set_default_active_thread_percentage 30}) and returns what it printed. A control without commands
     * (the default) refuses every one.
     *
     * @throws IOException when the command cannot run, the daemon does not answer or the command fails
     */
    default String command(String gpuUuid, String command) throws IOException {
        throw new IOException(getClass().getName() + " gives no command to the MPS control daemon of GPU " + gpuUuid + ": " + command);
    }

    /**
     * The process id of the GPU's daemon as it wrote it into its pipe directory
     * ({@code nvidia-cuda-mps-control.pid}), if it can be read: a daemon with another pid is another daemon
     * (restarted behind the supervisor's back), whose defaults are lost. Empty by default (not tracked).
     */
    default Optional<Long> daemonPid(String gpuUuid) {
        return Optional.empty();
    }
}
