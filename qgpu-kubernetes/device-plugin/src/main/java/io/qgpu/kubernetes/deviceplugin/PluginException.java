package io.qgpu.kubernetes.deviceplugin;

import io.grpc.Status;

/**
 * A request the plugin refuses, with the gRPC status it answers: {@code INVALID_ARGUMENT} for a
 * malformed request, {@code NOT_FOUND} for a device id it never advertised, {@code RESOURCE_EXHAUSTED}
 * when the GPUs cannot take the allocation, {@code FAILED_PRECONDITION} for an unhealthy device or an
 * extender decision that does not fit this node, {@code INTERNAL} when the state cannot be saved.
 * The message names the field and the value.
 */
public final class PluginException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final Status.Code code;

    public PluginException(Status.Code code, String message) {
        super(message);
        this.code = code;
    }

    public PluginException(Status.Code code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    /** The gRPC status code of the answer. */
    public Status.Code code() {
        return code;
    }

    static PluginException invalid(String field, Object value, String rule) {
        return new PluginException(Status.Code.INVALID_ARGUMENT, field + " = " + value + ": " + rule);
    }

    /** The status this refusal is answered with. */
    public Status toStatus() {
        return Status.fromCode(code).withDescription(getMessage());
    }
}
