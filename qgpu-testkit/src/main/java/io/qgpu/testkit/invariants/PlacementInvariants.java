package io.qgpu.testkit.invariants;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.api.Validate;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.property.Describe;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * An independent oracle for the output of any scheduler: given the nodes, the granularity rules
 * and the placements that are live at one moment, it recomputes every GPU's load from scratch and
 * reports each broken {@link Invariant}. It shares no code with qgpu's ledger or admission rules,
 * so it can judge them too.
 *
 * <pre>{@code
 * List<Violation> v = PlacementInvariants.check(inventory.rules(), inventory.nodes(), livePlacements);
 * PlacementInvariants.assertHolds(inventory, livePlacements);   // AssertionError listing them
 * }</pre>
 *
 * <p>Checked: {@link Invariant#MEMORY}, {@link Invariant#COMPUTE} (per priority class),
 * {@link Invariant#TENANTS} (a MIG instance, UUID {@code MIG-...}, holds one tenant unless
 * {@code rules.shareMigInstances()}), {@link Invariant#EXCLUSIVE}, {@link Invariant#GRANULARITY},
 * {@link Invariant#AFFINITY}, {@link Invariant#ANTI_AFFINITY}, {@link Invariant#EXCLUSION},
 * {@link Invariant#SELECTORS}, {@link Invariant#RESERVED_CLASS}, {@link Invariant#UNHEALTHY} (by the
 * health the nodes carry: pass the nodes as they were when the placements were made),
 * {@link Invariant#TARGETS}, {@link Invariant#DUPLICATE_TENANT} and {@link Invariant#HOST} (CPU and host
 * memory per node, for the resources the node declares).
 *
 * <p>Thread safety: stateless.
 */
public final class PlacementInvariants {

    private PlacementInvariants() {
    }

    /** Every violation in {@code placements} over {@code nodes}, in a stable order. */
    public static List<Violation> check(GranularityRules rules, Collection<Node> nodes, Collection<Placement> placements) {
        Validate.notNull("invariants.rules", rules);
        Validate.list("invariants.nodes", nodes);
        Validate.list("invariants.placements", placements);
        List<Violation> out = new ArrayList<>();

        Map<String, Node> nodeByName = new HashMap<>();
        Map<String, GpuDevice> gpuByUuid = new HashMap<>();
        Map<String, String> nodeOfGpu = new HashMap<>();
        for (Node n : nodes) {
            nodeByName.put(n.name(), n);
            for (GpuDevice g : n.gpus()) {
                gpuByUuid.put(g.uuid(), g);
                nodeOfGpu.put(g.uuid(), n.name());
            }
        }

        Map<String, List<Held>> perGpu = new LinkedHashMap<>();
        Set<String> tenants = new HashSet<>();
        for (Placement p : placements) {
            Claim c = p.claim();
            String t = p.tenantId();
            if (!tenants.add(t)) {
                out.add(new Violation(Invariant.DUPLICATE_TENANT, t, "tenant is placed more than once"));
                continue;
            }
            checkGrid(rules, c, out);
            Node node = nodeByName.get(p.nodeName());
            if (node == null) {
                out.add(new Violation(Invariant.TARGETS, t, "placed on unknown node " + p.nodeName()));
                continue;
            }
            for (Map.Entry<String, String> want : c.selectors().nodeLabels().entrySet()) {
                String have = node.labels().get(want.getKey());
                if (!want.getValue().equals(have)) {
                    out.add(new Violation(Invariant.SELECTORS, t, "node selector " + want.getKey() + "=" + want.getValue()
                            + " but node " + node.name() + " has " + (have == null ? "no such label" : want.getKey() + "=" + have)));
                }
            }
            for (Slice s : p.slices()) {
                GpuDevice gpu = gpuByUuid.get(s.gpuUuid());
                if (gpu == null) {
                    out.add(new Violation(Invariant.TARGETS, t, "placed on unknown GPU " + s.gpuUuid()));
                    continue;
                }
                if (!Objects.requireNonNull(nodeOfGpu.get(s.gpuUuid())).equals(p.nodeName())) { // gpu is known
                    out.add(new Violation(Invariant.TARGETS, t, "GPU " + s.gpuUuid() + " is on node "
                            + nodeOfGpu.get(s.gpuUuid()) + ", not on the placement's node " + p.nodeName()));
                    continue;
                }
                checkGpuSelectors(c, gpu, out);
                if (!gpu.healthy()) {
                    out.add(new Violation(Invariant.UNHEALTHY, where(gpu, p.nodeName()), "tenant " + t
                            + " placed on this unhealthy GPU"));
                }
                if (gpu.reservedFor().isPresent() && gpu.reservedFor().get() != c.priority()) {
                    out.add(new Violation(Invariant.RESERVED_CLASS, where(gpu, p.nodeName()), "kept for "
                            + gpu.reservedFor().get().wireName() + " tenants but holds " + c.priority().wireName()
                            + " tenant " + t));
                }
                if (c.exclusive() && s.memoryBytes() != gpu.memoryBytes()) {
                    out.add(new Violation(Invariant.EXCLUSIVE, where(gpu, p.nodeName()), "exclusive tenant " + t
                            + " holds " + Describe.bytes(s.memoryBytes()) + " of its " + Describe.bytes(gpu.memoryBytes())
                            + " (an exclusive slice is the whole device)"));
                }
                perGpu.computeIfAbsent(gpu.uuid(), k -> new ArrayList<>()).add(new Held(p, s));
            }
        }

        for (Map.Entry<String, List<Held>> e : perGpu.entrySet()) {
            GpuDevice gpu = Objects.requireNonNull(gpuByUuid.get(e.getKey())); // perGpu holds known GPUs only
            checkGpu(rules, gpu, Objects.requireNonNull(nodeOfGpu.get(gpu.uuid())), e.getValue(), out);
        }
        checkAffinity(placements, out);
        HostInvariants.check(nodeByName, placements, out);
        return out;
    }

    /** {@link #check} over an inventory's rules and nodes. */
    public static List<Violation> check(Inventory inventory, Collection<Placement> placements) {
        Validate.notNull("invariants.inventory", inventory);
        return check(inventory.rules(), inventory.nodes(), placements);
    }

    /** Throws an {@link AssertionError} listing every violation; does nothing when there is none. */
    public static void assertHolds(GranularityRules rules, Collection<Node> nodes, Collection<Placement> placements) {
        Violation.assertNone("placement invariants", check(rules, nodes, placements));
    }

    /** {@link #assertHolds} over an inventory's rules and nodes. */
    public static void assertHolds(Inventory inventory, Collection<Placement> placements) {
        Violation.assertNone("placement invariants", check(inventory, placements));
    }

    private record Held(Placement placement, Slice slice) {
        String tenant() {
            return placement.tenantId();
        }

        Claim claim() {
            return placement.claim();
        }
    }

    private static void checkGrid(GranularityRules rules, Claim c, List<Violation> out) {
        String t = c.tenantId();
        if (!c.exclusive() && !c.hostOnly()) {
            long m = c.memoryPerGpuBytes();
            if (m < rules.minMemoryBytes() || m % rules.memoryUnitBytes() != 0) {
                out.add(new Violation(Invariant.GRANULARITY, t, "memory " + m + " bytes is not a multiple of "
                        + rules.memoryUnitBytes() + " of at least " + rules.minMemoryBytes() + " (" + rules.name() + " rules)"));
            }
        }
        int unit = rules.computeUnit();
        if (c.computeRequest() % unit != 0 || c.computeLimit() % unit != 0) {
            out.add(new Violation(Invariant.GRANULARITY, t, "compute " + c.computeRequest() + "/" + c.computeLimit()
                    + " is not in units of " + unit + "% (" + rules.name() + " rules)"));
        }
    }

    private static void checkGpuSelectors(Claim c, GpuDevice gpu, List<Violation> out) {
        Selectors s = c.selectors();
        String t = c.tenantId();
        if (s.excludeModels().contains(gpu.model()) || (!s.includeModels().isEmpty() && !s.includeModels().contains(gpu.model()))) {
            out.add(new Violation(Invariant.SELECTORS, t, "model " + gpu.model() + " of " + gpu.uuid()
                    + " is not selected (include " + s.includeModels() + ", exclude " + s.excludeModels() + ")"));
        }
        if (s.excludeUuids().contains(gpu.uuid()) || (!s.includeUuids().isEmpty() && !s.includeUuids().contains(gpu.uuid()))) {
            out.add(new Violation(Invariant.SELECTORS, t, "GPU " + gpu.uuid() + " is not selected (include "
                    + s.includeUuids() + ", exclude " + s.excludeUuids() + ")"));
        }
    }

    private static void checkGpu(GranularityRules rules, GpuDevice gpu, String node, List<Held> held, List<Violation> out) {
        String id = where(gpu, node);
        long memory = 0;
        int online = 0;
        int offline = 0;
        boolean exclusive = false;
        for (Held h : held) {
            memory += h.slice().memoryBytes();
            if (h.claim().priority() == PriorityClass.ONLINE) {
                online += h.slice().computeRequest();
            } else {
                offline += h.slice().computeRequest();
            }
            exclusive |= h.claim().exclusive();
        }
        if (memory > gpu.memoryBytes()) {
            out.add(new Violation(Invariant.MEMORY, id, Describe.bytes(memory) + " reserved of "
                    + Describe.bytes(gpu.memoryBytes()) + " by " + list(held, h -> Describe.bytes(h.slice().memoryBytes()))));
        }
        if (online > 100) {
            out.add(new Violation(Invariant.COMPUTE, id, "online guaranteed compute " + online + "% > 100% by "
                    + list(held.stream().filter(h -> h.claim().priority() == PriorityClass.ONLINE).toList(),
                    h -> h.slice().computeRequest() + "%")));
        }
        if (offline > 100) {
            out.add(new Violation(Invariant.COMPUTE, id, "offline guaranteed compute " + offline + "% > 100% by "
                    + list(held.stream().filter(h -> h.claim().priority() == PriorityClass.OFFLINE).toList(),
                    h -> h.slice().computeRequest() + "%")));
        }
        if (!rules.admitZeroRequestOnBookedGpu()) {
            for (PriorityClass p : PriorityClass.values()) {
                int booked = p == PriorityClass.ONLINE ? online : offline;
                List<Held> zero = held.stream().filter(h -> h.claim().priority() == p && h.slice().computeRequest() == 0).toList();
                if (booked >= 100 && !zero.isEmpty()) {
                    out.add(new Violation(Invariant.COMPUTE, id, p.wireName() + " guaranteed compute is " + booked
                            + "% booked next to " + zero.size() + " tenant(s) with request 0, which would starve "
                            + list(zero, h -> "0%")));
                }
            }
        }
        int max = maxTenants(rules, gpu);
        if (held.size() > max) {
            out.add(new Violation(Invariant.TENANTS, id, held.size() + " tenants, at most " + max
                    + " under the " + rules.name() + " rules: " + list(held, h -> "")));
        }
        // NVML names a MIG instance MIG-...; it is a whole device of its own unless the rules share instances
        if (gpu.uuid().startsWith("MIG-") && !rules.shareMigInstances() && held.size() > 1) {
            out.add(new Violation(Invariant.TENANTS, id, "MIG instance shared by " + held.size() + " tenants, at most 1"
                    + " unless the rules share MIG instances (" + rules.name() + " rules): " + list(held, h -> "")));
        }
        if (exclusive && held.size() > 1) {
            out.add(new Violation(Invariant.EXCLUSIVE, id, "held exclusively but shared by "
                    + list(held, h -> h.claim().exclusive() ? "exclusive" : "")));
        }
        Map<String, List<String>> anti = new LinkedHashMap<>();
        Set<Optional<String>> exclusions = new HashSet<>();
        for (Held h : held) {
            h.claim().locality().antiAffinity().ifPresent(l -> anti.computeIfAbsent(l, k -> new ArrayList<>()).add(h.tenant()));
            exclusions.add(h.claim().locality().exclusion());
        }
        anti.forEach((label, ts) -> {
            if (ts.size() > 1) {
                out.add(new Violation(Invariant.ANTI_AFFINITY, id, "holds " + ts.size()
                        + " tenants with anti-affinity label " + label + ": " + ts));
            }
        });
        if (exclusions.size() > 1) {
            out.add(new Violation(Invariant.EXCLUSION, id, "mixes exclusion labels: "
                    + list(held, h -> h.claim().locality().exclusion().map(l -> "excl=" + l).orElse("no label"))));
        }
    }

    private static int maxTenants(GranularityRules rules, GpuDevice gpu) {
        if (rules.memoryPerTenantSlotBytes() == 0) {
            return rules.maxTenantsPerGpu();
        }
        long bySlots = gpu.memoryBytes() / rules.memoryPerTenantSlotBytes();
        return (int) Math.max(1, Math.min(rules.maxTenantsPerGpu(), bySlots));
    }

    private static void checkAffinity(Collection<Placement> placements, List<Violation> out) {
        Map<String, Placement> first = new LinkedHashMap<>();
        Set<String> reported = new HashSet<>();
        for (Placement p : placements) {
            Optional<String> label = p.claim().locality().affinity();
            if (label.isEmpty()) {
                continue;
            }
            Placement f = first.putIfAbsent(label.get(), p);
            if (f == null || reported.contains(label.get())) {
                continue;
            }
            if (!f.nodeName().equals(p.nodeName()) || !new HashSet<>(f.gpuUuids()).equals(new HashSet<>(p.gpuUuids()))) {
                reported.add(label.get());
                out.add(new Violation(Invariant.AFFINITY, label.get(), "tenants with affinity label " + label.get()
                        + " are on different GPU sets: " + f.tenantId() + " on " + f.nodeName() + " "
                        + new TreeSet<>(f.gpuUuids()) + ", " + p.tenantId() + " on " + p.nodeName() + " "
                        + new TreeSet<>(p.gpuUuids())));
            }
        }
    }

    /** {@code node/gpuN (uuid)}. */
    private static String where(GpuDevice gpu, String node) {
        return node + "/gpu" + gpu.index() + " (" + gpu.uuid() + ")";
    }

    private static String list(List<Held> held, java.util.function.Function<Held, String> detail) {
        List<String> parts = new ArrayList<>();
        for (Held h : held) {
            String d = detail.apply(h);
            parts.add(d.isEmpty() ? h.tenant() : h.tenant() + " " + d);
        }
        return parts.toString();
    }
}
