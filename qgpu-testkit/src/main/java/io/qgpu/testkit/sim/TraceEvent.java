package io.qgpu.testkit.sim;

import io.qgpu.api.Validate;

/**
 * One line of a simulation trace.
 *
 * <pre>{@code
 * for (TraceEvent e : result.trace()) {
 *     System.out.println(e.toCsv());   // 0.120500,gpu0,train-a,SUSPEND,
 * }
 * }</pre>
 *
 * @param atNanos virtual time
 * @param gpu     the GPU
 * @param tenant  the tenant, or {@code -} for GPU-wide events
 * @param kind    what happened
 * @param detail  numbers for people, for example {@code latency=12.1ms}
 *
 * <p>Thread safety: immutable.
 */
public record TraceEvent(long atNanos, String gpu, String tenant, TraceKind kind, String detail) {

    public TraceEvent {
        Validate.notNull("trace.gpu", gpu);
        Validate.notNull("trace.tenant", tenant);
        Validate.notNull("trace.kind", kind);
        Validate.notNull("trace.detail", detail);
    }

    /** {@code time_s,gpu,tenant,event,detail}, time with microsecond precision. */
    public String toCsv() {
        return String.format(java.util.Locale.ROOT, "%.6f", atNanos / 1e9) + "," + gpu + "," + tenant + "," + kind + ","
                + (detail.contains(",") ? "\"" + detail + "\"" : detail);
    }

    public static String csvHeader() {
        return "time_s,gpu,tenant,event,detail";
    }
}
