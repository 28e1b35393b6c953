package io.qgpu.api;

/**
 * One reason a target was refused, with the quantities when there are any.
 *
 * <pre>{@code
 * Reason r = Reason.shortOf(ReasonCode.INSUFFICIENT_MEMORY, "GPU-a0", 8L << 30, 2L << 30);
 * r.shortfall();   // 6 GiB
 * r.message();     // "GPU-a0: INSUFFICIENT_MEMORY requested 8 GiB, free 2 GiB (short by 6 GiB)"
 * }</pre>
 *
 * <p>{@link #message()} writes memory (GPU and host) in GiB, compute in percent, CPU in millicores and
 * counts as counts, each with its unit; the record keeps the raw numbers (bytes, percent, millicores,
 * count) for programs.
 *
 * @param code      what failed
 * @param target    node name or GPU UUID the reason is about
 * @param requested what was asked for (bytes, percent, millicores or a count); -1 when not a quantity
 * @param available what was left; -1 when not a quantity
 * @param detail    words for a human
 *
 * <p>Thread safety: immutable.
 */
public record Reason(ReasonCode code, String target, long requested, long available, String detail) {

    public Reason {
        Validate.notNull("reason.code", code);
        Validate.notNull("reason.target", target);
        Validate.notNull("reason.detail", detail);
    }

    /** A quantity shortfall. */
    public static Reason shortOf(ReasonCode code, String target, long requested, long available) {
        return new Reason(code, target, requested, available, "");
    }

    /** A reason without quantities. */
    public static Reason of(ReasonCode code, String target, String detail) {
        return new Reason(code, target, -1, -1, detail);
    }

    public boolean quantified() {
        return requested >= 0 && available >= 0;
    }

    /** How much was missing, or 0 when not a quantity. */
    public long shortfall() {
        return quantified() ? Math.max(0, requested - available) : 0;
    }

    /** One line for logs and reports, quantities with their units (GiB, percent, GPUs). */
    public String message() {
        StringBuilder sb = new StringBuilder(target).append(": ").append(code);
        if (quantified()) {
            if (code == ReasonCode.EXCLUSIVE && detail.isEmpty()) {
                // an exclusive claim on a GPU that has tenants: available is the tenants it has
                sb.append(" an exclusive claim needs a GPU without tenants; this one has ").append(available)
                        .append(available == 1 ? " tenant" : " tenants");
            } else {
                sb.append(" requested ").append(amount(requested)).append(", ").append(freeWord()).append(' ')
                        .append(amount(available));
                if (shortfall() > 0) {
                    sb.append(" (short by ").append(amount(shortfall())).append(')');
                }
            }
        }
        if (!detail.isEmpty()) {
            sb.append(' ').append(detail);
        }
        return sb.toString();
    }

    private String freeWord() {
        return switch (code) {
            case INSUFFICIENT_MEMORY, INSUFFICIENT_COMPUTE, TOO_MANY_TENANTS, INSUFFICIENT_CPU,
                 INSUFFICIENT_HOST_MEMORY -> "free";
            case EXCLUSIVE -> "device has";
            default -> "available";
        };
    }

    /** A quantity with its unit: bytes as GiB for memory codes, percent for compute, a count otherwise. */
    private String amount(long v) {
        return switch (code) {
            case INSUFFICIENT_MEMORY, EXCLUSIVE, INSUFFICIENT_HOST_MEMORY -> gib(v);
            case INSUFFICIENT_CPU -> v + " millicores";
            case INSUFFICIENT_COMPUTE -> v + "%";
            case TOO_MANY_TENANTS -> v + (v == 1 ? " tenant slot" : " tenant slots");
            case NOT_ENOUGH_GPUS, AFFINITY -> v + (v == 1 ? " GPU" : " GPUs");
            default -> Long.toString(v);
        };
    }

    /** Bytes as GiB: whole numbers as they are, others to two decimals ({@code 1.40 GiB}). */
    static String gib(long bytes) {
        if (bytes % GpuDevice.GIB == 0) {
            return bytes / GpuDevice.GIB + " GiB";
        }
        return String.format(java.util.Locale.ROOT, "%.2f GiB", bytes / (double) GpuDevice.GIB);
    }
}
