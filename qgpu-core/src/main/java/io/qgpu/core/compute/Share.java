package io.qgpu.core.compute;

import io.qgpu.api.InvalidValueException;

/**
 * A tenant's compute entitlement on one GPU as fractions of GPU time: {@code request} is guaranteed
 * (when the tenant is busy), {@code limit} is the most it may use, both measured over the sliding
 * window.
 *
 * <pre>{@code
 * Share jobA = Share.of(0.4, 0.7);        // Gemini's Job A
 * Share fromClaim = Share.ofPercent(40, 70);
 * }</pre>
 *
 * @param request guaranteed fraction, 0..limit
 * @param limit   maximum fraction, (0, 1]
 *
 * <p>Thread safety: immutable.
 */
public record Share(double request, double limit) {

    public Share {
        if (!(limit > 0.0 && limit <= 1.0)) {
            throw new InvalidValueException("share.limit", limit, "must be in (0, 1]");
        }
        if (!(request >= 0.0 && request <= limit)) {
            throw new InvalidValueException("share.request", request, "must be between 0 and limit (" + limit + ")");
        }
    }

    public static Share of(double request, double limit) {
        return new Share(request, limit);
    }

    /** From percentages as a {@link io.qgpu.api.Claim} holds them. */
    public static Share ofPercent(int requestPercent, int limitPercent) {
        if (requestPercent < 0 || requestPercent > 100) {
            throw new InvalidValueException("share.requestPercent", requestPercent, "must be between 0 and 100");
        }
        if (limitPercent < 1 || limitPercent > 100) {
            throw new InvalidValueException("share.limitPercent", limitPercent, "must be between 1 and 100");
        }
        if (requestPercent > limitPercent) {
            throw new InvalidValueException("share.requestPercent", requestPercent,
                    "must be at most limitPercent (" + limitPercent + ")");
        }
        return new Share(requestPercent / 100.0, limitPercent / 100.0);
    }

    /** No guarantee, no cap. */
    public static Share unlimited() {
        return new Share(0.0, 1.0);
    }
}
