package io.qgpu.kubernetes.node.mps;

import io.qgpu.kubernetes.node.AtomicFiles;
import io.qgpu.kubernetes.node.reconcile.NodeResource;
import io.qgpu.nvml.Nvml;
import io.qgpu.nvml.NvmlComputeMode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The compute mode of the GPUs under MPS as a {@link NodeResource} of the agent's reconciler, one key per GPU:
 * desired, the shared GPUs; present, the GPUs whose mode this resource changed and has not restored yet.
 * {@link #ensure} puts the GPU in {@link NvmlComputeMode#EXCLUSIVE_PROCESS}, so that the MPS server is the one
 * process on it and every other CUDA process reaches it only through the server; it first writes the mode the GPU
 * had into {@value #PREVIOUS_FILE} in the GPU's MPS directory ({@link MpsLayout#gpuDir}), so that the mode is known
 * after a restart of the agent too. {@link #remove} (sharing stops on that GPU) sets that mode again and deletes
 * the file. A failure (NVML refuses: the agent needs root rights for it) fails the step; the reconciler reports it
 * and retries it with back-off.
 *
 * <pre>{@code
 * NodeResource<String> modes = new ComputeModes(ComputeModes.nvml(nvml), layout, () -> sharedGpus());
 * }</pre>
 *
 * <p>Thread safety: the reconciler calls it from one thread at a time; {@code shared} must read the agent's state
 * safely.
 */
public final class ComputeModes implements NodeResource<String> {
    private static final Logger LOG = LoggerFactory.getLogger(ComputeModes.class);

    /** The resource's kind in the reconciler's reports. */
    public static final String KIND = "compute-mode";
    /** The file (in the GPU's MPS directory) holding the mode the GPU had before MPS, by name. */
    public static final String PREVIOUS_FILE = "compute-mode.previous";

    /** Reads and sets a GPU's compute mode; {@link #nvml} through an NVML session, tests in memory. */
    public interface Gpus {
        /** The GPU's compute mode now. */
        NvmlComputeMode mode(String gpuUuid);

        /** Sets the GPU's compute mode. */
        void setMode(String gpuUuid, NvmlComputeMode mode);
    }

    /** The GPUs of an NVML session (each looked up by UUID at every call). */
    public static Gpus nvml(Nvml nvml) {
        Objects.requireNonNull(nvml, "nvml");
        return new Gpus() {
            @Override
            public NvmlComputeMode mode(String gpuUuid) {
                return nvml.deviceByUuid(gpuUuid).computeMode();
            }

            @Override
            public void setMode(String gpuUuid, NvmlComputeMode mode) {
                nvml.deviceByUuid(gpuUuid).setComputeMode(mode);
            }
        };
    }

    private final Gpus gpus;
    private final MpsLayout layout;
    private final Supplier<Set<String>> shared;

    /**
     * @param gpus   the GPUs' compute modes
     * @param layout where each GPU's previous mode is kept
     * @param shared the GPUs under MPS
     */
    public ComputeModes(Gpus gpus, MpsLayout layout, Supplier<Set<String>> shared) {
        this.gpus = Objects.requireNonNull(gpus, "gpus");
        this.layout = Objects.requireNonNull(layout, "layout");
        this.shared = Objects.requireNonNull(shared, "shared");
    }

    @Override
    public String kind() {
        return KIND;
    }

    @Override
    public Set<String> desired() {
        return new LinkedHashSet<>(shared.get());
    }

    /** The GPUs with a {@value #PREVIOUS_FILE} under the MPS root. */
    @Override
    public Set<String> present() throws IOException {
        Set<String> out = new LinkedHashSet<>();
        if (!Files.isDirectory(layout.root())) {
            return out;
        }
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(layout.root())) {
            for (Path d : dirs) {
                if (Files.isRegularFile(d.resolve(PREVIOUS_FILE))) {
                    out.add(d.getFileName().toString());
                }
            }
        }
        return out;
    }

    /** Remembers the GPU's mode (unless already remembered) and sets {@code EXCLUSIVE_PROCESS} unless it is set. */
    @Override
    public void ensure(String gpu) throws IOException {
        Path file = previousFile(gpu);
        NvmlComputeMode now = gpus.mode(gpu);
        if (!Files.isRegularFile(file)) {
            AtomicFiles.write(file, now.name().getBytes(StandardCharsets.US_ASCII));
        }
        if (now != NvmlComputeMode.EXCLUSIVE_PROCESS) {
            gpus.setMode(gpu, NvmlComputeMode.EXCLUSIVE_PROCESS);
            LOG.info("GPU {}: compute mode {} -> EXCLUSIVE_PROCESS (MPS)", gpu, now);
        }
    }

    /**
     * Sets the mode the GPU had before MPS again (DEFAULT when it cannot be read) and forgets it; a no-op for a GPU
     * whose mode this resource did not change.
     */
    @Override
    public void remove(String gpu) throws IOException {
        Path file = previousFile(gpu);
        if (!Files.isRegularFile(file)) {
            return;
        }
        NvmlComputeMode before = previous(gpu);
        NvmlComputeMode now = gpus.mode(gpu);
        if (now != before) {
            gpus.setMode(gpu, before);
            LOG.info("GPU {}: compute mode {} -> {} (MPS stopped on it)", gpu, now, before);
        }
        Files.deleteIfExists(file);
    }

    /** The mode remembered for the GPU; DEFAULT when it cannot be read or is not one NVML names. */
    NvmlComputeMode previous(String gpu) {
        Path file = previousFile(gpu);
        try {
            NvmlComputeMode m = NvmlComputeMode.valueOf(Files.readString(file, StandardCharsets.US_ASCII).trim());
            if (m != NvmlComputeMode.UNRECOGNIZED) {
                return m;
            }
            LOG.warn("GPU {}: the compute mode it had before MPS was not one NVML names; DEFAULT is set", gpu);
        } catch (IOException | IllegalArgumentException e) {
            LOG.warn("GPU {}: the compute mode it had before MPS is not known ({}); DEFAULT is set", gpu, e.getMessage());
        }
        return NvmlComputeMode.DEFAULT;
    }

    private Path previousFile(String gpu) {
        return layout.gpuDir(gpu).resolve(PREVIOUS_FILE);
    }
}
