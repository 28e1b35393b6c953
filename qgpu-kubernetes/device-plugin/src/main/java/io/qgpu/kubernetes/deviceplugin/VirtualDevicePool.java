package io.qgpu.kubernetes.deviceplugin;

import io.grpc.Status;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.Health;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.QgpuException;
import io.qgpu.api.Selectors;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import io.qgpu.core.placement.PlacementEngine;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's virtual GPU ids and what each is on: the heart of the plugin, with no gRPC in it.
 *
 * <p>Each physical GPU gets as many ids as the ledger's granularity rules let tenants on it
 * ({@code GranularityRules.maxTenants}). {@link #allocate} maps the ids the kubelet chose to physical
 * GPUs: the extender's placement when {@link PodDecisions} has one for this many GPUs, else the
 * placement engine's choice for a slot-sized claim (least loaded, then best linked), first among
 * the ids' home GPUs and then anywhere, as a virtual id may land on any GPU. When not that many
 * distinct GPUs can take a slot, the ids are replicas of one request: one slot-sized replica per id,
 * spread and stacked evenly over the GPUs by the engine (4 ids on 2 GPUs: 2 + 2), refused when they
 * fit only unevenly (see {@link Allocation}). The placement is
 * reserved in the ledger; every change is saved in the {@link AllocationStore} before it is answered, and
 * {@link #restore} rebuilds it all after a restart.
 *
 * <pre>{@code
 * VirtualDevicePool pool = new VirtualDevicePool(node, ledger, engine, PodDecisions.none(), stateFile, 4 * GpuDevice.GIB);
 * pool.restore();
 * List<Allocation> got = pool.allocate(List.of(List.of("GPU-...::0", "GPU-...::0")));
 * }</pre>
 *
 * <p>An id the kubelet hands out again belongs to a container that is gone (the kubelet only hands
 * out free ids), so its old allocation is released first.
 *
 * <p>Thread safety: thread-safe; every method is serialised on the pool. Listeners are called under
 * that lock, in order, and must not block.
 */
public final class VirtualDevicePool {
    private static final Logger LOG = LoggerFactory.getLogger(VirtualDevicePool.class);

    private final Node node;
    private final Ledger ledger;
    private final PlacementEngine engine;
    private final PodDecisions decisions;
    private final AllocationStore stateFile;
    private final long slotMemoryBytes;
    private final Map<String, GpuDevice> gpus = new LinkedHashMap<>();
    /** Every id, in advertising order. */
    private final List<String> ids = new ArrayList<>();
    private final Map<String, Health> health = new HashMap<>();
    /** Live allocations by tenant id, and the tenant holding each bound id. */
    private final Map<String, Allocation> allocations = new LinkedHashMap<>();
    private final Map<String, String> tenantOfId = new HashMap<>();
    private final List<Consumer<List<VirtualDevice>>> listeners = new CopyOnWriteArrayList<>();

    /**
     * @param node            this machine's GPUs (discovery's node)
     * @param ledger          a ledger holding {@code node}
     * @param engine          the placement engine over {@code ledger}
     * @param decisions       where the extender's decisions come from
     * @param stateFile       where the allocations are kept ({@link StateFile})
     * @param slotMemoryBytes memory per GPU of an allocation the plugin decides itself
     */
    public VirtualDevicePool(Node node, Ledger ledger, PlacementEngine engine, PodDecisions decisions, AllocationStore stateFile,
                             long slotMemoryBytes) {
        this.node = Validate.notNull("pool.node", node);
        this.ledger = Validate.notNull("pool.ledger", ledger);
        this.engine = Validate.notNull("pool.engine", engine);
        this.decisions = Validate.notNull("pool.decisions", decisions);
        this.stateFile = Validate.notNull("pool.stateFile", stateFile);
        this.slotMemoryBytes = Validate.atLeast("pool.slotMemoryBytes", slotMemoryBytes, 1);
        for (GpuDevice g : node.gpus()) {
            gpus.put(g.uuid(), g);
            health.put(g.uuid(), g.health());
            int slots = ledger.rules().maxTenants(g);
            for (int s = 0; s < slots; s++) {
                ids.add(VirtualDevice.idOf(g.uuid(), s));
            }
        }
    }

    /** This node's name. */
    public String nodeName() {
        return node.name();
    }

    /** The GPU a UUID names, if it is on this node. */
    public Optional<GpuDevice> gpu(String uuid) {
        return Optional.ofNullable(gpus.get(uuid));
    }

    /** Every virtual device as the kubelet should see it now. */
    public synchronized List<VirtualDevice> devices() {
        List<VirtualDevice> out = new ArrayList<>(ids.size());
        for (String id : ids) {
            String gpu = gpuOf(id);
            GpuDevice g = gpus.get(gpu);
            OptionalInt numa = g == null || g.numaNode() < 0 ? OptionalInt.empty() : OptionalInt.of(g.numaNode());
            out.add(new VirtualDevice(id, gpu, health.getOrDefault(gpu, Health.UNHEALTHY), numa));
        }
        return List.copyOf(out);
    }

    /** The live allocations, oldest first. */
    public synchronized List<Allocation> allocations() {
        return List.copyOf(allocations.values());
    }

    /**
     * Calls {@code listener} with the full device list now and after every change, until the returned
     * handle is closed.
     */
    public synchronized AutoCloseable subscribe(Consumer<List<VirtualDevice>> listener) {
        listeners.add(listener);
        listener.accept(devices());
        return () -> listeners.remove(listener);
    }

    /** Records a GPU's health (from NVML) and tells the listeners; unknown GPUs are ignored. */
    public synchronized void setHealth(String gpuUuid, Health h) {
        if (!gpus.containsKey(gpuUuid) || health.get(gpuUuid) == h) {
            return;
        }
        health.put(gpuUuid, h);
        ledger.setHealth(gpuUuid, h);
        LOG.info("GPU {} is {}: its virtual devices are advertised so", gpuUuid, h);
        changed();
    }

    /** Refuses ids this plugin never advertised. */
    public synchronized void checkKnown(String field, List<String> deviceIds) {
        for (int i = 0; i < deviceIds.size(); i++) {
            known(field + "[" + i + "]", deviceIds.get(i));
        }
    }

    /**
     * Rebuilds the allocations from the state file (nothing when there is none) and reserves their
     * placements again. An allocation whose ids or GPUs this node no longer has is dropped with a
     * warning.
     *
     * @return how many allocations were restored
     */
    public synchronized int restore() {
        List<Allocation> saved = stateFile.load(node.name()).orElse(List.of());
        int n = 0;
        for (Allocation a : saved) {
            List<String> unknown = new ArrayList<>();
            a.deviceIds().stream().filter(id -> !ids.contains(id)).forEach(unknown::add);
            a.gpus().stream().filter(g -> !gpus.containsKey(g)).forEach(unknown::add);
            if (!unknown.isEmpty() || a.deviceIds().stream().anyMatch(tenantOfId::containsKey)) {
                LOG.warn("{}: allocation of {} dropped: {} not on this node or held twice", stateFile,
                        a.tenantId(), unknown);
                continue;
            }
            a.reservations().forEach(this::reserve);
            record(a);
            n++;
        }
        if (n > 0) {
            LOG.info("restored {} allocation(s) from {}", n, stateFile);
            changed();
        }
        return n;
    }

    /**
     * Allocates each container's ids, all or none: when any part fails (a container cannot be placed,
     * the state cannot be saved, a pod's decision cannot be marked applied), the devices, the ledger,
     * the saved state and the decision marks already set in this call are all taken back (a mark that
     * cannot be taken back is logged and reported as suppressed in the exception), and ids handed out
     * again get their old allocations back.
     *
     * @param containers per container, the ids the kubelet chose
     * @return per container, what it got
     * @throws PluginException with the status to answer
     */
    public synchronized List<Allocation> allocate(List<List<String>> containers) {
        return allocate(containers, a -> { });
    }

    /**
     * As {@link #allocate(List)}, with {@code answer} called for each container's allocation before it is
     * recorded; when it throws, everything is taken back as for any other failure (the device plugin computes
     * the container's answer there, which a sharing back end may refuse).
     */
    public synchronized List<Allocation> allocate(List<List<String>> containers, java.util.function.Consumer<Allocation> answer) {
        if (containers.isEmpty()) {
            throw PluginException.invalid("AllocateRequest.container_requests", "[]", "must name at least one container");
        }
        Set<String> seen = new TreeSet<>();
        for (int c = 0; c < containers.size(); c++) {
            List<String> req = containers.get(c);
            String field = "AllocateRequest.container_requests[" + c + "].devices_ids";
            if (req.isEmpty()) {
                throw PluginException.invalid(field, "[]", "must name at least one device");
            }
            for (int i = 0; i < req.size(); i++) {
                known(field + "[" + i + "]", req.get(i));
                if (!seen.add(req.get(i))) {
                    throw PluginException.invalid(field + "[" + i + "]", req.get(i), "is named twice in the request");
                }
            }
        }
        // ids handed out again: their containers are gone
        List<Allocation> released = new ArrayList<>();
        for (String id : seen) {
            String tenant = tenantOfId.get(id);
            if (tenant != null) {
                Allocation old = drop(tenant);
                released.add(old);
                LOG.info("{} handed out again: released the allocation of {}", id, tenant);
            }
        }
        List<Allocation> done = new ArrayList<>();
        Map<Allocation, PodDecisions.PendingPod> fromPods = new LinkedHashMap<>();
        List<PodDecisions.PendingPod> marked = new ArrayList<>();
        try {
            for (List<String> req : containers) {
                Allocation a = allocateOne(req, fromPods);
                answer.accept(a);
                record(a);
                done.add(a);
            }
            save();
            for (Map.Entry<Allocation, PodDecisions.PendingPod> e : fromPods.entrySet()) {
                marked.add(e.getValue());   // before the call: a mark that fails may still have been written
                decisions.applied(e.getValue(), e.getKey().deviceIds());
            }
        } catch (RuntimeException e) {
            for (PodDecisions.PendingPod pod : marked) {
                try {
                    decisions.withdrawn(pod);
                } catch (RuntimeException again) {
                    LOG.error("pod {}: the allocation failed, but its mark {} could not be taken back: {}", pod.key(),
                            Names.ALLOCATED, again.getMessage());
                    e.addSuppressed(again);
                }
            }
            for (Allocation a : done) {
                drop(a.tenantId());
            }
            for (Allocation a : released) {
                a.reservations().forEach(this::reserve);
                record(a);
            }
            if (!fromPods.isEmpty() || !done.isEmpty()) {
                try {
                    save();
                } catch (RuntimeException again) {
                    e.addSuppressed(again);
                }
            }
            if (e instanceof PluginException) {
                throw e;
            }
            throw new PluginException(Status.Code.INTERNAL, "allocation of " + containers + " failed: " + e.getMessage(), e);
        }
        for (Map.Entry<Allocation, PodDecisions.PendingPod> e : fromPods.entrySet()) {
            LOG.info("pod {}: applied the extender's placement on {} to {}", e.getValue().key(), e.getKey().gpus(),
                    e.getKey().deviceIds());
        }
        changed();
        return List.copyOf(done);
    }

    /**
     * The ids to prefer for one container: on distinct healthy GPUs, chosen by the placement engine
     * (least loaded, best linked set) when nothing must be included, else around the must-include ids
     * by best link and then least load.
     */
    public synchronized List<String> preferred(List<String> available, List<String> mustInclude, int size) {
        return preferred("ContainerPreferredAllocationRequest", available, mustInclude, size);
    }

    /** As {@link #preferred(List, List, int)}, naming the request's field {@code field} in refusals. */
    public synchronized List<String> preferred(String field, List<String> available, List<String> mustInclude, int size) {
        return new PreferredAllocation(this, engine, ledger, slotMemoryBytes).choose(field, available, mustInclude, size);
    }

    // ------------------------------------------------------------------------------------------------

    String gpuOf(String id) {
        String tenant = tenantOfId.get(id);
        return tenant == null ? VirtualDevice.homeOf(id) : allocations.get(tenant).gpuOf().get(id);
    }

    Health healthOf(String gpu) {
        return health.getOrDefault(gpu, Health.UNHEALTHY);
    }

    boolean bound(String id) {
        return tenantOfId.containsKey(id);
    }

    void known(String field, String id) {
        if (id == null || id.isBlank()) {
            throw PluginException.invalid(field, "\"" + id + "\"", "must be a device id");
        }
        if (!ids.contains(id)) {
            throw new PluginException(Status.Code.NOT_FOUND, field + " = " + id + ": no such device on node " + node.name());
        }
    }

    private Allocation allocateOne(List<String> req, Map<Allocation, PodDecisions.PendingPod> fromPods) {
        Set<String> taken = new java.util.HashSet<>();
        fromPods.values().forEach(pod -> taken.add(pod.key()));
        Optional<PodDecisions.PendingPod> pending = decisions.pending(req.size()).stream()
                .filter(pod -> !taken.contains(pod.key())).findFirst();
        if (pending.isPresent()) {
            PodDecisions.PendingPod pod = pending.get();
            Placement p = pod.placement();
            for (String g : p.gpuUuids()) {
                if (!gpus.containsKey(g)) {
                    throw new PluginException(Status.Code.FAILED_PRECONDITION, "pod " + pod.key() + ": annotation "
                            + Names.PLACEMENT + " names GPU " + g + ", which node " + node.name() + " does not have");
                }
                if (healthOf(g) != Health.HEALTHY) {
                    throw new PluginException(Status.Code.FAILED_PRECONDITION, "pod " + pod.key() + ": GPU " + g
                            + " chosen by the extender is unhealthy");
                }
            }
            if (allocations.containsKey(p.tenantId())) {
                throw new PluginException(Status.Code.FAILED_PRECONDITION, "pod " + pod.key() + ": tenant " + p.tenantId()
                        + " already holds devices " + allocations.get(p.tenantId()).deviceIds());
            }
            reserve(p);
            Allocation a = new Allocation(req, bind(req, p.gpuUuids()), p, Optional.of(pod.key()));
            fromPods.put(a, pod);
            return a;
        }
        return place(req);
    }

    /**
     * The plugin's own decision: a slot-sized claim, on the ids' home GPUs if they can take it, else
     * anywhere; when no {@code req.size()} distinct GPUs can take one, one replica per id spread and
     * stacked evenly over the GPUs ({@link Replicas}).
     */
    private Allocation place(List<String> req) {
        String tenant = "devices/" + new TreeSet<>(req).first();
        Set<String> homes = new LinkedHashSet<>();
        req.forEach(id -> homes.add(VirtualDevice.homeOf(id)));
        Claim.Builder b = Claim.builder(tenant).gpus(req.size()).memoryBytes(slotMemoryBytes).compute(0, 100);
        if (homes.size() == req.size()) {
            Selectors.Builder s = Selectors.builder();
            homes.forEach(s::includeUuid);
            PlacementResult r = engine.place(b.selectors(s.build()).build());
            if (r instanceof PlacementResult.Placed placed) {
                return new Allocation(req, bind(req, placed.placement().gpuUuids()), placed.placement(), Optional.empty());
            }
        }
        PlacementResult r = engine.place(b.selectors(Selectors.none()).build());
        if (r instanceof PlacementResult.Placed placed) {
            return new Allocation(req, bind(req, placed.placement().gpuUuids()), placed.placement(), Optional.empty());
        }
        if (req.size() > 1) {
            return new Replicas(engine, slotMemoryBytes).allocate(tenant, req, node.name());
        }
        throw new PluginException(Status.Code.RESOURCE_EXHAUSTED, "devices " + req + ": no " + req.size()
                + " healthy GPU(s) of node " + node.name() + " can take " + slotMemoryBytes + " bytes each: "
                + ((PlacementResult.Unschedulable) r).summary());
    }

    /** Each id on one GPU, ids on their home GPU where it is among them. */
    private static Map<String, String> bind(List<String> req, List<String> chosen) {
        Map<String, String> out = new LinkedHashMap<>();
        Set<String> left = new LinkedHashSet<>(chosen);
        for (String id : req) {
            if (left.remove(VirtualDevice.homeOf(id))) {
                out.put(id, VirtualDevice.homeOf(id));
            }
        }
        for (String id : req) {
            if (!out.containsKey(id)) {
                String g = left.iterator().next();
                left.remove(g);
                out.put(id, g);
            }
        }
        return out;
    }

    private void reserve(Placement p) {
        try {
            ReserveResult r = ledger.reserve(p);
            if (r instanceof ReserveResult.Refused refused) {
                LOG.warn("placement of {} applied although this node's ledger refuses it: {}", p.tenantId(), refused.summary());
            }
        } catch (QgpuException e) {
            LOG.warn("placement of {} applied although this node's ledger refuses it: {}", p.tenantId(), e.getMessage());
        }
    }

    private void record(Allocation a) {
        allocations.put(a.tenantId(), a);
        a.deviceIds().forEach(id -> tenantOfId.put(id, a.tenantId()));
    }

    private Allocation drop(String tenant) {
        Allocation a = allocations.remove(tenant);
        a.deviceIds().forEach(tenantOfId::remove);
        a.reservations().forEach(r -> engine.release(r.tenantId()));
        return a;
    }

    private void save() {
        stateFile.save(node.name(), List.copyOf(allocations.values()));
    }

    private void changed() {
        List<VirtualDevice> now = devices();
        for (Consumer<List<VirtualDevice>> l : listeners) {
            try {
                l.accept(now);
            } catch (RuntimeException e) {
                LOG.warn("device list listener failed; removed", e);
                listeners.remove(l);
            }
        }
    }
}
