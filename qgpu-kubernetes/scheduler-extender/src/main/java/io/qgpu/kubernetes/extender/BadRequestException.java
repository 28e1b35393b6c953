package io.qgpu.kubernetes.extender;

import com.fasterxml.jackson.databind.JsonNode;
import io.qgpu.api.QgpuException;

/**
 * A request the extender refuses: malformed JSON, a missing field, a pod resource or annotation it
 * does not know, a body over the size limit, a wrong method or path. Carries the HTTP status
 * (always 4xx) and a message that names the field and the value.
 *
 * <pre>{@code
 * throw BadRequestException.badValue("Pod.spec.containers[0].resources.limits[qgpu.io/gpu-memory]", "8x", "must be a whole number of GiB");
 * }</pre>
 *
 * <p>Thread safety: immutable once thrown.
 */
public final class BadRequestException extends QgpuException {
    private static final long serialVersionUID = 1L;

    private final int status;

    public BadRequestException(int status, String message) {
        super(message);
        if (status < 400 || status > 499) {
            throw new IllegalArgumentException("status must be 4xx, was " + status);
        }
        this.status = status;
    }

    public BadRequestException(int status, String message, Throwable cause) {
        super(message, cause);
        if (status < 400 || status > 499) {
            throw new IllegalArgumentException("status must be 4xx, was " + status);
        }
        this.status = status;
    }

    /** 400: {@code field = "value": rule}. */
    public static BadRequestException badValue(String field, Object value, String rule) {
        String v = value == null ? "null"
                : value instanceof CharSequence ? "\"" + value + "\""
                // the tree keeps a fraction or exponent only as a double (1e5 would print as 100000.0):
                // name the kind rather than show a value the user did not write
                : value instanceof JsonNode n && n.isFloatingPointNumber() ? "a number"
                : String.valueOf(value);
        return new BadRequestException(400, field + " = " + v + ": " + rule);
    }

    /** The HTTP status, 4xx. */
    public int status() {
        return status;
    }
}
