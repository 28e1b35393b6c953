package io.qgpu.api;

/** Whether a GPU may take new tenants. An unhealthy GPU takes none, and its tenants are displaced. */
public enum Health {
    HEALTHY,
    UNHEALTHY
}
