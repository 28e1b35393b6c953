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
import io.qgpu.core.ledger.ReconcileReport;
import io.qgpu.core.ledger.ReserveResult;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.kubernetes.node.reconcile.NodeTransaction;
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
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
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
 * fit only unevenly (see {@link Allocation}). {@link #preferred} counts a replica whose container is gone (the
 * kubelet offers its id) as free, as NVIDIA's {@code distributed} policy does. The placement is
 * reserved in the ledger; every change is saved in the {@link AllocationStore} before it is answered, and
 * {@link #restore} rebuilds it all after a restart.
 *
 * <pre>{@code
 * VirtualDevicePool pool = new VirtualDevicePool(node, ledger, engine, PodDecisions.none(), stateFile, 4 * GpuDevice.GIB);
 * pool.restore();
 * List<Allocation> got = pool.allocate(List.of(List.of("GPU-...::0", "GPU-...::0")));
 * }</pre>
 *
 * <p><b>One transaction per {@code Allocate}.</b> {@link #allocate(List, Answer)} runs as one
 * {@link NodeTransaction}: every step registers its undo the moment it has succeeded, and the transaction is
 * committed right before the answer is returned. A call that fails at any step (a container that cannot be
 * placed, an answer the sharing back end refuses, a host directory that cannot be created, the state that
 * cannot be saved, a decision mark that cannot be set) undoes, newest first: the pods' decision marks
 * ({@link PodDecisions#withdrawn}), the saved state (saved again as it was before the call), the host
 * directories the answer created, each new allocation's record and ledger reservation, and the allocations
 * released because their ids were handed out again (recorded and reserved again, in their old order). So the
 * ledger, the allocations, the state file and the node's directories are as before the call, and a retry is
 * judged against the same state. What an undo cannot take back is logged and left to the plugin's
 * reconciler.
 *
 * <p><b>Invariant</b> (held between calls): the ledger holds exactly the reservations of the live
 * allocations ({@link Allocation#reservations()}), except an extender's placement that the ledger refuses,
 * which is applied anyway (logged); {@link #ensureSaved()} brings the state file to the live allocations
 * when a save failed or its outcome is unknown; every subscriber of the device list has been sent the
 * current list, or is sent it by {@link #sendCurrentList}.
 *
 * <p>An id the kubelet hands out again belongs to a container that is gone (the kubelet only hands
 * out free ids), so its old allocation is released first.
 *
 * <p>Thread safety: thread-safe; every method that reads or changes the allocations, the ledger or the
 * store is serialised on the pool ({@link #locked} runs a caller's step under the same lock). Subscribers are
 * called under that lock, in subscription order, and must not block.
 */
public final class VirtualDevicePool {
    private static final Logger LOG = LoggerFactory.getLogger(VirtualDevicePool.class);

    /**
     * Computes one container's answer inside the allocation's transaction.
     *
     * <p>Thread safety: called under the pool's lock.
     */
    @FunctionalInterface
    public interface Answer {
        /**
         * Computes the answer for {@code allocation}; registers on {@code tx} the undo of every side effect
         * it has (a host directory it created). Throwing takes the whole allocation back.
         */
        void accept(Allocation allocation, NodeTransaction tx);
    }

    /** One ListAndWatch subscriber and the last list it was sent. */
    private static final class Subscriber {
        final Consumer<List<VirtualDevice>> listener;
        List<VirtualDevice> sent;   // guarded by the pool; null: not sent, or the last send failed

        Subscriber(Consumer<List<VirtualDevice>> listener) {
            this.listener = listener;
        }
    }

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
    /** What the store holds as far as the pool knows; null when unknown (a save failed or was never made). */
    private List<Allocation> saved;
    private final Map<Long, Subscriber> subscribers = new ConcurrentSkipListMap<>();
    private final AtomicLong nextSubscriber = new AtomicLong();

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

    /** The ledger behind the pool (for tests). */
    Ledger ledger() {
        return ledger;
    }

    /** The live allocations, oldest first. */
    public synchronized List<Allocation> allocations() {
        return List.copyOf(allocations.values());
    }

    /**
     * Runs {@code step} under the pool's lock, so that no {@code Allocate}, restore or health change runs
     * meanwhile (the reconciler re-checks what it removes this way).
     */
    public synchronized <T> T locked(Callable<T> step) throws Exception {
        return step.call();
    }

    /**
     * Calls {@code listener} with the full device list now and after every change, until the returned
     * handle is closed. A call that throws is logged; the listener stays subscribed and is sent the list
     * again by {@link #sendCurrentList} (the plugin's reconciler).
     */
    public synchronized AutoCloseable subscribe(Consumer<List<VirtualDevice>> listener) {
        long id = nextSubscriber.incrementAndGet();
        Subscriber s = new Subscriber(Validate.notNull("listener", listener));
        subscribers.put(id, s);
        send(id, s, devices());
        return () -> subscribers.remove(id);
    }

    /** The ids of the device list's subscribers now. */
    public Set<Long> subscribers() {
        return Set.copyOf(subscribers.keySet());
    }

    /**
     * Sends the subscriber the current device list unless it was sent exactly that list last; nothing when
     * it is no longer subscribed. Idempotent.
     *
     * @throws RuntimeException what the subscriber threw (it stays subscribed and is tried again)
     */
    public synchronized void sendCurrentList(long subscriber) {
        Subscriber s = subscribers.get(subscriber);
        if (s == null) {
            return;
        }
        List<VirtualDevice> now = devices();
        if (now.equals(s.sent)) {
            return;
        }
        s.sent = null;
        s.listener.accept(now);
        s.sent = now;
    }

    /** Records a GPU's health (from NVML) and tells the subscribers; unknown GPUs are ignored. */
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
     * placements again, also on a GPU that is unhealthy by now. An allocation whose ids or GPUs this node no
     * longer has, or whose ids another saved allocation holds, is dropped with a warning (and the state file
     * brought in line by {@link #ensureSaved()}).
     *
     * @return how many allocations were restored
     */
    public synchronized int restore() {
        List<Allocation> loaded = stateFile.load(node.name()).orElse(List.of());
        saved = loaded;
        int n = 0;
        boolean refused = false;
        for (Allocation a : loaded) {
            List<String> unknown = new ArrayList<>();
            a.deviceIds().stream().filter(id -> !ids.contains(id)).forEach(unknown::add);
            a.gpus().stream().filter(g -> !gpus.containsKey(g)).forEach(unknown::add);
            if (!unknown.isEmpty() || a.deviceIds().stream().anyMatch(tenantOfId::containsKey)) {
                LOG.warn("{}: allocation of {} dropped: {} not on this node or held twice", stateFile,
                        a.tenantId(), unknown);
                continue;
            }
            refused |= !reserveHeld(a.reservations());
            record(a);
            n++;
        }
        if (refused) {
            reconcileLedger();
        }
        if (n > 0) {
            LOG.info("restored {} allocation(s) from {}", n, stateFile);
            changed();
        }
        return n;
    }

    /**
     * Saves the live allocations unless the store is known to hold exactly them (the last save succeeded and
     * nothing changed since). Idempotent; the plugin's reconciler calls it, so a save that failed while an
     * {@code Allocate} was rolled back is made good.
     *
     * @throws RuntimeException when the store cannot save them
     */
    public synchronized void ensureSaved() {
        List<Allocation> now = List.copyOf(allocations.values());
        if (!now.equals(saved)) {
            save(now);
            LOG.info("{}: saved again to hold the {} live allocation(s)", stateFile, now.size());
        }
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
        return allocate(containers, (a, tx) -> { });
    }

    /**
     * As {@link #allocate(List, Answer)}, with an answer that has no side effect to undo.
     */
    public synchronized List<Allocation> allocate(List<List<String>> containers, Consumer<Allocation> answer) {
        return allocate(containers, (a, tx) -> answer.accept(a));
    }

    /**
     * As {@link #allocate(List)}, with {@code answer} called for each container's allocation, inside the
     * transaction, before it is recorded (the device plugin computes the container's answer there, which a
     * sharing back end may refuse, and creates the host directories the answer names). When anything
     * throws, every step of the call is undone, newest first (see the class comment).
     *
     * @throws PluginException with the status to answer: the step's own, or {@code INTERNAL} for anything
     *                         unexpected (a state file that cannot be written); an undo that failed is
     *                         suppressed in it
     */
    public synchronized List<Allocation> allocate(List<List<String>> containers, Answer answer) {
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
        List<Allocation> before = List.copyOf(allocations.values());
        List<Allocation> done = new ArrayList<>();
        Map<Allocation, PodDecisions.PendingPod> fromPods = new LinkedHashMap<>();
        try (NodeTransaction tx = NodeTransaction.begin("Allocate " + containers)) {
            // ids handed out again: their containers are gone
            for (String id : seen) {
                String tenant = tenantOfId.get(id);
                if (tenant != null) {
                    int at = new ArrayList<>(allocations.keySet()).indexOf(tenant);
                    Allocation old = drop(tenant);
                    tx.undo("give " + tenant + " its allocation back", () -> reinstate(old, at));
                    LOG.info("{} handed out again: released the allocation of {}", id, tenant);
                }
            }
            for (List<String> req : containers) {
                Allocation a = allocateOne(req, fromPods, tx);   // registers the release of what it reserved
                answer.accept(a, tx);
                record(a);
                tx.undo("forget the allocation of " + a.tenantId(), () -> forget(a));
                done.add(a);
            }
            // registered first: a save that throws may have replaced the file all the same
            tx.undo("save the state as it was before the call", () -> save(before));
            save(List.copyOf(allocations.values()));
            List<PodDecisions.PendingPod> marked = new ArrayList<>();
            tx.undo("take back the pods' marks", () -> withdraw(marked));
            for (Map.Entry<Allocation, PodDecisions.PendingPod> e : fromPods.entrySet()) {
                marked.add(e.getValue());   // before the call: a mark that fails may still have been written
                decisions.applied(e.getValue(), e.getKey().deviceIds());
            }
            tx.commit();
        } catch (PluginException e) {
            throw e;
        } catch (RuntimeException e) {
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

    /**
     * As {@link #preferred(List, List, int)}, naming the request's field {@code field} in refusals.
     *
     * <p><b>Replicas taken, as the kubelet counts them.</b> The kubelet offers only ids whose containers are
     * gone, so an allocation holding an offered id belongs to a container that is gone; the pool still holds
     * it (it is released when one of its ids is handed out again). NVIDIA's {@code distributed} policy counts
     * a GPU's replicas taken from the kubelet's offer, so such an allocation counts for none. The choice is
     * therefore made a second time with those allocations taken out of the ledger for the trial (ids of a gone
     * allocation on their own GPU preferred for that GPU, so that handing them out releases it), and kept when
     * {@code Allocate} of it, which releases exactly the allocations of the ids it is handed, would give the
     * container at least as many distinct GPUs as the first choice. Nothing changes: the trials are taken
     * back before this returns.
     */
    public synchronized List<String> preferred(String field, List<String> available, List<String> mustInclude, int size) {
        PreferredAllocation choice = new PreferredAllocation(this, engine, ledger, slotMemoryBytes);
        List<String> held = choice.choose(field, available, mustInclude, size);
        Set<String> gone = new LinkedHashSet<>();
        for (String id : available) {
            String tenant = tenantOfId.get(id);
            if (tenant != null && allHealthy(allocations.get(tenant))) {
                gone.add(tenant);
            }
        }
        if (gone.isEmpty()) {
            return held;
        }
        List<String> counted;
        try {
            counted = withReleased(gone, "count replicas as the kubelet does",
                    () -> choice.choose(field, goneFirst(available, gone), mustInclude, size));
        } catch (RuntimeException e) {
            LOG.warn("preferred allocation: counting replicas as the kubelet does failed, keeping the first choice: {}",
                    e.toString());
            return held;
        }
        if (counted.equals(held)) {
            return held;
        }
        return gpusAllocateGives(counted) >= gpusAllocateGives(held) ? counted : held;
    }

    /** Whether every GPU an allocation holds is healthy (only those are taken out for a trial and put back). */
    private boolean allHealthy(Allocation a) {
        return a.reservations().stream().flatMap(p -> p.gpuUuids().stream()).allMatch(g -> healthOf(g) == Health.HEALTHY);
    }

    /**
     * {@code available} with, on the positions of each GPU's ids, first the ids held by a gone allocation on
     * their own GPU, then those held by a gone allocation elsewhere, then the rest, each in the kubelet's order;
     * the order of GPUs is the kubelet's.
     */
    private List<String> goneFirst(List<String> available, Set<String> gone) {
        Map<String, List<List<String>>> byHome = new LinkedHashMap<>();
        for (String id : available) {
            String home = VirtualDevice.homeOf(id);
            String tenant = tenantOfId.get(id);
            int rank = tenant == null || !gone.contains(tenant) ? 2 : home.equals(gpuOf(id)) ? 0 : 1;
            byHome.computeIfAbsent(home, h -> List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>())).get(rank).add(id);
        }
        Map<String, java.util.Iterator<String>> next = new HashMap<>();
        byHome.forEach((home, ranks) -> next.put(home, ranks.stream().flatMap(List::stream).toList().iterator()));
        List<String> out = new ArrayList<>(available.size());
        available.forEach(id -> out.add(next.get(VirtualDevice.homeOf(id)).next()));
        return out;
    }

    /**
     * Runs {@code step} with the allocations of {@code tenants} taken out of the records and the ledger, and
     * puts them back, at their old positions, before returning (also when {@code step} throws).
     */
    private <T> T withReleased(Set<String> tenants, String why, java.util.function.Supplier<T> step) {
        try (NodeTransaction tx = NodeTransaction.begin("trial: " + why)) {
            for (String tenant : tenants) {
                int at = new ArrayList<>(allocations.keySet()).indexOf(tenant);
                Allocation old = drop(tenant);
                tx.undo("give " + tenant + " its allocation back", () -> reinstate(old, at));
            }
            return step.get();
        }
    }

    /**
     * How many distinct GPUs {@code Allocate} of {@code req} would give the container now (the plugin's own
     * decision, after releasing the allocations of the ids it hands out again); 0 when it would refuse. Nothing
     * changes.
     */
    private int gpusAllocateGives(List<String> req) {
        Set<String> handedOut = new LinkedHashSet<>();
        req.forEach(id -> {
            if (tenantOfId.containsKey(id)) {
                handedOut.add(tenantOfId.get(id));
            }
        });
        try {
            return withReleased(handedOut, "Allocate " + req, () -> {
                try (NodeTransaction tx = NodeTransaction.begin("trial: Allocate " + req)) {
                    return place(req, tx).gpus().size();
                }
            });
        } catch (RuntimeException refused) {
            return 0;
        }
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

    private Allocation allocateOne(List<String> req, Map<Allocation, PodDecisions.PendingPod> fromPods, NodeTransaction tx) {
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
            if (reserveOnce(p)) {
                tx.undo("release " + p.tenantId(), () -> engine.release(p.tenantId()));
            }
            Allocation a = new Allocation(req, bind(req, p.gpuUuids()), p, Optional.of(pod.key()));
            fromPods.put(a, pod);
            return a;
        }
        return place(req, tx);
    }

    /**
     * The plugin's own decision: a slot-sized claim, on the ids' home GPUs if they can take it, else
     * anywhere; when no {@code req.size()} distinct GPUs can take one, one replica per id spread and
     * stacked evenly over the GPUs ({@link Replicas}). What the engine commits is released by {@code tx}'s
     * rollback.
     */
    private Allocation place(List<String> req, NodeTransaction tx) {
        String tenant = "devices/" + new TreeSet<>(req).first();
        Set<String> homes = new LinkedHashSet<>();
        req.forEach(id -> homes.add(VirtualDevice.homeOf(id)));
        Claim.Builder b = Claim.builder(tenant).gpus(req.size()).memoryBytes(slotMemoryBytes).compute(0, 100);
        if (homes.size() == req.size()) {
            Selectors.Builder s = Selectors.builder();
            homes.forEach(s::includeUuid);
            PlacementResult r = engine.place(b.selectors(s.build()).build());
            if (r instanceof PlacementResult.Placed placed) {
                tx.undo("release " + tenant, () -> engine.release(tenant));
                return new Allocation(req, bind(req, placed.placement().gpuUuids()), placed.placement(), Optional.empty());
            }
        }
        PlacementResult r = engine.place(b.selectors(Selectors.none()).build());
        if (r instanceof PlacementResult.Placed placed) {
            tx.undo("release " + tenant, () -> engine.release(tenant));
            return new Allocation(req, bind(req, placed.placement().gpuUuids()), placed.placement(), Optional.empty());
        }
        if (req.size() > 1) {
            return new Replicas(engine, slotMemoryBytes).allocate(tenant, req, node.name(), tx);
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

    /** Reserves a placement in the ledger; a refusal is logged (the placement is applied all the same). */
    private boolean reserveOnce(Placement p) {
        try {
            ReserveResult r = ledger.reserve(p);
            if (r instanceof ReserveResult.Refused refused) {
                LOG.warn("placement of {} applied although this node's ledger refuses it: {}", p.tenantId(), refused.summary());
                return false;
            }
            return true;
        } catch (QgpuException e) {
            LOG.warn("placement of {} applied although this node's ledger refuses it: {}", p.tenantId(), e.getMessage());
            return false;
        }
    }

    /** Reserves placements held before (restored, or given back); false when the ledger refused any. */
    private boolean reserveHeld(List<Placement> ps) {
        boolean all = true;
        for (Placement p : ps) {
            try {
                all &= ledger.reserve(p) instanceof ReserveResult.Reserved;
            } catch (QgpuException e) {
                all = false;
            }
        }
        return all;
    }

    /**
     * Rebuilds the ledger's reservations from the live allocations, on the GPUs as they are (a GPU that
     * turned unhealthy keeps the tenants it had): for an allocation held before that the ledger no longer
     * admits as a new reservation.
     */
    private void reconcileLedger() {
        List<Placement> all = new ArrayList<>();
        allocations.values().forEach(a -> all.addAll(a.reservations()));
        ReconcileReport report = ledger.reconcile(all);
        for (ReconcileReport.Difference d : report.of(ReconcileReport.Kind.REFUSED)) {
            LOG.warn("placement of {} applied although this node's ledger refuses it: {}", d.tenant(), d.reasons());
        }
    }

    private void record(Allocation a) {
        allocations.put(a.tenantId(), a);
        a.deviceIds().forEach(id -> tenantOfId.put(id, a.tenantId()));
    }

    /** Takes a recorded allocation out of the records (its reservations are the caller's). */
    private void forget(Allocation a) {
        if (allocations.remove(a.tenantId(), a)) {
            a.deviceIds().forEach(id -> tenantOfId.remove(id, a.tenantId()));
        }
    }

    /** Releases an allocation: its reservations and its record. */
    private Allocation drop(String tenant) {
        Allocation a = allocations.get(tenant);
        a.reservations().forEach(r -> engine.release(r.tenantId()));
        forget(a);
        return a;
    }

    /** The undo of {@link #drop}: records the allocation again at its old position and reserves it again. */
    private void reinstate(Allocation a, int position) {
        List<Allocation> order = new ArrayList<>(allocations.values());
        order.add(Math.max(0, Math.min(position, order.size())), a);
        allocations.clear();
        order.forEach(x -> allocations.put(x.tenantId(), x));
        a.deviceIds().forEach(id -> tenantOfId.put(id, a.tenantId()));
        if (!reserveHeld(a.reservations())) {
            reconcileLedger();   // a GPU turned unhealthy since: the tenant it had stays
        }
    }

    /** Takes back the marks of these pods, oldest first; every one is attempted. */
    private void withdraw(List<PodDecisions.PendingPod> marked) {
        RuntimeException failed = null;
        for (PodDecisions.PendingPod pod : marked) {
            try {
                decisions.withdrawn(pod);
            } catch (RuntimeException again) {
                LOG.error("pod {}: the allocation failed, but its mark {} could not be taken back: {}", pod.key(),
                        Names.ALLOCATED, again.getMessage());
                if (failed == null) {
                    failed = new IllegalStateException("the mark " + Names.ALLOCATED + " of pod " + pod.key()
                            + " could not be taken back: " + again.getMessage(), again);
                } else {
                    failed.addSuppressed(again);
                }
            }
        }
        if (failed != null) {
            throw failed;
        }
    }

    private void save(List<Allocation> list) {
        saved = null;   // unknown until the store says it kept them
        stateFile.save(node.name(), list);
        saved = list;
    }

    /** Sends every subscriber the current list; one that throws is logged and sent it again by the reconciler. */
    private void changed() {
        List<VirtualDevice> now = devices();
        for (Map.Entry<Long, Subscriber> e : subscribers.entrySet()) {
            send(e.getKey(), e.getValue(), now);
        }
    }

    private void send(long id, Subscriber s, List<VirtualDevice> now) {
        try {
            s.sent = null;
            s.listener.accept(now);
            s.sent = now;
        } catch (RuntimeException e) {
            LOG.warn("device list subscriber {} failed; the list is sent again by the reconciler: {}", id, e.getMessage());
        }
    }
}
