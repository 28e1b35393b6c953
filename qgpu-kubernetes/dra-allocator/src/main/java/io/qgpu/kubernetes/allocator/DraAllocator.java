package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.NodeSelector;
import io.fabric8.kubernetes.api.model.NodeSelectorBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.resource.v1.AllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.AllocationResultBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceAllocationConfigurationBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClaimConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClassConfiguration;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResult;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceRequestAllocationResultBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.HostRequest;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import io.qgpu.core.placement.PlacementConfig;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The allocator's decisions without the API server: the published GPUs ({@link #inventory}) and every claim
 * allocated on them ({@link #claimChanged}, {@link #claimGone}) as qgpu's ledger, and the allocation of a pod's
 * claims ({@link #decide}) with qgpu's placement engine. The controller feeds it from informers and writes what it
 * decides; a replay or a benchmark feeds it directly.
 *
 * <pre>{@code
 * DraAllocator a = DraAllocator.create(Set.of("gpu.qgpu.io"), GranularityRules.ofDefaults(),
 *         PlacementConfig.defaults(), (claim, classes) -> Optional.empty());
 * a.inventory(SliceInventory.read(slices).nodes());
 * for (ResourceClaim c : allocatedClaims) a.claimChanged(c);
 * if (a.decide(podClaims, classes::get) instanceof Decision.Allocate d) {
 *     ...write d.claims()' allocations (d.node() is the node chosen)...
 * }
 * }</pre>
 *
 * <p><b>The ledger.</b> Each GPU of a published node is a GPU of the ledger, with the published {@code memory}
 * capacity as its memory; the rules ({@code --rules}) limit its tenants as the node's driver does with its
 * {@code tenants} capacity. Every allocated claim with results of driver {@code gpu.qgpu.io} is reserved as
 * {@link AllocatedClaims} says, whoever allocated it. A decision reserves its placements at once (tenant id = the
 * claim's uid), so the next decision sees them before the writes come back through the informer; a write that fails
 * gives them back ({@link #abandon}). When the published nodes change, the ledger's nodes follow and its reservations
 * are rebuilt from the allocated claims and the decisions in flight ({@link Ledger#reconcile}).
 *
 * <p><b>A decision.</b> The pod's claims of the allocator ({@link ClaimTranslator}) are placed together on one node:
 * the first with {@link PlacementEngine#place}, the others on its node with {@link PlacementEngine#placeOn} (claims of
 * one pod may share a GPU); when they do not fit there, every other published node in turn, all of them with
 * {@link PlacementEngine#placeOn}. A claim
 * already allocated is taken as it is (its node binds the others). The result of each claim: its requests' devices
 * in order, each with the driver, pool, device, a {@code shareID} (a name-based UUID of the claim's uid and the
 * device, the same on every retry) and {@code consumedCapacity} ({@code memory}, {@code cores}, and {@code tenants}
 * 1 where published) on a device that allows multiple allocations; the configuration of the class and of the claim
 * for the driver, as kube-scheduler copies it (source {@code FromClass}, then {@code FromClaim}); a
 * {@code nodeSelector} on the node's name.
 *
 * <p>Thread safety: thread-safe; every method is serialised on this object.
 */
public final class DraAllocator {
    private static final Logger LOG = LoggerFactory.getLogger(DraAllocator.class);

    private final ClaimTranslator translator;
    private final Ledger ledger;
    private final PlacementEngine engine;
    private final GranularityRules rules;
    private final PriorityOf priority;
    /** The published nodes by name. */
    private Map<String, PublishedNode> nodes = Map.of();
    /** (pool, device) to where the device is. */
    private Map<String, AllocatedClaims.Located> devices = Map.of();
    /** The allocated claims with qgpu devices, by uid, as last seen. */
    private final Map<String, ResourceClaim> allocated = new HashMap<>();
    /** What each allocated claim holds in the ledger, by uid. */
    private final Map<String, List<Placement>> held = new HashMap<>();
    /** Decisions whose writes have not come back yet, by claim uid. */
    private final Map<String, Placement> inFlight = new HashMap<>();
    /** The pod's CPU and memory a decision reserved with a claim ({@link #decide(List, Function, HostRequest)}), by claim uid. */
    private final Map<String, HostRequest> hosts = new HashMap<>();

    private DraAllocator(Set<String> deviceClasses, GranularityRules rules, PlacementConfig config,
                         PriorityOf priority, Function<Ledger, PlacementEngine> engineOf) {
        this.rules = rules;
        this.priority = priority;
        this.translator = new ClaimTranslator(deviceClasses, rules, priority);
        this.ledger = Ledger.create(rules, List.of());
        this.engine = engineOf == null ? PlacementEngine.builder(ledger).config(config).build() : engineOf.apply(ledger);
    }

    /**
     * An allocator with an empty inventory.
     *
     * @param deviceClasses the device classes whose claims it allocates ({@code --device-class})
     * @param rules         the granularity rules the nodes' drivers publish ({@code --rules})
     * @param config        the placement engine's configuration ({@code --policy})
     * @param priority      a claim's priority class from its GpuConfig (checked before allocation; see {@link ClaimTranslator})
     */
    public static DraAllocator create(Set<String> deviceClasses, GranularityRules rules, PlacementConfig config,
                               PriorityOf priority) {
        return new DraAllocator(deviceClasses, rules, config, priority, null);
    }

    /** As {@link #create}, with the engine built by {@code engineOf} over the allocator's ledger (a replay's own). */
    public static DraAllocator create(Set<String> deviceClasses, GranularityRules rules, PriorityOf priority,
                               Function<Ledger, PlacementEngine> engineOf) {
        return new DraAllocator(deviceClasses, rules, null, priority, engineOf);
    }

    /** The claim translator (which claims are the allocator's). */
    ClaimTranslator translator() {
        return translator;
    }

    /** The ledger (read it; the allocator changes it). */
    Ledger ledger() {
        return ledger;
    }

    /** A claim's priority class from its GpuConfig (and its classes'); empty when none is set. */
    @FunctionalInterface
    public interface PriorityOf {
        /**
         * @param claim   the claim
         * @param classes the DeviceClasses by name
         * @throws IllegalArgumentException naming the field and value of a configuration that is not valid
         */
        Optional<PriorityClass> of(ResourceClaim claim, Function<String, Optional<DeviceClass>> classes);
    }

    /** What a pod's claims come to. */
    public sealed interface Decision {
        /**
         * Allocations to write: every claim of the allocator's that the pod has and is not allocated yet.
         *
         * @param node   the node chosen
         * @param claims each claim with the allocation to write into its status
         */
        record Allocate(String node, List<ClaimAllocation> claims) implements Decision {
            public Allocate {
                claims = List.copyOf(claims);
            }
        }

        /** Nothing can be allocated now; the reason names what is short. */
        record Refused(String reason) implements Decision {
        }

        /** None of the pod's claims is the allocator's, or all are allocated already. */
        record NotOurs() implements Decision {
        }
    }

    /** A claim and the allocation decided for it. */
    public record ClaimAllocation(ResourceClaim claim, AllocationResult allocation) {
    }

    /** The published nodes now: the ledger's nodes follow, and its reservations are rebuilt. */
    public synchronized void inventory(List<PublishedNode> published) {
        Map<String, PublishedNode> next = new LinkedHashMap<>();
        Map<String, AllocatedClaims.Located> dev = new HashMap<>();
        for (PublishedNode n : published) {
            next.put(n.name(), n);
            for (PublishedGpu g : n.gpus()) {
                dev.put(g.pool() + "/" + g.device(), new AllocatedClaims.Located(n.name(), g));
            }
        }
        boolean changed = false;
        for (String name : nodes.keySet()) {
            if (!next.containsKey(name)) {
                ledger.removeNode(name);
                changed = true;
            }
        }
        for (PublishedNode n : next.values()) {
            PublishedNode old = nodes.get(n.name());
            if (old == null) {
                ledger.addNode(n.node());
                changed = true;
            } else if (!old.equals(n)) {
                ledger.removeNode(n.name());
                ledger.addNode(n.node());
                changed = true;
            }
        }
        nodes = next;
        devices = dev;
        if (changed) {
            rebuild();
        }
    }

    private void rebuild() {
        held.clear();
        List<Placement> all = new ArrayList<>();
        for (ResourceClaim rc : allocated.values()) {
            List<Placement> ps = placements(rc);
            held.put(rc.getMetadata().getUid(), ps);
            all.addAll(ps);
        }
        all.addAll(inFlight.values());
        ledger.reconcile(all).of(io.qgpu.core.ledger.ReconcileReport.Kind.REFUSED)
                .forEach(d -> LOG.warn("the ledger cannot hold {} on the published devices: {}", d.tenant(), d.reasons()));
    }

    private List<Placement> placements(ResourceClaim rc) {
        List<Placement> ps = AllocatedClaims.placements(rc, (pool, device) -> Optional.ofNullable(devices.get(pool + "/" + device)),
                rules, ClaimTranslator.LEDGER_CLASS);
        HostRequest host = hosts.get(rc.getMetadata().getUid());
        if (host == null || ps.isEmpty()) {
            return ps;
        }
        // the pod's CPU and memory stay with the claim they were decided with
        List<Placement> out = new ArrayList<>(ps);
        Placement first = out.get(0);
        out.set(0, new Placement(first.claim().toBuilder().host(host).build(), first.nodeName(), first.slices()));
        return out;
    }

    /**
     * A claim was added or changed: an allocation with qgpu's devices is counted (whoever made it), a claim without
     * one holds nothing.
     */
    public synchronized void claimChanged(ResourceClaim rc) {
        String uid = rc.getMetadata().getUid();
        if (!AllocatedClaims.holdsQgpuDevices(rc)) {
            if (allocated.remove(uid) != null) {
                releaseHeld(uid);
                hosts.remove(uid);
            }
            return;
        }
        ResourceClaim before = allocated.put(uid, rc);
        if (before != null && sameAllocation(before, rc)) {
            return;
        }
        releaseHeld(uid);
        Placement flying = inFlight.remove(uid);
        if (flying != null) {
            ledger.release(flying.tenantId());
        }
        List<Placement> ps = placements(rc);
        List<Placement> kept = new ArrayList<>();
        for (Placement p : ps) {
            ReserveResult r = ledger.reserve(p);
            if (r instanceof ReserveResult.Refused refused) {
                LOG.warn("claim {}/{} is allocated on qgpu devices the ledger cannot hold more on ({}); its allocation was made "
                        + "by another allocator against other counts", rc.getMetadata().getNamespace(), rc.getMetadata().getName(),
                        refused.summary());
            } else {
                kept.add(p);
            }
        }
        held.put(uid, kept);
    }

    private static boolean sameAllocation(ResourceClaim a, ResourceClaim b) {
        return java.util.Objects.equals(a.getStatus().getAllocation(), b.getStatus().getAllocation());
    }

    /** A claim was deleted: what it held returns. */
    public synchronized void claimGone(ResourceClaim rc) {
        String uid = rc.getMetadata().getUid();
        allocated.remove(uid);
        hosts.remove(uid);
        releaseHeld(uid);
        Placement flying = inFlight.remove(uid);
        if (flying != null) {
            ledger.release(flying.tenantId());
        }
    }

    private void releaseHeld(String uid) {
        List<Placement> ps = held.remove(uid);
        if (ps != null) {
            ps.forEach(p -> ledger.release(p.tenantId()));
        }
    }

    /**
     * Writes of a decision failed: the reservations of these claims return (unless the informer shows the claim
     * allocated meanwhile). Claims of the decision that were written stay reserved until the informer brings them.
     */
    public synchronized void abandon(List<ClaimAllocation> unwritten) {
        for (ClaimAllocation c : unwritten) {
            String uid = c.claim().getMetadata().getUid();
            Placement p = inFlight.remove(uid);
            if (p != null && !allocated.containsKey(uid)) {
                ledger.release(p.tenantId());
                hosts.remove(uid);
            }
        }
    }

    /** A decision's claim is written: it stays reserved until the informer shows it allocated. */
    synchronized boolean inFlight(String claimUid) {
        return inFlight.containsKey(claimUid);
    }

    /**
     * Decides the allocation of a pod's claims and reserves it.
     *
     * @param podClaims   the pod's ResourceClaims (all of them; those not the allocator's are left out)
     * @param classLookup the DeviceClasses by name
     */
    public Decision decide(List<ResourceClaim> podClaims, Function<String, Optional<DeviceClass>> classLookup) {
        return decide(podClaims, classLookup, HostRequest.none());
    }

    /**
     * As {@link #decide(List, Function)}, with the pod's CPU and memory reserved on the node with its first claim
     * of the allocator's, where the published nodes carry a host capacity (a replay's nodes do; nodes read from
     * ResourceSlices do not, {@link io.qgpu.api.HostCapacity#untracked()}). The CPU and memory stay with that claim
     * when it comes back allocated ({@link #claimChanged}) and until it is deallocated, deleted or
     * {@linkplain #abandon abandoned}; an allocator started afresh knows only the slices' GPUs, not them.
     */
    public synchronized Decision decide(List<ResourceClaim> podClaims, Function<String, Optional<DeviceClass>> classLookup,
                                        HostRequest host) {
        List<ClaimAsk> asks = new ArrayList<>();
        List<ResourceClaim> toAllocate = new ArrayList<>();
        Set<String> boundNodes = new LinkedHashSet<>();
        for (ResourceClaim rc : podClaims) {
            if (!translator.uses(rc)) {
                continue;
            }
            String uid = rc.getMetadata().getUid();
            if (AllocatedClaims.holdsQgpuDevices(rc)) {
                placements(rc).forEach(p -> boundNodes.add(p.nodeName()));
                continue;
            }
            if (allocated.containsKey(uid)) {
                held.getOrDefault(uid, List.of()).forEach(p -> boundNodes.add(p.nodeName()));
                continue;
            }
            if (inFlight.containsKey(uid)) {
                boundNodes.add(inFlight.get(uid).nodeName());
                continue;
            }
            ClaimTranslator.Translation t = translator.translate(rc, classLookup);
            if (t instanceof ClaimTranslator.Translation.Ours o) {
                asks.add(o.ask());
                toAllocate.add(rc);
            } else if (t instanceof ClaimTranslator.Translation.Refused r) {
                return new Decision.Refused("claim " + key(rc) + ": " + r.reason());
            }
        }
        if (asks.isEmpty()) {
            return new Decision.NotOurs();
        }
        if (boundNodes.size() > 1) {
            return new Decision.Refused("the pod's claims already allocated are on different nodes " + boundNodes
                    + ": a pod runs on one node");
        }
        List<Claim> claims = new ArrayList<>();
        for (ClaimAsk a : asks) {
            Optional<Claim> c = withSelectors(a, boundNodes);
            if (c.isPresent() && claims.isEmpty() && !host.equals(HostRequest.none())) {
                c = Optional.of(c.get().toBuilder().host(host).build());
            }
            if (c.isEmpty()) {
                return new Decision.Refused("claim " + a.key() + ": no published GPU matches its selectors "
                        + a.selectors().expressions());
            }
            claims.add(c.get());
        }
        List<Placement> placed;
        PlacementResult first = engine.place(claims.get(0));
        if (first instanceof PlacementResult.Unschedulable u) {
            return new Decision.Refused("claim " + asks.get(0).key() + ": " + u.summary());
        }
        placed = new ArrayList<>(List.of(((PlacementResult.Placed) first).placement()));
        for (int i = 1; i < claims.size() && placed != null; i++) {
            // the pod's other claims on the node the first one chose (claims of one pod may share a GPU)
            PlacementResult r = engine.placeOn(claims.get(i), placed.get(0).nodeName());
            if (r instanceof PlacementResult.Placed p) {
                placed.add(p.placement());
            } else {
                LOG.debug("claim {} does not fit beside {} on {}: {}", asks.get(i).key(), asks.get(0).key(),
                        placed.get(0).nodeName(), ((PlacementResult.Unschedulable) r).summary());
                placed.forEach(p -> ledger.release(p.tenantId()));
                placed = null;
            }
        }
        if (placed == null) {
            // no room beside the first claim's choice: every other node that can take the first claim, in turn
            String tried = ledgerFirstNode(first);
            for (String node : nodes.keySet()) {
                if (node.equals(tried)) {
                    continue;
                }
                placed = onOneNode(claims, node);
                if (placed != null) {
                    break;
                }
            }
            if (placed == null) {
                return new Decision.Refused("claims " + asks.stream().map(ClaimAsk::key).toList() + " together: no published "
                        + "node holds all of them (each fits somewhere, but not beside the others)");
            }
        }
        for (int i = 0; i < asks.size(); i++) {
            String off = offGrid(asks.get(i), placed.get(i));
            if (off != null) {
                placed.forEach(p -> ledger.release(p.tenantId()));
                return new Decision.Refused("claim " + asks.get(i).key() + ": " + off);
            }
        }
        List<ClaimAllocation> out = new ArrayList<>();
        HostRequest withFirst = placed.get(0).claim().host();
        if (!withFirst.isNone()) {
            hosts.put(asks.get(0).uid(), withFirst);
        }
        for (int i = 0; i < asks.size(); i++) {
            inFlight.put(asks.get(i).uid(), placed.get(i));
            out.add(new ClaimAllocation(toAllocate.get(i), allocation(toAllocate.get(i), asks.get(i), placed.get(i), classLookup)));
        }
        return new Decision.Allocate(placed.get(0).nodeName(), out);
    }

    /**
     * Places a pod that has no claim of the allocator's but asks for CPU or memory, on the same ledger: what
     * kube-scheduler does with such a pod in a cluster, which a replay of a whole workload needs so that the GPU pods
     * meet the CPU and memory the other pods took.
     *
     * @param tenant the pod's id in the ledger
     */
    public synchronized PlacementResult placeHostOnly(String tenant, HostRequest host) {
        return engine.place(Claim.builder(tenant).hostOnly().host(host).build());
    }

    private static String ledgerFirstNode(PlacementResult first) {
        return ((PlacementResult.Placed) first).placement().nodeName();
    }

    /** Every claim on this node, reserved; or null (nothing reserved) when one does not fit. */
    private List<Placement> onOneNode(List<Claim> claims, String node) {
        List<Placement> placed = new ArrayList<>();
        for (Claim c : claims) {
            PlacementResult r = engine.placeOn(c, node);
            if (!(r instanceof PlacementResult.Placed p)) {
                placed.forEach(x -> ledger.release(x.tenantId()));
                return null;
            }
            placed.add(p.placement());
        }
        return placed;
    }

    private static String key(ResourceClaim rc) {
        return rc.getMetadata().getNamespace() + "/" + rc.getMetadata().getName();
    }

    /** The claim with its GPU selectors (and its node when the pod's other claims are bound), or empty when none matches. */
    private Optional<Claim> withSelectors(ClaimAsk a, Set<String> boundNodes) {
        DeviceSelectors s = a.selectors();
        Selectors.Builder b = Selectors.builder();
        s.includeModels().forEach(b::includeModel);
        s.excludeModels().forEach(b::excludeModel);
        s.excludeUuids().forEach(b::excludeUuid);
        Set<String> include = new LinkedHashSet<>(s.includeUuids());
        boolean restrict = !s.predicates().isEmpty() || !boundNodes.isEmpty();
        if (restrict) {
            Set<String> matching = new LinkedHashSet<>();
            for (PublishedNode n : nodes.values()) {
                if (!boundNodes.isEmpty() && !boundNodes.contains(n.name())) {
                    continue;
                }
                for (GpuDevice g : n.node().gpus()) {
                    if (s.allows(g)) {
                        matching.add(g.uuid());
                    }
                }
            }
            if (matching.isEmpty()) {
                return Optional.empty();
            }
            if (!include.isEmpty()) {
                include.retainAll(matching);
                if (include.isEmpty()) {
                    return Optional.empty();
                }
            } else {
                include = matching;
            }
        }
        include.forEach(b::includeUuid);
        if (s.isNone() && boundNodes.isEmpty()) {
            return Optional.of(a.claim());
        }
        return Optional.of(a.claim().toBuilder().selectors(b.build()).build());
    }

    private AllocationResult allocation(ResourceClaim rc, ClaimAsk ask, Placement p,
                                        Function<String, Optional<DeviceClass>> classLookup) {
        PublishedNode node = nodes.get(p.nodeName());
        List<DeviceRequestAllocationResult> results = new ArrayList<>();
        int next = 0;
        for (ClaimAsk.Request r : ask.requests()) {
            for (int k = 0; k < r.count(); k++) {
                Slice s = p.slices().get(next++);
                PublishedGpu g = node.gpu(s.gpuUuid()).orElseThrow(() -> new IllegalStateException(
                        "placed on GPU " + s.gpuUuid() + " that node " + p.nodeName() + " does not publish"));
                DeviceRequestAllocationResultBuilder b = new DeviceRequestAllocationResultBuilder().withRequest(r.name())
                        .withDriver(DraNames.DRIVER).withPool(g.pool()).withDevice(g.device());
                if (g.shared()) {
                    Map<String, Quantity> consumed = new LinkedHashMap<>();
                    boolean whole = ask.claim().exclusive();
                    consumed.put(DraNames.CAPACITY_MEMORY, new Quantity(Long.toString(whole ? g.memory().value() : s.memoryBytes())));
                    consumed.put(DraNames.CAPACITY_CORES, new Quantity(Integer.toString(whole ? 100 : s.computeRequest())));
                    if (g.tenants() != null) {
                        consumed.put(DraNames.CAPACITY_TENANTS, new Quantity("1"));
                    }
                    b.withConsumedCapacity(consumed).withShareID(shareId(rc.getMetadata().getUid(), g));
                }
                results.add(b.build());
            }
        }
        List<DeviceAllocationConfiguration> config = new ArrayList<>();
        Set<String> classesSeen = new LinkedHashSet<>();
        for (var req : rc.getSpec().getDevices().getRequests()) {
            String cls = req.getExactly().getDeviceClassName();
            if (!classesSeen.add(cls)) {
                continue;
            }
            Optional<DeviceClass> dc = classLookup.apply(cls);
            List<DeviceClassConfiguration> cc = dc.map(d -> d.getSpec().getConfig()).orElse(null);
            for (DeviceClassConfiguration c : cc == null ? List.<DeviceClassConfiguration>of() : cc) {
                List<String> reqs = rc.getSpec().getDevices().getRequests().stream()
                        .filter(x -> cls.equals(x.getExactly().getDeviceClassName())).map(x -> x.getName()).toList();
                config.add(new DeviceAllocationConfigurationBuilder().withSource("FromClass").withRequests(reqs)
                        .withOpaque(c.getOpaque()).build());
            }
        }
        List<DeviceClaimConfiguration> claimConfig = rc.getSpec().getDevices().getConfig();
        for (DeviceClaimConfiguration c : claimConfig == null ? List.<DeviceClaimConfiguration>of() : claimConfig) {
            config.add(new DeviceAllocationConfigurationBuilder().withSource("FromClaim").withRequests(c.getRequests())
                    .withOpaque(c.getOpaque()).build());
        }
        NodeSelector selector = new NodeSelectorBuilder().addNewNodeSelectorTerm().addNewMatchField()
                .withKey("metadata.name").withOperator("In").withValues(p.nodeName()).endMatchField().endNodeSelectorTerm().build();
        return new AllocationResultBuilder().withNewDevices().withResults(results).withConfig(config).endDevices()
                .withNodeSelector(selector).build();
    }

    /**
     * Why a share placed by the rules ({@code --rules}) is not one the device's published request policies take as it
     * is (the node's driver runs other rules), or null when every device takes it.
     */
    private String offGrid(ClaimAsk ask, Placement p) {
        if (ask.claim().exclusive()) {
            return null;
        }
        PublishedNode node = nodes.get(p.nodeName());
        for (Slice s : p.slices()) {
            PublishedGpu g = node.gpu(s.gpuUuid()).orElseThrow();
            if (!g.shared()) {
                return "device " + g.pool() + "/" + g.device() + " is published whole only (no multiple allocations): a share of it "
                        + "cannot be allocated";
            }
            if (g.memory().round(s.memoryBytes()) != s.memoryBytes() || g.cores().round(s.computeRequest()) != s.computeRequest()) {
                return "device " + g.pool() + "/" + g.device() + " publishes request policies (memory " + g.memory() + ", cores "
                        + g.cores() + ") that do not take memory " + s.memoryBytes() + " and cores " + s.computeRequest()
                        + " as the " + rules.name() + " rules round them: the node's driver runs other rules than --rules";
            }
        }
        return null;
    }

    /** The share's id: the same for a claim and a device on every retry, a valid UID as the API server wants it. */
    static String shareId(String claimUid, PublishedGpu g) {
        return UUID.nameUUIDFromBytes((claimUid + "/" + g.pool() + "/" + g.device()).getBytes(StandardCharsets.UTF_8)).toString();
    }

    /** The published node with this name. */
    public synchronized Optional<Node> node(String name) {
        return Optional.ofNullable(nodes.get(name)).map(PublishedNode::node);
    }
}
