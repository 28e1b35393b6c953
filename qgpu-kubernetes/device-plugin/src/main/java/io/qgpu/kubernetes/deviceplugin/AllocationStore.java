package io.qgpu.kubernetes.deviceplugin;

import java.util.List;
import java.util.Optional;

/**
 * Where the pool keeps its allocations across restarts; {@link StateFile} is the one the plugin uses.
 *
 * <p>Implementations need not be thread-safe: the pool calls them under its lock.
 */
public interface AllocationStore {

    /** Replaces what is kept with these allocations; throws if they could not be kept. */
    void save(String node, List<Allocation> allocations);

    /** What was kept for this node; empty when nothing was ever saved. */
    Optional<List<Allocation>> load(String node);
}
