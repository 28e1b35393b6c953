package io.qgpu.nvml;

import org.jspecify.annotations.Nullable;

/**
 * The NVML library could not be used: it was not found or not loadable
 * ({@link NvmlReturn#LIBRARY_NOT_FOUND}), or it lacks a function this binding needs
 * ({@link NvmlReturn#FUNCTION_NOT_FOUND}, typically a driver older than NVML 12). Thrown instead of
 * letting JNA's {@link UnsatisfiedLinkError} reach the caller; the JNA error is the cause.
 *
 * <pre>{@code
 * try (Nvml nvml = Nvml.builder().libraryPath(Path.of("/opt/none/libnvidia-ml.so.1")).open()) {
 *     ...
 * } catch (NvmlLibraryException e) {
 *     e.library();   // "/opt/none/libnvidia-ml.so.1"
 * }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public final class NvmlLibraryException extends NvmlException {
    private static final long serialVersionUID = 1L;

    private final String library;

    /**
     * @param function the function that was missing, or {@code "load"} when the library itself failed
     * @param result   {@link NvmlReturn#LIBRARY_NOT_FOUND} or {@link NvmlReturn#FUNCTION_NOT_FOUND}
     * @param library  the library name or path that was tried
     * @param detail   what to do about it
     * @param cause    the JNA error, or null
     */
    public NvmlLibraryException(String function, NvmlReturn result, String library, String detail,
            @Nullable Throwable cause) {
        super(function, result.code(), null, "library " + library + ": " + detail, cause);
        this.library = library;
    }

    /** The library name or path that was tried. */
    public String library() {
        return library;
    }
}
