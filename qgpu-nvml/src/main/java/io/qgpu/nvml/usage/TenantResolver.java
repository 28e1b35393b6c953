package io.qgpu.nvml.usage;

import java.util.Map;
import java.util.Optional;

/**
 * Maps a process id to the tenant it belongs to. The caller knows how: a map kept by a launcher, the
 * process's cgroup ({@code /proc/<pid>/cgroup}) for containers, an environment variable...
 *
 * <pre>{@code
 * TenantResolver byMap = TenantResolver.of(Map.of(4242L, "job-a", 4243L, "job-b"));
 * TenantResolver byCgroup = pid -> readPodUid(pid);   // your own lookup
 * }</pre>
 *
 * <p>Implementations must be thread-safe and quick; they are called once per process per sample.
 */
@FunctionalInterface
public interface TenantResolver {

    /** The tenant of {@code pid}, or empty when the process belongs to none known. */
    Optional<String> tenantOf(long pid);

    /** A resolver over a fixed map (copied). */
    static TenantResolver of(Map<Long, String> tenants) {
        Map<Long, String> copy = Map.copyOf(tenants);
        return pid -> Optional.ofNullable(copy.get(pid));
    }

    /** A resolver that knows no tenant. */
    static TenantResolver none() {
        return pid -> Optional.empty();
    }
}
