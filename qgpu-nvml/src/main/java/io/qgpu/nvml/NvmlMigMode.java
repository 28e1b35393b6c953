package io.qgpu.nvml;

/**
 * A GPU's MIG (Multi-Instance GPU) mode: the current one and the one pending a reset.
 *
 * <pre>{@code
 * if (gpu.migMode().current() == NvmlMigMode.State.ENABLED) { ... }
 * }</pre>
 *
 * @param current the mode in force
 * @param pending the mode after the next GPU reset
 *
 * <p>Thread safety: immutable.
 */
public record NvmlMigMode(State current, State pending) {

    /** The mode on a GPU without MIG (for example a T4). */
    public static final NvmlMigMode NOT_SUPPORTED = new NvmlMigMode(State.NOT_SUPPORTED, State.NOT_SUPPORTED);

    /** One MIG mode. */
    public enum State {
        /** The GPU has no MIG. */
        NOT_SUPPORTED,
        DISABLED,
        ENABLED;

        static State of(long nvmlValue) {
            return nvmlValue == 0 ? DISABLED : ENABLED;
        }
    }
}
