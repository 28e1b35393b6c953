package io.qgpu.kubernetes.extender;

import io.qgpu.api.Claim;
import io.qgpu.api.PreemptionPlan;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.core.placement.PreemptionPlanner;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code preempt} verb, backed by qgpu's preemption plans ({@link PreemptionPlanner}).
 *
 * <p>kube-scheduler sends, per candidate node, the victims its own preemption chose (lower Kubernetes
 * priority, as few PodDisruptionBudget violations as it could). For each node the answer is:
 * <ul>
 *   <li>a pod that asks for no GPU: every node, with the scheduler's victims unchanged;</li>
 *   <li>a node without qgpu inventory: left out (the pod cannot run there);</li>
 *   <li>otherwise the plan for the pod on that node that may evict only those of the scheduler's victims
 *       that hold GPU slices there and that the pod {@linkplain Claim#outranks outranks} (qgpu class,
 *       then {@code spec.priority} within the class): when there is one, the node is kept with the
 *       scheduler's victims that hold no GPU slice there (their eviction is the scheduler's own
 *       business) plus the plan's victims, the fewest GPU tenants that make room; the other GPU
 *       holders among the scheduler's victims are spared. When there is none, the node is left out.</li>
 * </ul>
 * {@code NumPDBViolations} is passed through as the scheduler counted it for its victims (the
 * extender does not know the budgets; sparing victims can only lower the true count).
 * With {@code nodeCacheCapable} the victims come as UIDs; a UID is matched to a reservation through
 * the UIDs the extender recorded at bind or when it rebuilt the ledger; an unknown UID counts as a pod
 * holding no GPU slice. Nothing is committed: the scheduler evicts, and binds the pod later.
 *
 * <p>Thread safety: thread-safe; it only reads the ledger.
 */
final class PreemptVerb {
    private static final Logger LOG = LoggerFactory.getLogger(PreemptVerb.class);

    private final Ledger ledger;
    private final PreemptionPlanner planner;
    private final PodClaims claims;
    private final Map<String, String> uidsByTenant;

    /** @param uidsByTenant the extender's live map of tenant id to pod UID */
    PreemptVerb(Ledger ledger, PlacementEngine engine, PodClaims claims, Map<String, String> uidsByTenant) {
        this.ledger = ledger;
        this.planner = new PreemptionPlanner(engine);
        this.claims = claims;
        this.uidsByTenant = uidsByTenant;
    }

    ExtenderProtocol.PreemptionResult answer(ExtenderRequests.PreemptionArgs args) {
        Optional<Claim> claim = claims.claimOf(args.pod());
        Map<String, String> tenantByUid = new HashMap<>();
        if (args.byUid()) {
            uidsByTenant.forEach((tenant, uid) -> tenantByUid.put(uid, tenant));
        }
        Map<String, ExtenderProtocol.MetaVictims> out = new LinkedHashMap<>();
        for (Map.Entry<String, ExtenderRequests.NodeVictims> e : args.nodes().entrySet()) {
            String node = e.getKey();
            ExtenderRequests.NodeVictims given = e.getValue();
            if (claim.isEmpty()) {
                out.put(node, meta(given.pods(), given));
                continue;
            }
            if (ledger.node(node).isEmpty()) {
                LOG.debug("preempt {}: {} has no qgpu inventory", claim.get().tenantId(), node);
                continue;
            }
            Map<String, ExtenderRequests.Victim> gpuHolders = new LinkedHashMap<>();
            List<ExtenderRequests.Victim> keep = new ArrayList<>();
            for (ExtenderRequests.Victim v : given.pods()) {
                String tenant = v.tenantId() != null ? v.tenantId() : tenantByUid.get(v.uid());
                if (tenant != null && ledger.placement(tenant).filter(p -> p.nodeName().equals(node)).isPresent()) {
                    gpuHolders.put(tenant, v);
                } else {
                    keep.add(v);
                }
            }
            PreemptionPlan plan = planner.plan(claim.get(), Set.of(node), p -> gpuHolders.containsKey(p.tenantId()));
            if (plan instanceof PreemptionPlan.Proposed p) {
                p.victimIds().forEach(id -> keep.add(gpuHolders.get(id)));
                out.put(node, meta(keep, given));
            } else if (LOG.isDebugEnabled()) {
                LOG.debug("preempt {}: {} left out: {}", claim.get().tenantId(), node, ((PreemptionPlan.Impossible) plan).summary());
            }
        }
        return new ExtenderProtocol.PreemptionResult(out);
    }

    private static ExtenderProtocol.MetaVictims meta(List<ExtenderRequests.Victim> pods, ExtenderRequests.NodeVictims given) {
        return new ExtenderProtocol.MetaVictims(pods.stream().map(v -> new ExtenderProtocol.MetaPod(v.uid())).toList(),
                given.numPdbViolations());
    }
}
