package io.qgpu.testkit.sim;

import org.jspecify.annotations.Nullable;

/**
 * A value the simulator's own state guarantees where it is read (the token holder while a kernel
 * runs, a tenant's item in progress, ...): its absence is a bug of the simulator, said plainly.
 */
final class Required {

    private Required() {
    }

    /** {@code value}; an {@link IllegalStateException} saying {@code owner + " " + missing} when null. */
    static <T> T of(@Nullable T value, String owner, String missing) {
        if (value == null) {
            throw new IllegalStateException(owner + " " + missing);
        }
        return value;
    }
}
