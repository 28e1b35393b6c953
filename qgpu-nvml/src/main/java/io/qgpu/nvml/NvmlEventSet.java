package io.qgpu.nvml;

import com.sun.jna.Pointer;
import io.qgpu.api.Validate;
import io.qgpu.nvml.internal.NvmlStructs;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An NVML event set ({@code nvmlEventSet_t}): register GPUs for event types, then wait for events.
 *
 * <pre>{@code
 * try (NvmlEventSet set = nvml.createEventSet()) {
 *     set.register(nvml.device(0), NvmlEventSet.XID_CRITICAL_ERROR);
 *     Optional<NvmlEvent> e = set.await(500);   // empty on timeout
 * }
 * }</pre>
 *
 * <p>Thread safety: {@link #register} and {@link #await} may be called from any thread; NVML delivers
 * each event to one waiter. {@link #close()} must not race with a waiter: stop waiting first (the
 * health monitor waits with a timeout for that reason).
 */
public final class NvmlEventSet implements AutoCloseable {
    /** {@code nvmlEventTypeXidCriticalError}: an Xid error; the event data is the Xid. */
    public static final long XID_CRITICAL_ERROR = 8L;

    private final Nvml nvml;
    private final Pointer handle;
    private final AtomicBoolean closed = new AtomicBoolean();

    NvmlEventSet(Nvml nvml, Pointer handle) {
        this.nvml = nvml;
        this.handle = handle;
    }

    /**
     * Registers a GPU for event types (a bit mask, for example {@link #XID_CRITICAL_ERROR}).
     *
     * @throws NvmlException with {@code NOT_SUPPORTED} when the GPU cannot deliver them
     */
    public void register(NvmlDevice device, long eventTypes) {
        Validate.notNull("nvml.eventSet.device", device);
        Validate.atLeast("nvml.eventSet.eventTypes", eventTypes, 1);
        ensureOpen("nvmlDeviceRegisterEvents");
        nvml.check("nvmlDeviceRegisterEvents", device.uuid(), nvml.call("nvmlDeviceRegisterEvents",
                api -> api.nvmlDeviceRegisterEvents(device.handle(), eventTypes, handle)));
    }

    /**
     * Waits up to {@code timeoutMs} for the next event ({@code nvmlEventSetWait_v2}).
     *
     * @return the event, or empty when none came in time ({@code TIMEOUT})
     * @throws NvmlException on any other failing return code (for example {@code GPU_IS_LOST})
     */
    public Optional<NvmlEvent> await(int timeoutMs) {
        Validate.atLeast("nvml.eventSet.timeoutMs", timeoutMs, 0);
        ensureOpen("nvmlEventSetWait_v2");
        NvmlStructs.EventData data = new NvmlStructs.EventData();
        int rc = nvml.call("nvmlEventSetWait_v2", api -> api.nvmlEventSetWait_v2(handle, data, timeoutMs));
        if (rc == NvmlReturn.TIMEOUT.code()) {
            return Optional.empty();
        }
        nvml.check("nvmlEventSetWait_v2", null, rc);
        NvmlDevice device = nvml.deviceForHandle(data.device, "event device");
        return Optional.of(new NvmlEvent(device, data.eventType, data.eventData,
                Integer.toUnsignedLong(data.gpuInstanceId), Integer.toUnsignedLong(data.computeInstanceId)));
    }

    /** A freed set's handle must never reach NVML again (it would be a use after free). */
    private void ensureOpen(String function) {
        if (closed.get()) {
            throw new NvmlException(function, NvmlReturn.INVALID_ARGUMENT.code(), null, "the event set is closed", null);
        }
    }

    /** Frees the set ({@code nvmlEventSetFree}); idempotent. A failure is thrown once. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            nvml.check("nvmlEventSetFree", null, nvml.call("nvmlEventSetFree", api -> api.nvmlEventSetFree(handle)));
        }
    }
}
