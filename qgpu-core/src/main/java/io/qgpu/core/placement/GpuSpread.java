package io.qgpu.core.placement;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.Selectors;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Places one member of a {@link io.qgpu.api.GangScope#sameNodeSpread()} gang on its node: on the
 * GPUs that hold the fewest of the members placed before it. With {@code count(g)} the members
 * already on GPU {@code g}, the levels are the distinct counts in ascending order; at level
 * {@code L} the member may use the GPUs with {@code count(g) <= L} (and its must-include GPUs), and
 * the engine's own pipeline ({@link PlacementEngine#placeOn}) chooses among them. The first level
 * that takes the member wins; the last level allows every GPU, so a member is refused only when the
 * node cannot take it at all (the answer is then that refusal).
 *
 * <p>Placing each member at the lowest level that takes it is water-filling: with unit members, the
 * counts end as even as the GPUs' room allows (a GPU with less than the others' count is one that
 * could not take another member).
 *
 * <p>The restriction is made with the claim's UUID selectors (intersected with its own), so every
 * admission rule still applies; the placement returned carries the member's own claim. A host-only
 * member is placed on the node as it is.
 *
 * <p>Thread safety: stateless; the engine given must be the caller's own (a gang trial's copy).
 */
final class GpuSpread {

    private GpuSpread() {
    }

    /**
     * Places {@code member} on {@code node} with {@code engine}, below the members in {@code placed}.
     *
     * @param state  the node's state before the member (its GPUs, in position order)
     * @param placed the members placed before this one (on any node; only this node's count)
     */
    static PlacementResult place(Claim member, NodeState state, Collection<Placement> placed, PlacementEngine engine) {
        if (member.hostOnly()) {
            return engine.placeOn(member, state.name());   // no GPU to spread over
        }
        Map<String, Integer> count = new HashMap<>();
        for (GpuState g : state.gpus()) {
            count.put(g.uuid(), 0);
        }
        for (Placement p : placed) {
            for (String g : p.gpuUuids()) {
                count.computeIfPresent(g, (k, v) -> v + 1);
            }
        }
        Selectors own = member.selectors();
        PlacementResult last = null;
        for (int level : new TreeSet<>(count.values())) {
            Set<String> allowed = new LinkedHashSet<>();
            for (GpuState g : state.gpus()) {
                boolean selected = own.includeUuids().isEmpty() || own.includeUuids().contains(g.uuid());
                if ((java.util.Objects.requireNonNull(count.get(g.uuid()), "count: every GPU of the node") <= level && selected) || own.mustIncludeUuids().contains(g.uuid())) {
                    allowed.add(g.uuid());
                }
            }
            if (allowed.size() < member.gpuCount()) {
                continue;
            }
            Selectors within = new Selectors(own.includeModels(), own.excludeModels(), allowed, own.excludeUuids(),
                    own.nodeLabels(), own.mustIncludeUuids(), own.mustIncludeIndices());
            last = engine.placeOn(member.toBuilder().selectors(within).build(), state.name());
            if (last instanceof PlacementResult.Placed p) {
                return new PlacementResult.Placed(new Placement(member, p.placement().nodeName(), p.placement().slices()));
            }
        }
        return last != null ? last : engine.placeOn(member, state.name());
    }
}
