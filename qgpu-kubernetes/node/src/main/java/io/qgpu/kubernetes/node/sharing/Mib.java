package io.qgpu.kubernetes.node.sharing;

import io.qgpu.api.InvalidValueException;

/**
 * Memory limits in whole MiB, as MPS ({@code <n>M}) and HAMi-core ({@code <n>m}) take them: rounded down,
 * so that an enforced limit is never above the slice's reservation.
 */
final class Mib {
    static final long BYTES = 1L << 20;

    private Mib() {
    }

    /**
     * {@code bytes / 1 MiB}, rounded down.
     *
     * @throws InvalidValueException naming {@code field} when that is 0 (a limit below 1 MiB cannot be expressed)
     */
    static long floor(String field, long bytes) {
        long mib = bytes / BYTES;
        if (mib < 1) {
            throw new InvalidValueException(field, bytes, "is below 1 MiB: MPS and HAMi-core take limits in whole MiB");
        }
        return mib;
    }
}
