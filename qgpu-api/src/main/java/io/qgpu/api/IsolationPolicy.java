package io.qgpu.api;

/**
 * How compute is divided between the tenants of one GPU (qGPU's three policies and Gemini's
 * elastic request/limit form).
 */
public enum IsolationPolicy {
    /** No caps: N busy tenants each get 1/N. The default. */
    BEST_EFFORT("best-effort"),
    /** Each tenant gets its quota and never more, even when the GPU is idle. */
    FIXED_SHARE("fixed-share"),
    /** Each tenant is guaranteed its quota and may use idle capacity above it. */
    BURST_SHARE("burst-share"),
    /** Per tenant: {@code request} guaranteed, {@code limit} maximum (Gemini). */
    ELASTIC("elastic");

    private final String wireName;

    IsolationPolicy(String wireName) {
        this.wireName = wireName;
    }

    /** Wire name used in JSON and on the command line, for example {@code burst-share}. */
    public String wireName() {
        return wireName;
    }

    /** Parses a wire name ({@code best-effort}) or an enum name ({@code BEST_EFFORT}). */
    public static IsolationPolicy fromName(String field, String name) {
        Validate.notNull(field, name);
        for (IsolationPolicy p : values()) {
            if (p.wireName.equalsIgnoreCase(name) || p.name().equalsIgnoreCase(name)) {
                return p;
            }
        }
        throw new InvalidValueException(field, name, "must be one of best-effort, fixed-share, burst-share, elastic");
    }
}
