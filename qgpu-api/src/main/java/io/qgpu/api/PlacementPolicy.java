package io.qgpu.api;

import java.util.Locale;

/** Where to put a slice among candidates that fit, chosen separately at node and GPU level. */
public enum PlacementPolicy {
    /** Fill the fullest candidate that still fits: raises utilization, keeps whole GPUs free. */
    BINPACK,
    /** Pick the emptiest candidate: availability, less interference. */
    SPREAD,
    /**
     * Fragmentation-aware: among the candidates, prefer the placement that leaves the least GPU
     * capacity unusable for the requests expected next (a sliding sample of recent requests, or a
     * distribution the caller provides); load as binpack breaks ties. Turned on by the node-level
     * policy; at GPU level it ranks like binpack. See the placement engine's documentation.
     */
    FRAGMENTATION;

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
        throw new InvalidValueException(field, name, "must be one of binpack, spread, fragmentation");
    }
}
