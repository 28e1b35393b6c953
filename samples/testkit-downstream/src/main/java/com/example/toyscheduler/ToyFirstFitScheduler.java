package com.example.toyscheduler;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A toy first-fit GPU scheduler, the kind a team writes before reaching for a real engine: the
 * first node whose labels match, and on it the first GPUs (by index) with room. It keeps memory,
 * guaranteed compute and tenants per GPU within bounds, honours selectors, health, exclusive claims
 * and the granularity rules, and supports multi-GPU claims.
 *
 * <p>What it does not do, and therefore declares off in its contract test: priority classes (it
 * pools guaranteed compute of all tenants instead of admitting it per class), locality labels, and
 * topology (it takes GPUs in index order).
 *
 * <pre>{@code
 * ToyFirstFitScheduler s = new ToyFirstFitScheduler(GranularityRules.ofDefaults(), nodes);
 * PlacementResult r = s.place(Claim.builder("job-1").memoryGiB(4).build());
 * s.release("job-1");
 * }</pre>
 *
 * <p>Thread safety: not thread-safe; callers serialise access.
 */
public final class ToyFirstFitScheduler {

    private record Use(String tenant, long memory, int compute, boolean exclusive) {
    }

    private final GranularityRules rules;
    private final List<Node> nodes;
    private final Map<String, List<Use>> uses = new HashMap<>();
    private final Map<String, Placement> placements = new LinkedHashMap<>();

    public ToyFirstFitScheduler(GranularityRules rules, List<Node> nodes) {
        this.rules = rules;
        this.nodes = List.copyOf(nodes);
        for (Node n : nodes) {
            for (GpuDevice g : n.gpus()) {
                uses.put(g.uuid(), new ArrayList<>());
            }
        }
    }

    public PlacementResult place(Claim claim) {
        String t = claim.tenantId();
        try {
            rules.validate(claim);
        } catch (InvalidValueException e) {
            return refuse(t, Reason.of(ReasonCode.GRANULARITY, t, e.getMessage()));
        }
        if (placements.containsKey(t)) {
            return refuse(t, Reason.of(ReasonCode.DUPLICATE_TENANT, t, "already placed"));
        }
        for (Node node : nodes) {
            if (!labelsMatch(claim.selectors(), node)) {
                continue;
            }
            List<GpuDevice> chosen = new ArrayList<>();
            for (GpuDevice g : node.gpus()) {
                if (chosen.size() < claim.gpuCount() && fits(claim, g)) {
                    chosen.add(g);
                }
            }
            if (chosen.size() == claim.gpuCount()) {
                List<Slice> slices = new ArrayList<>();
                for (GpuDevice g : chosen) {
                    long memory = claim.exclusive() ? g.memoryBytes() : claim.memoryPerGpuBytes();
                    slices.add(new Slice(g.uuid(), memory, claim.computeRequest(), claim.computeLimit()));
                    uses.get(g.uuid()).add(new Use(t, memory, claim.computeRequest(), claim.exclusive()));
                }
                Placement p = new Placement(claim, node.name(), slices);
                placements.put(t, p);
                return new PlacementResult.Placed(p);
            }
        }
        return refuse(t, Reason.of(ReasonCode.NOT_ENOUGH_GPUS, t, "no node has " + claim.gpuCount() + " GPUs with room"));
    }

    /** Releases the tenant; unknown tenants are ignored. */
    public void release(String tenantId) {
        Placement p = placements.remove(tenantId);
        if (p != null) {
            for (Slice s : p.slices()) {
                uses.get(s.gpuUuid()).removeIf(u -> u.tenant().equals(tenantId));
            }
        }
    }

    private boolean fits(Claim c, GpuDevice g) {
        List<Use> u = uses.get(g.uuid());
        Selectors s = c.selectors();
        if (!g.healthy()) {
            return false;
        }
        if (s.excludeModels().contains(g.model()) || (!s.includeModels().isEmpty() && !s.includeModels().contains(g.model()))) {
            return false;
        }
        if (s.excludeUuids().contains(g.uuid()) || (!s.includeUuids().isEmpty() && !s.includeUuids().contains(g.uuid()))) {
            return false;
        }
        if (u.stream().anyMatch(Use::exclusive) || (c.exclusive() && !u.isEmpty())) {
            return false;
        }
        long used = u.stream().mapToLong(Use::memory).sum();
        long need = c.exclusive() ? g.memoryBytes() : c.memoryPerGpuBytes();
        int compute = u.stream().mapToInt(Use::compute).sum();
        // a tenant with request 0 never shares a GPU whose compute is fully booked (it would starve)
        boolean starves = !rules.admitZeroRequestOnBookedGpu() && compute + c.computeRequest() >= 100
                && (c.computeRequest() == 0 || (!c.exclusive() && u.stream().anyMatch(x -> x.compute() == 0)));
        return !starves && used + need <= g.memoryBytes()
                && compute + c.computeRequest() <= 100
                && u.size() + 1 <= rules.maxTenants(g);
    }

    private static boolean labelsMatch(Selectors s, Node n) {
        return s.nodeLabels().entrySet().stream().allMatch(e -> e.getValue().equals(n.labels().get(e.getKey())));
    }

    private static PlacementResult refuse(String tenant, Reason why) {
        return new PlacementResult.Unschedulable(tenant, Map.of(), List.of(why));
    }
}
