package io.qgpu.nvml;

import io.qgpu.api.QgpuException;
import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * An NVML call failed. Carries the typed {@link #result()} (one enum case per NVML return code, with
 * {@link NvmlReturn#UNRECOGNIZED} for codes not known yet), the raw C value, the NVML function and,
 * when the call was about one GPU, that GPU.
 *
 * <pre>{@code
 * try {
 *     device.memory();
 * } catch (NvmlException e) {
 *     if (e.result() == NvmlReturn.GPU_IS_LOST) { ... }
 *     e.rawCode();    // 15
 *     e.function();   // "nvmlDeviceGetMemoryInfo_v2"
 * }
 * }</pre>
 *
 * <p>{@link NvmlLibraryException} is the subtype for a library or symbol that could not be loaded.
 *
 * <p>Thread safety: immutable.
 */
public sealed class NvmlException extends QgpuException permits NvmlLibraryException {
    private static final long serialVersionUID = 1L;

    private final NvmlReturn result;
    private final int rawCode;
    private final String function;
    private final @Nullable String gpu;

    /**
     * @param function the NVML function that failed
     * @param rawCode  its return value
     * @param gpu      the GPU the call was about (UUID, or {@code index N} before the UUID is known), or null
     */
    public NvmlException(String function, int rawCode, @Nullable String gpu) {
        this(function, rawCode, gpu, null, null);
    }

    NvmlException(String function, int rawCode, @Nullable String gpu, @Nullable String detail,
            @Nullable Throwable cause) {
        super(message(function, rawCode, gpu, detail), cause);
        this.function = Objects.requireNonNull(function, "function");
        this.rawCode = rawCode;
        this.result = NvmlReturn.of(rawCode);
        this.gpu = gpu;
    }

    private static String message(String function, int rawCode, @Nullable String gpu, @Nullable String detail) {
        NvmlReturn r = NvmlReturn.of(rawCode);
        StringBuilder sb = new StringBuilder(function).append(" failed");
        if (gpu != null) {
            sb.append(" on ").append(gpu);
        }
        sb.append(": ").append(r == NvmlReturn.UNRECOGNIZED ? "return code " + rawCode : r.cName() + " (" + rawCode + ")")
                .append(", ").append(r.description());
        if (detail != null) {
            sb.append(". ").append(detail);
        }
        return sb.toString();
    }

    /** The typed return code. */
    public NvmlReturn result() {
        return result;
    }

    /** The C return value as NVML gave it (the only way to tell {@link NvmlReturn#UNRECOGNIZED} codes apart). */
    public int rawCode() {
        return rawCode;
    }

    /** The NVML function, for example {@code nvmlDeviceGetMemoryInfo_v2}. */
    public String function() {
        return function;
    }

    /** The GPU the call was about, if any: its UUID, or {@code index N} when the UUID was not known yet. */
    public Optional<String> gpu() {
        return Optional.ofNullable(gpu);
    }
}
