package io.qgpu.core.compute;

/**
 * How a {@link TokenScheduler} keeps a tenant under its limit.
 *
 * <pre>{@code
 * TokenSchedulerConfig gemini = TokenSchedulerConfig.ofDefaults();                       // GEMINI
 * TokenSchedulerConfig strict = TokenSchedulerConfig.custom().limitEnforcement(LimitEnforcement.STRICT).build();
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum LimitEnforcement {
    /**
     * Gemini's rule: a tenant is eligible while its usage is below its limit, and then gets a whole
     * quota. Usage in one window may exceed the limit by up to one grant.
     */
    GEMINI,
    /**
     * A grant is also cut to the tenant's headroom ({@code limit x window - usage}), and a tenant is
     * eligible only while that headroom is at least the minimum quota (or its whole limit, if smaller).
     * Usage then never exceeds the limit in any window, provided the holder stops when its grant
     * expires. The fixed-share and elastic policy engines use this.
     */
    STRICT
}
