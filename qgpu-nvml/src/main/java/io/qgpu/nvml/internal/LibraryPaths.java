package io.qgpu.nvml.internal;

import java.util.List;

/**
 * Where NVML is looked for: the system property {@value #PROPERTY} when set, else
 * {@code libnvidia-ml.so.1} through the dynamic loader's search path, then {@code nvidia-ml}.
 *
 * <p>Thread safety: stateless.
 */
public final class LibraryPaths {
    /** System property naming the library (a path or a name the loader can find). */
    public static final String PROPERTY = "qgpu.nvml.library";

    private LibraryPaths() {
    }

    /** The names to try, in order. */
    public static List<String> candidates() {
        String configured = System.getProperty(PROPERTY);
        if (configured != null && !configured.isBlank()) {
            return List.of(configured.strip());
        }
        return List.of("libnvidia-ml.so.1", "nvidia-ml");
    }
}
