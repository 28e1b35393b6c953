package io.qgpu.core.ledger.internal;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.ledger.LedgerStateException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One structure of the ledger: its rules, its nodes by position, name and GPU, the tenant table,
 * the affinity groups and the change ring. Nodes change in place (by compare-and-set on their
 * slots); adding or removing a node makes a new structure, with new slots, a new change ring and a
 * higher epoch, that shares the tenant table and the affinity groups.
 *
 * <p>Thread safety: the lookups are immutable after construction; the slots, the tenant table and
 * the affinity groups are thread-safe. {@link #withNode} and {@link #withoutNode} read every slot
 * and must run while no change can (under the ledger's write lock).
 */
public final class Structure {
    private static final AtomicLong EPOCHS = new AtomicLong();

    private final long epoch = EPOCHS.incrementAndGet();
    private final GranularityRules rules;
    private final NodeSlot[] slots;
    private final Map<String, NodeSlot> byName;
    private final Map<String, NodeSlot> byGpu;
    private final TenantTable tenants;
    private final ConcurrentHashMap<String, AffinityGroup> affinity;
    private final ChangeRing ring;

    Structure(GranularityRules rules, List<NodeState> states, TenantTable tenants,
              ConcurrentHashMap<String, AffinityGroup> affinity) {
        this.rules = rules;
        this.slots = new NodeSlot[states.size()];
        Map<String, NodeSlot> names = new HashMap<>();
        Map<String, NodeSlot> gpus = new HashMap<>();
        for (int i = 0; i < slots.length; i++) {
            NodeState n = states.get(i);
            slots[i] = new NodeSlot(n.name(), n, i);
            names.put(n.name(), slots[i]);
            for (GpuDevice g : n.node().gpus()) {
                gpus.put(g.uuid(), slots[i]);
            }
        }
        this.byName = names;
        this.byGpu = gpus;
        this.tenants = tenants;
        this.affinity = affinity;
        this.ring = new ChangeRing(slots.length);
    }

    /** Identifies this structure; a later structure has a higher epoch. */
    public long epoch() {
        return epoch;
    }

    public GranularityRules rules() {
        return rules;
    }

    /** Number of nodes. */
    public int size() {
        return slots.length;
    }

    /** The slot at {@code position}, {@code 0 <= position < size()}. */
    public NodeSlot slotAt(int position) {
        return slots[position];
    }

    /** The node's slot, or {@code null}. */
    public NodeSlot slot(String nodeName) {
        return byName.get(nodeName);
    }

    /** The slot of the node holding the GPU, or {@code null}. */
    public NodeSlot slotOfGpu(String gpuUuid) {
        return byGpu.get(gpuUuid);
    }

    public TenantTable tenants() {
        return tenants;
    }

    ConcurrentHashMap<String, AffinityGroup> affinity() {
        return affinity;
    }

    public ChangeRing ring() {
        return ring;
    }

    /** The nodes' current states, in position order (each read atomically). */
    public List<NodeState> nodeStates() {
        List<NodeState> out = new ArrayList<>(slots.length);
        for (NodeSlot s : slots) {
            out.add(s.get());
        }
        return out;
    }

    /** The nodes as they are now (with their GPUs' health), in position order. */
    public List<Node> nodes() {
        List<Node> out = new ArrayList<>(slots.length);
        for (NodeSlot s : slots) {
            out.add(s.get().node());
        }
        return out;
    }

    /**
     * This structure plus an empty node at the end.
     *
     * @throws LedgerStateException if the node's name or one of its GPUs is already known
     */
    public Structure withNode(Node node) {
        List<Reason> reasons = new ArrayList<>();
        if (byName.containsKey(node.name())) {
            reasons.add(Reason.of(ReasonCode.UNKNOWN_TARGET, node.name(), "node already in the ledger"));
        }
        for (GpuDevice g : node.gpus()) {
            NodeSlot other = byGpu.get(g.uuid());
            if (other != null) {
                reasons.add(Reason.of(ReasonCode.UNKNOWN_TARGET, g.uuid(), "GPU already in the ledger on " + other.name()));
            }
        }
        if (!reasons.isEmpty()) {
            throw new LedgerStateException("cannot add node " + node.name(), reasons);
        }
        List<NodeState> states = nodeStates();
        states.add(NodeState.empty(node));
        return new Structure(rules, states, tenants, affinity);
    }

    /** A structure without a node, and the reservations that were on it. */
    public record Removal(Structure next, List<Placement> displaced) {
    }

    /** This structure without the named node (this one if unknown); its reservations are dropped. */
    public Removal withoutNode(String name) {
        NodeSlot slot = byName.get(name);
        if (slot == null) {
            return new Removal(this, List.of());
        }
        List<Placement> displaced = new ArrayList<>();
        for (Placement p : tenants.committed().values()) {
            if (p.nodeName().equals(name)) {
                tenants.forget(p.tenantId());
                p.claim().locality().affinity().ifPresent(l -> affinity.computeIfPresent(l, (k, g) -> g.minusOne()));
                displaced.add(p);
            }
        }
        List<NodeState> states = nodeStates();
        states.remove(slot.position());
        return new Removal(new Structure(rules, states, tenants, affinity), displaced);
    }
}
