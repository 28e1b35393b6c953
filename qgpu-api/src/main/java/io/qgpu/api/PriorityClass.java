package io.qgpu.api;

import java.util.Locale;

/**
 * The two priority classes of online/offline hybrid deployment. Guaranteed compute is admitted
 * per class (each up to 100% of a GPU); online work preempts offline work on the same GPU.
 */
public enum PriorityClass {
    /** Latency-sensitive work (inference, search): preempts offline work within the configured bound. */
    ONLINE,
    /** Throughput work (training, preprocessing): uses what online work leaves idle. */
    OFFLINE;

    /** {@link #wireName()}, made once (reasons name the class for every refused node). */
    private final String wire = name().toLowerCase(Locale.ROOT);

    /** Lower-case wire name, {@code online} or {@code offline}. */
    public String wireName() {
        return wire;
    }

    /** Parses {@code online}/{@code offline} in any case. */
    public static PriorityClass fromName(String field, String name) {
        Validate.notNull(field, name);
        for (PriorityClass p : values()) {
            if (p.name().equalsIgnoreCase(name)) {
                return p;
            }
        }
        throw new InvalidValueException(field, name, "must be one of online, offline");
    }
}
