package io.qgpu.kubernetes.deviceplugin;

import io.qgpu.api.Claim;
import io.qgpu.api.Health;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Selectors;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Answers {@code GetPreferredAllocation} for one container: which of the available virtual ids the
 * kubelet should pick. Ids are grouped by their home GPU.
 * <ul>
 *   <li>Nothing must be included and at least N GPUs have an available id: the placement engine
 *       places a slot-sized claim for N GPUs among them (its set scoring: least loaded, best links)
 *       and the placement is taken back at once; one id of each chosen GPU is returned.</li>
 *   <li>Nothing must be included and fewer GPUs than N (or the engine finds no such set): the ids are
 *       replicas of one request; the engine places one slot-sized replica per id as one gang spread
 *       over the GPUs with available ids ({@link Replicas}: distinct GPUs first, then stacked evenly,
 *       4 ids on 2 GPUs 2 + 2), taken back at once, and each replica's GPU gets one of its ids.</li>
 *   <li>Some ids must be included (or the replicas do not fit either): around them, greedily, the GPU with the best worst link to those
 *       already chosen, then the least loaded, then the lowest index, one id per GPU.</li>
 * </ul>
 * Whatever is still missing is filled with further available ids, each time one of the GPU with the
 * fewest ids chosen so far (ties in the kubelet's order); the allocation may then be refused.
 *
 * <p>The load it sees is the ledger's; {@link VirtualDevicePool#preferred(String, List, List, int)} calls it a
 * second time with the allocations of containers that are gone (the kubelet offers one of their ids) taken
 * out, so that replicas are counted as taken as NVIDIA's {@code distributed} policy counts them.
 *
 * <p>Thread safety: not thread-safe; used under the pool's lock.
 */
final class PreferredAllocation {
    static final String PROBE_TENANT = "qgpu-device-plugin/preferred-allocation";

    private final VirtualDevicePool pool;
    private final PlacementEngine engine;
    private final Ledger ledger;
    private final long slotMemoryBytes;

    PreferredAllocation(VirtualDevicePool pool, PlacementEngine engine, Ledger ledger, long slotMemoryBytes) {
        this.pool = pool;
        this.engine = engine;
        this.ledger = ledger;
        this.slotMemoryBytes = slotMemoryBytes;
    }

    /** @param f the request's field, for messages: {@code PreferredAllocationRequest.container_requests[i]} */
    List<String> choose(String f, List<String> available, List<String> mustInclude, int size) {
        Set<String> avail = new LinkedHashSet<>();
        for (int i = 0; i < available.size(); i++) {
            pool.known(f + ".available_deviceIDs[" + i + "]", available.get(i));
            if (!avail.add(available.get(i))) {
                throw PluginException.invalid(f + ".available_deviceIDs[" + i + "]", available.get(i), "is named twice");
            }
        }
        Set<String> must = new LinkedHashSet<>();
        for (int i = 0; i < mustInclude.size(); i++) {
            String id = mustInclude.get(i);
            pool.known(f + ".must_include_deviceIDs[" + i + "]", id);
            if (!avail.contains(id)) {
                throw PluginException.invalid(f + ".must_include_deviceIDs[" + i + "]", id, "is not among available_deviceIDs");
            }
            must.add(id);
        }
        if (size < 1 || size > avail.size()) {
            throw PluginException.invalid(f + ".allocation_size", size,
                    "must be between 1 and the number of available devices (" + avail.size() + ")");
        }
        if (must.size() > size) {
            throw PluginException.invalid(f + ".must_include_deviceIDs", must.size() + " devices",
                    "must not be more than allocation_size (" + size + ")");
        }
        List<String> out = new ArrayList<>(must);
        Set<String> chosen = new LinkedHashSet<>();
        must.forEach(id -> chosen.add(VirtualDevice.homeOf(id)));
        // one free id per healthy GPU, in the kubelet's order
        Map<String, String> firstIdOf = new LinkedHashMap<>();
        for (String id : avail) {
            String home = VirtualDevice.homeOf(id);
            if (!must.contains(id) && !chosen.contains(home) && pool.healthOf(home) == Health.HEALTHY) {
                firstIdOf.putIfAbsent(home, id);
            }
        }
        int need = size - out.size();
        List<String> byEngine = need > 0 && must.isEmpty() && firstIdOf.size() >= need
                ? probe(new ArrayList<>(firstIdOf.keySet()), need) : List.of();
        for (String g : byEngine) {
            out.add(firstIdOf.remove(g));
            chosen.add(g);
        }
        if (need > 0 && must.isEmpty() && byEngine.isEmpty() && !firstIdOf.isEmpty()) {
            replicas(avail, firstIdOf.keySet(), need, out);
            if (!out.isEmpty()) {
                return fill(avail, out, size);
            }
            // the replicas do not fit either: one id per GPU by links and load, as around must-include ids
        }
        need = size - out.size();
        while (need > 0 && !firstIdOf.isEmpty()) {
            String best = best(chosen, firstIdOf.keySet());
            out.add(firstIdOf.remove(best));
            chosen.add(best);
            need--;
        }
        return fill(avail, out, size);
    }

    /**
     * Fewer GPUs than ids can take one: the ids are replicas of one request, spread and stacked evenly
     * by the engine over {@code gpus} ({@link Replicas#probe}); each replica's GPU gets one of its own
     * available ids, in the kubelet's order.
     */
    private void replicas(Set<String> avail, Set<String> gpus, int count, List<String> out) {
        Selectors.Builder s = Selectors.builder();
        gpus.forEach(s::includeUuid);
        List<String> onGpu = new Replicas(engine, slotMemoryBytes).probe(PROBE_TENANT, count, s.build());
        for (String g : onGpu) {
            for (String id : avail) {
                if (VirtualDevice.homeOf(id).equals(g) && !out.contains(id)) {
                    out.add(id);
                    break;
                }
            }
        }
    }

    /**
     * Completes {@code out} to {@code size} ids with the other available ones: each time the id whose home
     * GPU has the fewest ids chosen so far (ties in the kubelet's order). The allocation may then be refused.
     */
    private static List<String> fill(Set<String> avail, List<String> out, int size) {
        Map<String, Integer> perHome = new HashMap<>();
        out.forEach(id -> perHome.merge(VirtualDevice.homeOf(id), 1, Integer::sum));
        while (out.size() < size) {
            String pick = null;
            int fewest = Integer.MAX_VALUE;
            for (String id : avail) {
                int n = perHome.getOrDefault(VirtualDevice.homeOf(id), 0);
                if (!out.contains(id) && n < fewest) {
                    pick = id;
                    fewest = n;
                }
            }
            out.add(pick);
            perHome.merge(VirtualDevice.homeOf(pick), 1, Integer::sum);
        }
        return List.copyOf(out);
    }

    /** The GPUs the engine would choose for {@code count} slots among {@code candidates}; empty if none. */
    private List<String> probe(List<String> candidates, int count) {
        Selectors.Builder s = Selectors.builder();
        candidates.forEach(s::includeUuid);
        Claim claim = Claim.builder(PROBE_TENANT).gpus(count).memoryBytes(slotMemoryBytes).compute(0, 100)
                .selectors(s.build()).build();
        PlacementResult r = engine.place(claim);
        if (r instanceof PlacementResult.Placed placed) {
            engine.release(PROBE_TENANT);
            return placed.placement().gpuUuids();
        }
        return List.of();
    }

    /** Best worst link to the chosen GPUs, then fewest tenants, then lowest position. */
    private String best(Set<String> chosen, Set<String> candidates) {
        NodeState state = ledger.node(pool.nodeName()).orElseThrow();
        Node node = state.node();
        String best = null;
        int bestLink = 0;
        int bestTenants = 0;
        Set<Integer> chosenPos = new HashSet<>();
        chosen.forEach(g -> chosenPos.add(node.positionOf(g)));
        for (String g : candidates) {
            int pos = node.positionOf(g);
            int link = Integer.MAX_VALUE;
            for (int c : chosenPos) {
                link = Math.min(link, node.topology().link(pos, c).quality());
            }
            int tenants = state.gpu(pos).tenants();
            if (best == null || link > bestLink || (link == bestLink && tenants < bestTenants)) {
                best = g;
                bestLink = link;
                bestTenants = tenants;
            }
        }
        return best;
    }
}
