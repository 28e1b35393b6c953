package io.qgpu.api;

import org.jspecify.annotations.Nullable;

/**
 * Root of every exception qgpu throws on purpose. Unchecked, so that callers decide where to
 * handle it; every subtype names what was wrong.
 *
 * <p>Thread safety: immutable once thrown.
 */
public abstract class QgpuException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    protected QgpuException(String message) {
        super(message);
    }

    protected QgpuException(String message, @Nullable Throwable cause) {
        super(message, cause);
    }
}
