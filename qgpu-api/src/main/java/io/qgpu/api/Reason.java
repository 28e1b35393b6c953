package io.qgpu.api;

/**
 * One reason a target was refused, with the quantities when there are any.
 *
 * <pre>{@code
 * Reason r = Reason.shortOf(ReasonCode.INSUFFICIENT_MEMORY, "GPU-a0", 8L << 30, 2L << 30);
 * r.shortfall();   // 6 GiB
 * r.message();     // "GPU-a0: INSUFFICIENT_MEMORY requested 8589934592, available 2147483648 (short by 6442450944)"
 * }</pre>
 *
 * @param code      what failed
 * @param target    node name or GPU UUID the reason is about
 * @param requested what was asked for (bytes, percent or a count); -1 when not a quantity
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

    /** One line for logs and reports. */
    public String message() {
        StringBuilder sb = new StringBuilder(target).append(": ").append(code);
        if (quantified()) {
            sb.append(" requested ").append(requested).append(", available ").append(available)
                    .append(" (short by ").append(shortfall()).append(')');
        }
        if (!detail.isEmpty()) {
            sb.append(' ').append(detail);
        }
        return sb.toString();
    }
}
