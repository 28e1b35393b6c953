package io.qgpu.api.spi;

import io.qgpu.api.Health;
import io.qgpu.api.Validate;
import java.util.OptionalLong;

/**
 * A GPU's health changed: it became unhealthy (a device fault, the GPU fell off the bus) or was
 * declared healthy again.
 *
 * <pre>{@code
 * GpuHealthEvent e = GpuHealthEvent.xid("GPU-0b5c...", 79, "Xid 79: GPU has fallen off the bus");
 * e.health();   // UNHEALTHY
 * e.xid();      // OptionalLong[79]
 * }</pre>
 *
 * @param gpuUuid the GPU ({@code GPU-...})
 * @param health  its health from now on
 * @param cause   what happened, in words
 * @param xid     the NVIDIA Xid error code behind it, if it came from an Xid event
 *
 * <p>Thread safety: immutable.
 */
public record GpuHealthEvent(String gpuUuid, Health health, String cause, OptionalLong xid) {

    public GpuHealthEvent {
        Validate.notBlank("gpuHealthEvent.gpuUuid", gpuUuid);
        Validate.notNull("gpuHealthEvent.health", health);
        Validate.notBlank("gpuHealthEvent.cause", cause);
        Validate.notNull("gpuHealthEvent.xid", xid);
        if (xid.isPresent()) {
            Validate.atLeast("gpuHealthEvent.xid", xid.getAsLong(), 0);
        }
    }

    /** The GPU became unhealthy because of an Xid error. */
    public static GpuHealthEvent xid(String gpuUuid, long xid, String cause) {
        return new GpuHealthEvent(gpuUuid, Health.UNHEALTHY, cause, OptionalLong.of(xid));
    }

    /** A health change that did not come from an Xid. */
    public static GpuHealthEvent of(String gpuUuid, Health health, String cause) {
        return new GpuHealthEvent(gpuUuid, health, cause, OptionalLong.empty());
    }
}
