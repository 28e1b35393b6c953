package io.qgpu.api;

import java.util.Locale;

/** Where to put a slice among candidates that fit, chosen separately at node and GPU level. */
public enum PlacementPolicy {
    /** Fill the fullest candidate that still fits: raises utilization, keeps whole GPUs free. */
    BINPACK,
    /** Pick the emptiest candidate: availability, less interference. */
    SPREAD;

    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static PlacementPolicy fromName(String field, String name) {
        Validate.notNull(field, name);
        for (PlacementPolicy p : values()) {
            if (p.name().equalsIgnoreCase(name)) {
                return p;
            }
        }
        throw new InvalidValueException(field, name, "must be one of binpack, spread");
    }
}
