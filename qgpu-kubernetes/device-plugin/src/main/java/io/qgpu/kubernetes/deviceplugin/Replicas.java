package io.qgpu.kubernetes.deviceplugin;

import io.grpc.Status;
import io.qgpu.api.Claim;
import io.qgpu.api.Gang;
import io.qgpu.api.GangResult;
import io.qgpu.api.Placement;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.core.placement.GangPlacer;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.kubernetes.node.reconcile.NodeTransaction;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A container's ids as replicas of one request: {@code N} slot-sized single-GPU claims placed by the
 * engine as one gang ({@link Gang#replicas}, spread over the node's GPUs: distinct GPUs first, then
 * stacked as evenly as their room allows). Used when a container asks for more ids than there are
 * GPUs that can take one: by {@code GetPreferredAllocation} to choose the ids, and by
 * {@code Allocate} to reserve them.
 *
 * <p>Thread safety: not thread-safe; used under the pool's lock.
 */
final class Replicas {
    private final PlacementEngine engine;
    private final long slotMemoryBytes;

    Replicas(PlacementEngine engine, long slotMemoryBytes) {
        this.engine = engine;
        this.slotMemoryBytes = slotMemoryBytes;
    }

    /** {@code count} slot-sized replicas under {@code tenant}-0 .. {@code tenant}-(count-1). */
    Gang gang(String tenant, int count, Selectors selectors) {
        return Gang.replicas(Claim.builder(tenant).memoryBytes(slotMemoryBytes).compute(0, 100).selectors(selectors).build(), count);
    }

    /**
     * The GPU of each of {@code count} replicas as the engine would place them now, or empty when they do
     * not fit; the placement is taken back at once.
     */
    List<String> probe(String tenant, int count, Selectors selectors) {
        Gang g = gang(tenant, count, selectors);
        GangPlacer placer = new GangPlacer(engine);
        if (placer.place(g) instanceof GangResult.Placed p) {
            placer.release(g);
            return p.placements().stream().map(x -> x.gpuUuids().get(0)).toList();
        }
        return List.of();
    }

    /**
     * Reserves one replica per id and answers the container's allocation: each id on its replica's GPU
     * (its home GPU where that GPU has a replica left), and as the container's placement its distinct
     * GPUs with the replicas' memory summed on each.
     *
     * <p>The release of the replicas is registered on {@code tx} the moment they are reserved, so a refusal
     * here or any later failure of the transaction takes them back.
     *
     * @throws PluginException {@code RESOURCE_EXHAUSTED} when the replicas do not fit on the node, or fit
     *                         only with more replicas on some GPU than on another (a container's memory
     *                         limit is the same on each of its GPUs); nothing stays reserved then, once
     *                         {@code tx} is rolled back
     */
    Allocation allocate(String tenant, List<String> req, String nodeName, NodeTransaction tx) {
        Gang g = gang(tenant, req.size(), Selectors.none());
        GangPlacer placer = new GangPlacer(engine);
        GangResult r = placer.place(g);
        if (r instanceof GangResult.Unschedulable u) {
            throw new PluginException(Status.Code.RESOURCE_EXHAUSTED, "devices " + req + ": " + req.size()
                    + " replica(s) of " + slotMemoryBytes + " bytes do not fit on node " + nodeName + ": " + u.summary());
        }
        tx.undo("release the replicas of " + tenant, () -> placer.release(g));
        List<Placement> replicas = ((GangResult.Placed) r).placements();
        Map<String, Integer> perGpu = new LinkedHashMap<>();
        replicas.forEach(p -> perGpu.merge(p.gpuUuids().get(0), 1, Integer::sum));
        if (new HashSet<>(perGpu.values()).size() != 1) {
            throw new PluginException(Status.Code.RESOURCE_EXHAUSTED, "devices " + req + ": the " + req.size()
                    + " replica(s) fit on node " + nodeName + " only unevenly " + perGpu
                    + ", and a container's memory limit is the same on each of its GPUs");
        }
        long each = slotMemoryBytes * perGpu.values().iterator().next();
        List<Slice> slices = new ArrayList<>();
        perGpu.keySet().forEach(gpu -> slices.add(new Slice(gpu, each, 0, 100)));
        Claim view = Claim.builder(tenant).gpus(perGpu.size()).memoryBytes(each).compute(0, 100).build();
        Placement seen = new Placement(view, nodeName, slices);
        return new Allocation(req, bind(req, perGpu), seen, Optional.empty(), replicas);
    }

    /** Each id on a GPU with a replica left: ids on their home GPU first, then the rest in order. */
    private static Map<String, String> bind(List<String> req, Map<String, Integer> perGpu) {
        Map<String, Integer> left = new LinkedHashMap<>(perGpu);
        Map<String, String> out = new LinkedHashMap<>();
        for (String id : req) {
            String home = VirtualDevice.homeOf(id);
            if (left.getOrDefault(home, 0) > 0) {
                left.merge(home, -1, Integer::sum);
                out.put(id, home);
            }
        }
        Set<String> rest = new LinkedHashSet<>(req);
        rest.removeAll(out.keySet());
        for (String id : rest) {
            String gpu = left.entrySet().stream().filter(e -> e.getValue() > 0).findFirst().orElseThrow().getKey();
            left.merge(gpu, -1, Integer::sum);
            out.put(id, gpu);
        }
        Map<String, String> ordered = new LinkedHashMap<>();
        req.forEach(id -> ordered.put(id, out.get(id)));
        return ordered;
    }
}
