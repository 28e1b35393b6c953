package io.qgpu.testkit.contract;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

/**
 * A self-contained scheduler with its own book-keeping in which each rule can be broken on purpose
 * ({@link Flaw}). Without flaws it is correct and passes the contract suite; with one flaw it is the
 * deliberately broken scheduler each rule must reject (the suite's negative self-tests).
 *
 * <p>Its own code, not the ledger's: the ledger cannot be made to break its rules.
 */
final class ConfigurableScheduler implements SchedulerUnderTest {

    /** One deliberate bug each. */
    enum Flaw {
        REFUSES_EVERYTHING,
        ALTERS_CLAIM,
        IGNORES_MEMORY,
        IGNORES_COMPUTE,
        POOLS_COMPUTE_ACROSS_CLASSES,
        IGNORES_MAX_TENANTS,
        USES_DEFAULT_RULES,
        IGNORES_EXCLUSIVITY,
        ACCEPTS_OFF_GRID,
        USES_UNHEALTHY_GPUS,
        LEAKS_MEMORY_ON_RELEASE,
        RELEASE_THROWS_ON_UNKNOWN,
        ALLOWS_DUPLICATE_TENANT,
        CHARGES_REFUSED_CLAIMS,
        NON_DETERMINISTIC,
        REFUSES_LARGE_CLAIMS,
        SPANS_NODES,
        LEAKS_PARTIAL_MULTI_GPU,
        IGNORES_MODEL_SELECTORS,
        IGNORES_UUID_SELECTORS,
        IGNORES_NODE_LABELS,
        IGNORES_RESERVED_CLASS,
        IGNORES_AFFINITY,
        IGNORES_ANTI_AFFINITY,
        IGNORES_EXCLUSION,
        IGNORES_TOPOLOGY,
        IGNORES_HOST_RESOURCES
    }

    private record Held(String tenant, long memory, int request, PriorityClass priority, boolean exclusive,
                        Locality locality) {
        static Held phantom(String why, long memory) {
            return new Held("phantom:" + why, memory, 0, PriorityClass.OFFLINE, false, Locality.none());
        }
    }

    private final Set<Flaw> flaws;
    private final GranularityRules rules;
    private final List<Node> nodes;
    private final Map<String, List<Held>> held = new HashMap<>();
    private final Map<String, Placement> tenants = new LinkedHashMap<>();
    /** CPU millicores and host memory bytes reserved per node. */
    private final Map<String, long[]> hostUsed = new HashMap<>();
    private final Random random = new Random();   // unseeded on purpose: only NON_DETERMINISTIC uses it

    ConfigurableScheduler(GranularityRules rules, List<Node> nodes, Set<Flaw> flaws) {
        this.flaws = flaws.isEmpty() ? EnumSet.noneOf(Flaw.class) : EnumSet.copyOf(flaws);
        this.rules = has(Flaw.USES_DEFAULT_RULES) ? GranularityRules.ofDefaults() : rules;
        this.nodes = List.copyOf(nodes);
        for (Node n : nodes) {
            for (GpuDevice g : n.gpus()) {
                held.put(g.uuid(), new ArrayList<>());
            }
        }
    }

    private boolean has(Flaw f) {
        return flaws.contains(f);
    }

    @Override
    public PlacementResult place(Claim claim) {
        String t = claim.tenantId();
        if (has(Flaw.REFUSES_EVERYTHING)) {
            return refuse(claim, "refuses everything");
        }
        if (!has(Flaw.ACCEPTS_OFF_GRID) && !onGrid(claim)) {
            return refuse(claim, "off the grid");
        }
        if (has(Flaw.REFUSES_LARGE_CLAIMS) && !claim.exclusive() && claim.memoryPerGpuBytes() > 4 * GpuDevice.GIB) {
            return refuse(claim, "too large for this scheduler");
        }
        if (!has(Flaw.ALLOWS_DUPLICATE_TENANT) && tenants.containsKey(t)) {
            return refuse(claim, "duplicate tenant");
        }
        Optional<Placement> group = has(Flaw.IGNORES_AFFINITY) ? Optional.empty()
                : claim.locality().affinity().flatMap(this::affinityGroup);
        List<GpuDevice> spanning = new ArrayList<>();
        for (Node node : nodes) {
            if (!has(Flaw.IGNORES_NODE_LABELS) && !labelsMatch(claim.selectors(), node)) {
                continue;
            }
            if (!has(Flaw.IGNORES_HOST_RESOURCES) && !hostFits(claim, node)) {
                continue;
            }
            if (claim.hostOnly()) {
                return commit(claim, node.name(), List.of());
            }
            if (group.isPresent() && (!group.get().nodeName().equals(node.name())
                    || group.get().slices().size() != claim.gpuCount())) {
                continue;
            }
            List<Integer> usable = new ArrayList<>();
            for (int i = 0; i < node.gpus().size(); i++) {
                GpuDevice g = node.gpus().get(i);
                if (group.isPresent() && !group.get().gpuUuids().contains(g.uuid())) {
                    continue;
                }
                if (usable(claim, g)) {
                    usable.add(i);
                }
            }
            for (int i : usable) {
                spanning.add(node.gpus().get(i));
            }
            int k = claim.gpuCount();
            if (usable.size() < k) {
                if (has(Flaw.LEAKS_PARTIAL_MULTI_GPU)) {
                    for (int i : usable) {
                        held.get(node.gpus().get(i).uuid()).add(Held.phantom(t, claim.memoryPerGpuBytes()));
                    }
                }
                continue;
            }
            List<Integer> set = choose(node, usable, k);
            return commit(claim, node.name(), set.stream().map(i -> node.gpus().get(i)).toList());
        }
        if (has(Flaw.SPANS_NODES) && spanning.size() >= claim.gpuCount()) {
            List<GpuDevice> gpus = spanning.subList(0, claim.gpuCount());
            return commit(claim, nodeOf(gpus.get(0)), gpus);
        }
        if (has(Flaw.CHARGES_REFUSED_CLAIMS)) {
            for (Node n : nodes) {
                for (GpuDevice g : n.gpus()) {
                    if (g.healthy()) {
                        held.get(g.uuid()).add(Held.phantom(t, claim.exclusive() ? g.memoryBytes() : claim.memoryPerGpuBytes()));
                        return refuse(claim, "no node can take it");
                    }
                }
            }
        }
        return refuse(claim, "no node can take it");
    }

    private List<Integer> choose(Node node, List<Integer> usable, int k) {
        if (has(Flaw.NON_DETERMINISTIC)) {
            List<Integer> shuffled = new ArrayList<>(usable);
            Collections.shuffle(shuffled, random);
            return shuffled.subList(0, k);
        }
        if (has(Flaw.IGNORES_TOPOLOGY) && k > 1) {
            return usable.subList(0, k);
        }
        return SetRanking.rank(node, usable, k, pos -> free(node.gpus().get(pos))).get(0);
    }

    private PlacementResult commit(Claim claim, String nodeName, List<GpuDevice> gpus) {
        Claim answered = claim;
        if (has(Flaw.ALTERS_CLAIM) && !claim.exclusive() && claim.computeLimit() < 100) {
            answered = claim.toBuilder().compute(claim.computeRequest(), 100).build();
        }
        List<Slice> slices = new ArrayList<>();
        for (GpuDevice g : gpus) {
            long mem = claim.exclusive() ? g.memoryBytes() : claim.memoryPerGpuBytes();
            slices.add(new Slice(g.uuid(), mem, answered.computeRequest(), answered.computeLimit()));
            held.get(g.uuid()).add(new Held(claim.tenantId(), mem, claim.computeRequest(), claim.priority(),
                    claim.exclusive(), claim.locality()));
        }
        Placement p = new Placement(answered, nodeName, slices);
        tenants.put(claim.tenantId(), p);
        long[] used = hostUsed.computeIfAbsent(nodeName, k -> new long[2]);
        used[0] += claim.host().cpuMillis();
        used[1] += claim.host().memoryBytes();
        return new PlacementResult.Placed(p);
    }

    @Override
    public void release(String tenantId) {
        Placement p = tenants.remove(tenantId);
        if (p == null) {
            if (has(Flaw.RELEASE_THROWS_ON_UNKNOWN)) {
                throw new IllegalArgumentException("unknown tenant " + tenantId);
            }
            return;
        }
        long[] used = hostUsed.get(p.nodeName());
        used[0] -= p.claim().host().cpuMillis();
        used[1] -= p.claim().host().memoryBytes();
        for (Slice s : p.slices()) {
            List<Held> list = held.get(s.gpuUuid());
            list.removeIf(h -> h.tenant().equals(tenantId));
            if (has(Flaw.LEAKS_MEMORY_ON_RELEASE)) {
                list.add(Held.phantom(tenantId, s.memoryBytes()));
            }
        }
    }

    // ---------------------------------------------------------------- checks, each with its flaw

    private boolean usable(Claim c, GpuDevice g) {
        List<Held> h = held.get(g.uuid());
        if (!has(Flaw.USES_UNHEALTHY_GPUS) && !g.healthy()) {
            return false;
        }
        if (!has(Flaw.IGNORES_RESERVED_CLASS) && g.reservedFor().isPresent() && g.reservedFor().get() != c.priority()) {
            return false;
        }
        Selectors s = c.selectors();
        if (!has(Flaw.IGNORES_MODEL_SELECTORS) && (s.excludeModels().contains(g.model())
                || (!s.includeModels().isEmpty() && !s.includeModels().contains(g.model())))) {
            return false;
        }
        if (!has(Flaw.IGNORES_UUID_SELECTORS) && (s.excludeUuids().contains(g.uuid())
                || (!s.includeUuids().isEmpty() && !s.includeUuids().contains(g.uuid())))) {
            return false;
        }
        if (!has(Flaw.IGNORES_EXCLUSIVITY)) {
            if (h.stream().anyMatch(Held::exclusive) || (c.exclusive() && !h.isEmpty())) {
                return false;
            }
        }
        boolean skipMemory = has(Flaw.IGNORES_MEMORY) || (c.exclusive() && has(Flaw.IGNORES_EXCLUSIVITY));
        long need = c.exclusive() ? g.memoryBytes() : c.memoryPerGpuBytes();
        if (!skipMemory && need > free(g)) {
            return false;
        }
        if (!has(Flaw.IGNORES_COMPUTE)) {
            int sum = h.stream().filter(x -> has(Flaw.POOLS_COMPUTE_ACROSS_CLASSES) || x.priority() == c.priority())
                    .mapToInt(Held::request).sum();
            if (sum + c.computeRequest() > 100) {
                return false;
            }
            // a zero-request tenant never ends up on a GPU whose class is fully booked (it would starve)
            boolean zeroHere = h.stream().anyMatch(x -> x.priority() == c.priority() && x.request() == 0);
            if (!rules.admitZeroRequestOnBookedGpu() && sum + c.computeRequest() >= 100
                    && (c.computeRequest() == 0 || (zeroHere && !c.exclusive()))) {
                return false;
            }
        }
        if (!has(Flaw.IGNORES_MAX_TENANTS) && h.size() + 1 > rules.maxTenants(g)) {
            return false;
        }
        if (!has(Flaw.IGNORES_ANTI_AFFINITY) && c.locality().antiAffinity().isPresent()
                && h.stream().anyMatch(x -> x.locality().antiAffinity().equals(c.locality().antiAffinity()))) {
            return false;
        }
        if (!has(Flaw.IGNORES_EXCLUSION) && h.stream().filter(x -> !x.tenant().startsWith("phantom:"))
                .anyMatch(x -> !x.locality().exclusion().equals(c.locality().exclusion()))) {
            return false;
        }
        return true;
    }

    private boolean hostFits(Claim c, Node n) {
        long[] used = hostUsed.getOrDefault(n.name(), new long[2]);
        return n.host().cpuMillis().orElse(Long.MAX_VALUE) - used[0] >= c.host().cpuMillis()
                && n.host().memoryBytes().orElse(Long.MAX_VALUE) - used[1] >= c.host().memoryBytes();
    }

    private long free(GpuDevice g) {
        return g.memoryBytes() - held.get(g.uuid()).stream().mapToLong(Held::memory).sum();
    }

    private boolean onGrid(Claim c) {
        if (!c.exclusive() && !c.hostOnly() && (c.memoryPerGpuBytes() < rules.minMemoryBytes()
                || c.memoryPerGpuBytes() % rules.memoryUnitBytes() != 0)) {
            return false;
        }
        return c.computeRequest() % rules.computeUnit() == 0 && c.computeLimit() % rules.computeUnit() == 0;
    }

    private static boolean labelsMatch(Selectors s, Node n) {
        return s.nodeLabels().entrySet().stream().allMatch(e -> e.getValue().equals(n.labels().get(e.getKey())));
    }

    private Optional<Placement> affinityGroup(String label) {
        return tenants.values().stream().filter(p -> p.claim().locality().affinity().filter(label::equals).isPresent())
                .findFirst();
    }

    private String nodeOf(GpuDevice g) {
        for (Node n : nodes) {
            if (n.gpu(g.uuid()).isPresent()) {
                return n.name();
            }
        }
        throw new IllegalStateException(g.uuid());
    }

    private static PlacementResult refuse(Claim c, String why) {
        return new PlacementResult.Unschedulable(c.tenantId(), Map.of(),
                List.of(Reason.of(ReasonCode.NOT_ENOUGH_GPUS, c.tenantId(), why)));
    }
}
