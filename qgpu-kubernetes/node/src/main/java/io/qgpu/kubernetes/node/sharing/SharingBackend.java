package io.qgpu.kubernetes.node.sharing;

import io.qgpu.api.InvalidValueException;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The engine on a node that enforces the memory and compute limits of the slices it shares, chosen with
 * {@value #FLAG}.
 *
 * <pre>{@code
 * SharingBackend b = SharingBackend.parse("hami-core");   // HAMI_CORE
 * b.wireName();                                           // "hami-core"
 * SharingBackend.parse("mig");   // InvalidValueException: --sharing = "mig": must be one of none, mps, hami-core
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum SharingBackend {
    /** Nothing enforces the limits: the container gets them as {@code QGPU_*} environment only (the default). */
    NONE("none"),
    /** NVIDIA MPS: a control daemon per shared GPU, per-client pinned memory and active-thread limits. */
    MPS("mps"),
    /** HAMi-core: its CUDA interposer {@code libvgpu.so}, preloaded into the container and configured by environment. */
    HAMI_CORE("hami-core");

    /** The command-line flag that picks the back end. */
    public static final String FLAG = "--sharing";

    private final String wireName;

    SharingBackend(String wireName) {
        this.wireName = wireName;
    }

    /** The name on the command line and in {@value SharingEdits#ENV_SHARING}: {@code none}, {@code mps}, {@code hami-core}. */
    public String wireName() {
        return wireName;
    }

    /**
     * The back end a {@value #FLAG} value names, in any case.
     *
     * @throws InvalidValueException naming {@value #FLAG} and the value when it names none
     */
    public static SharingBackend parse(String value) {
        if (value != null) {
            String v = value.trim().toLowerCase(Locale.ROOT);
            for (SharingBackend b : values()) {
                if (b.wireName.equals(v)) {
                    return b;
                }
            }
        }
        throw new InvalidValueException(FLAG, value, "must be one of "
                + Arrays.stream(values()).map(SharingBackend::wireName).collect(Collectors.joining(", ")));
    }
}
