package io.qgpu.core.json;

import io.qgpu.api.QgpuException;

/**
 * JSON that is malformed, has an unknown field or a value of the wrong type. The message names the
 * JSON path and the line and column.
 *
 * <p>Thread safety: immutable.
 */
public final class QgpuJsonException extends QgpuException {
    private static final long serialVersionUID = 1L;
    private final String path;

    public QgpuJsonException(String path, String message, Throwable cause) {
        super(path.isEmpty() ? message : path + ": " + message, cause);
        this.path = path;
    }

    /** JSON path of the problem, for example {@code nodes[2].gpus[0].memoryGiB}; empty at top level. */
    public String path() {
        return path;
    }
}
