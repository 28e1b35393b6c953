package io.qgpu.nvml;

/**
 * An event from an {@link NvmlEventSet} ({@code nvmlEventData_t}).
 *
 * <pre>{@code
 * set.await(1000).ifPresent(e -> {
 *     if (e.isXid()) System.err.println(e.device().uuid() + " Xid " + e.eventData());
 * });
 * }</pre>
 *
 * @param device            the GPU it happened on
 * @param eventType         the event type bit, for example {@link NvmlEventSet#XID_CRITICAL_ERROR}
 * @param eventData         type-specific data: the Xid number for Xid events
 * @param gpuInstanceId     the MIG GPU instance it is attributable to, or {@code 0xFFFFFFFFL}
 * @param computeInstanceId the MIG compute instance it is attributable to, or {@code 0xFFFFFFFFL}
 *
 * <p>Thread safety: immutable.
 */
public record NvmlEvent(NvmlDevice device, long eventType, long eventData, long gpuInstanceId,
                        long computeInstanceId) {

    /** Whether this is an Xid critical error; then {@link #eventData()} is the Xid. */
    public boolean isXid() {
        return eventType == NvmlEventSet.XID_CRITICAL_ERROR;
    }
}
