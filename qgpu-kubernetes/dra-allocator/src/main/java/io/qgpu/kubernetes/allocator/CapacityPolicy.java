package io.qgpu.kubernetes.allocator;

import java.util.List;

/**
 * One capacity of a published device ({@code memory} in bytes, {@code cores} in percent, {@code tenants}) with
 * the {@code requestPolicy} that says which amounts an allocation may consume of it: a request is rounded up to
 * the smallest valid amount at or above it ({@link #round}); a request that names no amount consumes
 * {@link #defaultValue()}.
 *
 * <p>Forms, as {@code resource.k8s.io/v1} has them: no policy (any amount up to the value; the default is the whole
 * value), {@code validValues} (one of them), or {@code validRange} ({@code min}, optional {@code max} (the value when
 * absent), optional {@code step} (any amount from min when absent)).
 *
 * @param value        the device's capacity
 * @param defaultValue what a request without an amount consumes
 * @param validValues  the amounts allowed, ascending (empty: the range applies)
 * @param min          the range's minimum (0 without a policy)
 * @param max          the range's maximum (the value when not given)
 * @param step         the range's step (0: any amount from {@code min})
 *
 * <p>Thread safety: immutable.
 */
public record CapacityPolicy(long value, long defaultValue, List<Long> validValues, long min, long max, long step) {
    public CapacityPolicy {
        validValues = List.copyOf(validValues);
    }

    /** A capacity without a request policy: any amount up to {@code value}, the whole value by default. */
    public static CapacityPolicy unrestricted(long value) {
        return new CapacityPolicy(value, value, List.of(), 0, value, 0);
    }

    /**
     * The amount a request of {@code requested} consumes: the smallest valid amount at or above it, or -1 when
     * there is none within the capacity.
     */
    public long round(long requested) {
        if (!validValues.isEmpty()) {
            for (long v : validValues) {
                if (v >= requested) {
                    return v <= value ? v : -1;
                }
            }
            return -1;
        }
        long r = Math.max(requested, min);
        if (step > 0 && r > min) {
            long over = r - min;
            long steps = over / step + (over % step == 0 ? 0 : 1);
            if (steps > (Long.MAX_VALUE - min) / step) {
                return -1;
            }
            r = min + steps * step;
        }
        return r <= Math.min(max, value) ? r : -1;
    }
}
