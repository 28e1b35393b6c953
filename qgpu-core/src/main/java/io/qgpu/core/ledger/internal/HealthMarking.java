package io.qgpu.core.ledger.internal;

import io.qgpu.api.GpuState;
import io.qgpu.api.Health;
import io.qgpu.api.Holding;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * GPU health on one structure: marking a GPU healthy or not, and the tenants displaced by an
 * unhealthy GPU (they stay reserved until released).
 *
 * <p>Thread safety: stateless; safe under the ledger's read lock from any number of threads.
 */
public final class HealthMarking {

    private static final Logger LOG = LoggerFactory.getLogger("io.qgpu.core.ledger.Ledger");   // the public facade's logger: users see no internal class name, and this class does not name the ledger back

    private HealthMarking() {
    }

    /**
     * Sets the GPU's health.
     *
     * @return the tenants on the GPU when it is now unhealthy, else empty
     * @throws InvalidValueException if the GPU is unknown
     */
    public static List<Placement> set(Structure s, String gpuUuid, Health health) {
        NodeSlot slot = s.slotOfGpu(gpuUuid);
        if (slot == null) {
            throw new InvalidValueException("gpuUuid", gpuUuid, "no such GPU in the ledger");
        }
        NodeState next = slot.update(n -> withHealth(n, gpuUuid, health));
        s.ring().changed(slot.position());
        if (health == Health.HEALTHY) {
            LOG.info("GPU {} on {} is healthy", gpuUuid, slot.name());
            return List.of();
        }
        List<Placement> displaced = new ArrayList<>();
        for (Holding h : next.gpu(next.node().positionOf(gpuUuid)).holdings()) {
            s.tenants().committed(h.tenantId()).ifPresent(displaced::add);
        }
        LOG.warn("GPU {} on {} is unhealthy; {} tenant(s) displaced", gpuUuid, slot.name(), displaced.size());
        return displaced;
    }

    /** Tenants holding a slice on an unhealthy GPU, in tenant-id order. */
    public static List<Placement> displaced(Structure s) {
        Map<String, Placement> out = new TreeMap<>();
        for (int i = 0; i < s.size(); i++) {
            for (GpuState g : s.slotAt(i).get().gpus()) {
                if (!g.device().healthy()) {
                    for (Holding h : g.holdings()) {
                        Optional<Placement> p = s.tenants().committed(h.tenantId());
                        p.ifPresent(x -> out.put(h.tenantId(), x));
                    }
                }
            }
        }
        return List.copyOf(out.values());
    }

    /** The node state with the GPU's health set (the same state if it already had it). */
    static NodeState withHealth(NodeState n, String uuid, Health health) {
        int pos = n.node().positionOf(uuid);
        GpuState g = n.gpu(pos);
        if (g.device().health() == health) {
            return n;
        }
        Node node = n.node().withGpuHealth(uuid, health);
        List<GpuState> gpus = new ArrayList<>(n.gpus());
        gpus.set(pos, g.withDevice(node.gpus().get(pos)));
        return new NodeState(node, gpus, n.host());
    }
}
