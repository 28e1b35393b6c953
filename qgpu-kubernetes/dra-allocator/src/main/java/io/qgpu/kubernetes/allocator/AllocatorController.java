package io.qgpu.kubernetes.allocator;

import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.PodResourceClaim;
import io.fabric8.kubernetes.api.model.PodResourceClaimStatus;
import io.fabric8.kubernetes.api.model.PodSchedulingGate;
import io.fabric8.kubernetes.api.model.resource.v1.DeviceClass;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaim;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceClaimBuilder;
import io.fabric8.kubernetes.api.model.resource.v1.ResourceSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.qgpu.kubernetes.node.AgentClients;
import io.qgpu.kubernetes.node.dra.DraNames;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The allocator against the API server: informers on ResourceSlices, DeviceClasses, ResourceClaims and Pods feed
 * a {@link DraAllocator}, and one worker allocates the claims of the pods that carry the scheduling gate
 * {@value DraNames#SCHEDULING_GATE}, then removes the gate.
 *
 * <p><b>A pass</b> runs after every change that can matter (a slice, a claim, a class, a pod) and after a failed
 * write (after a delay); it takes the gated pods in order of pod priority (higher first), then creation time (then
 * the order the informer delivered them, as the API server's creation times have whole seconds), and for each:
 * <ol>
 *   <li>finds its claims: {@code resourceClaimName}, or the claim generated from {@code resourceClaimTemplateName}
 *       as {@code status.resourceClaimStatuses} names it; a claim not there yet waits for its informer event;</li>
 *   <li>a pod none of whose claims uses the allocator's classes is released (the gate removed): the webhook gates a
 *       pod whose claims it could not read;</li>
 *   <li>decides ({@link DraAllocator#decide}); a refusal leaves the pod gated, with a Warning Event
 *       {@value #REASON_UNSCHEDULABLE} on it giving qgpu's reasons (once per new reason);</li>
 *   <li>writes each claim: reads it from the API server (the informer's copy may be behind), then the finalizer
 *       {@value DraNames#ALLOCATION_FINALIZER} (an update with the claim's {@code resourceVersion}), then
 *       {@code status.allocation} through the status subresource with the {@code resourceVersion} that update
 *       returned. A conflict (409) or a claim allocated meanwhile (by
 *       kube-scheduler or anyone) gives the decision's reservations back; the claim is taken as it now is, and the
 *       pod decided again in the next pass;</li>
 *   <li>removes the gate (an edit of the pod); kube-scheduler then places the pod on the node the allocation
 *       selects and adds it to the claims' {@code reservedFor}.</li>
 * </ol>
 * <p>A claim allocated for a pod that is gone before kube-scheduler reserved it is deallocated ({@link #sweep}).
 *
 * <p>Nothing is kept outside the API server: on start the informers' lists are the state, so a restart (after
 * {@code kill -9}) allocates nothing twice: a claim allocated before the crash is counted as allocated, a pod whose
 * claims are all allocated is only released.
 *
 * <p><b>Leader election</b>: passes run only while {@code leading} says so (one replica allocates at a time); the
 * informers run on every replica, so a new leader starts from the cluster's state.
 *
 * <p>Thread safety: thread-safe. Informer handlers only update the {@link DraAllocator} (which serialises itself)
 * and ask for a pass; passes run on the controller's one worker thread.
 */
public final class AllocatorController implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AllocatorController.class);
    /** The reason of the Warning Event on a pod whose claims do not fit. */
    public static final String REASON_UNSCHEDULABLE = "QgpuUnschedulable";
    /** The reason of the Normal Event on a pod whose claims were allocated. */
    public static final String REASON_ALLOCATED = "QgpuAllocated";
    /**
     * The annotation on a claim this allocator allocated: the uid of the pod it was allocated for. A claim allocated
     * for a pod that is gone before anyone reserved it is deallocated ({@link #sweep}).
     */
    public static final String ALLOCATED_FOR = "qgpu.io/allocated-for-pod";
    /** How long after a failed write the pod is tried again. */
    static final Duration RETRY = Duration.ofSeconds(1);
    /** How long {@link #close} waits for the pass under way. */
    static final Duration CLOSE_WAIT = Duration.ofSeconds(10);

    private final KubernetesClient client;
    private final DraAllocator allocator;
    private final Function<Collection<ResourceSlice>, List<PublishedNode>> inventory;
    private final BooleanSupplier leading;
    private final ScheduledExecutorService worker;
    private final AtomicBoolean passQueued = new AtomicBoolean();
    private final AtomicBoolean inventoryDirty = new AtomicBoolean(true);
    /** The last refusal reported per pod uid, so an Event is written once per new reason. */
    private final Map<String, String> reported = new HashMap<>();
    private final List<SharedIndexInformer<?>> informers = new ArrayList<>();
    /** When each pod was first seen (a sequence number): arrival order among pods created in the same second. */
    private final Map<String, Long> arrival = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicLong arrivals = new java.util.concurrent.atomic.AtomicLong();
    private SharedIndexInformer<ResourceSlice> slices;
    private SharedIndexInformer<DeviceClass> classes;
    private SharedIndexInformer<ResourceClaim> claims;
    private SharedIndexInformer<Pod> pods;
    private volatile boolean closed;
    /**
     * Set once every informer has synced ({@link #start}): no pass runs before. The informers sync one after another,
     * and a pass on half-filled stores would take a live pod's claim for one whose pod is gone ({@link #sweep}).
     */
    private volatile boolean synced;

    /**
     * @param inventory the published nodes of a set of slices ({@code SliceInventory})
     * @param leading   whether this replica allocates now (always true without leader election)
     */
    public AllocatorController(KubernetesClient client, DraAllocator allocator,
                               Function<Collection<ResourceSlice>, List<PublishedNode>> inventory, BooleanSupplier leading) {
        this.client = client;
        this.allocator = allocator;
        this.inventory = inventory;
        this.leading = leading;
        this.worker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "qgpu-dra-allocator");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Starts the informers, waits until they have synced, counts every allocated claim, and runs the first pass.
     *
     * @throws TimeoutException if the informers do not sync within {@code timeout}
     */
    public synchronized void start(Duration timeout) throws TimeoutException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        slices = client.resources(ResourceSlice.class).runnableInformer(0);
        slices.addEventHandler(handler(o -> inventoryChanged(), o -> inventoryChanged()));
        classes = client.resources(DeviceClass.class).runnableInformer(0);
        classes.addEventHandler(handler(o -> pass(), o -> pass()));
        claims = client.resources(ResourceClaim.class).inAnyNamespace().runnableInformer(0);
        claims.addEventHandler(handler(c -> {
            allocator.claimChanged(c);
            pass();
        }, c -> {
            allocator.claimGone(c);
            pass();
        }));
        pods = client.pods().inAnyNamespace().runnableInformer(0);
        pods.addEventHandler(handler(p -> {
            arrival.putIfAbsent(p.getMetadata().getUid(), arrivals.incrementAndGet());
            pass();
        }, p -> {
            reported.remove(p.getMetadata().getUid());
            arrival.remove(p.getMetadata().getUid());
            pass();
        }));
        informers.addAll(List.of(slices, classes, claims, pods));
        AgentClients.awaitSynced(slices, deadline, "ResourceSlice");
        AgentClients.awaitSynced(classes, deadline, "DeviceClass");
        AgentClients.awaitSynced(claims, deadline, "ResourceClaim");
        AgentClients.awaitSynced(pods, deadline, "Pod");
        refreshInventory();
        for (ResourceClaim c : claims.getStore().list()) {
            allocator.claimChanged(c);
        }
        LOG.info("in step with the cluster: {} published node(s), {} reservation(s) of allocated claims",
                allocator.ledger().nodes().size(), allocator.ledger().size());
        synced = true;
        pass();
    }

    private <T> ResourceEventHandler<T> handler(java.util.function.Consumer<T> changed, java.util.function.Consumer<T> gone) {
        return new ResourceEventHandler<>() {
            @Override
            public void onAdd(T o) {
                run(changed, o);
            }

            @Override
            public void onUpdate(T before, T o) {
                run(changed, o);
            }

            @Override
            public void onDelete(T o, boolean finalStateUnknown) {
                run(gone, o);
            }

            private void run(java.util.function.Consumer<T> c, T o) {
                try {
                    c.accept(o);
                } catch (RuntimeException e) {
                    LOG.warn("an event was not applied: {}", e.toString(), e);
                }
            }
        };
    }

    /** A slice changed: the inventory is read again once, at the next pass (not once per event of a burst). */
    private void inventoryChanged() {
        inventoryDirty.set(true);
        pass();
    }

    /** Reads the slices into the allocator when they changed since the last read. */
    private void refreshInventory() {
        if (slices != null && inventoryDirty.getAndSet(false)) {
            allocator.inventory(inventory.apply(slices.getStore().list()));
        }
    }

    /** Asks for a pass (one is queued at most). */
    public void pass() {
        if (closed || !synced) {
            return;   // start() runs the first pass once every store is filled
        }
        if (passQueued.compareAndSet(false, true)) {
            try {
                worker.execute(this::runPass);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                passQueued.set(false);   // closed meanwhile
            }
        }
    }

    /** The claims informer's store (started by {@link #start}): the webhook reads claims from it. */
    io.fabric8.kubernetes.client.informers.cache.Store<ResourceClaim> claimStore() {
        return claims.getStore();
    }

    /** The slices informer's store (started by {@link #start}): tests wait on it to know what the informer holds. */
    io.fabric8.kubernetes.client.informers.cache.Store<ResourceSlice> sliceStore() {
        return slices.getStore();
    }

    /** Runs {@code r} on the worker after the passes queued before it (tests wait on it). */
    void afterPasses(Runnable r) {
        worker.execute(r);
    }

    private void passLater() {
        if (!closed) {
            try {
                worker.schedule(this::pass, RETRY.toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // closed meanwhile
            }
        }
    }

    private void runPass() {
        passQueued.set(false);
        if (closed) {
            return;
        }
        try {
            refreshInventory();
        } catch (RuntimeException e) {
            inventoryDirty.set(true);
            LOG.error("the ResourceSlices could not be read: {}", e.toString(), e);
            passLater();
            return;
        }
        if (!leading.getAsBoolean()) {
            return;
        }
        try {
            sweep();
            for (Pod p : gatedPods()) {
                if (closed) {
                    return;
                }
                try {
                    handle(p);
                } catch (KubernetesClientException e) {
                    LOG.warn("pod {}/{}: {} (retried in {})", p.getMetadata().getNamespace(), p.getMetadata().getName(),
                            e.getMessage(), RETRY);
                    passLater();
                }
            }
        } catch (RuntimeException e) {
            LOG.error("allocation pass failed: {}", e.toString(), e);
            passLater();
        }
    }

    /**
     * The gated pods in the order they are allocated: pod priority (higher first), creation time, then the order the
     * informer delivered them (the API server's creation time has whole seconds), then namespace and name.
     */
    List<Pod> gatedPods() {
        return pods.getStore().list().stream().filter(AllocatorController::gated)
                .filter(p -> p.getMetadata().getDeletionTimestamp() == null)
                .sorted(Comparator.<Pod>comparingInt(p -> -(p.getSpec().getPriority() == null ? 0 : p.getSpec().getPriority()))
                        .thenComparing(p -> created(p))
                        .thenComparing(p -> arrival.getOrDefault(p.getMetadata().getUid(), Long.MAX_VALUE))
                        .thenComparing(p -> p.getMetadata().getNamespace())
                        .thenComparing(p -> p.getMetadata().getName()))
                .toList();
    }

    private static Instant created(Pod p) {
        String t = p.getMetadata().getCreationTimestamp();
        try {
            return t == null ? Instant.MAX : Instant.parse(t);
        } catch (RuntimeException e) {
            return Instant.MAX;
        }
    }

    static boolean gated(Pod p) {
        List<PodSchedulingGate> gates = p.getSpec() == null ? null : p.getSpec().getSchedulingGates();
        return gates != null && gates.stream().anyMatch(g -> DraNames.SCHEDULING_GATE.equals(g.getName()));
    }

    private void handle(Pod pod) {
        Optional<List<ResourceClaim>> found = claimsOf(pod);
        if (found.isEmpty()) {
            return;
        }
        DraAllocator.Decision d = allocator.decide(found.get(), name -> Optional.ofNullable(classes.getStore().getByKey(name)));
        if (d instanceof DraAllocator.Decision.NotOurs) {
            ungate(pod);
            return;
        }
        if (d instanceof DraAllocator.Decision.Refused r) {
            report(pod, r.reason());
            return;
        }
        DraAllocator.Decision.Allocate a = (DraAllocator.Decision.Allocate) d;
        int written = 0;
        try {
            for (DraAllocator.ClaimAllocation c : a.claims()) {
                if (!write(c, pod)) {
                    allocator.abandon(a.claims().subList(written, a.claims().size()));
                    passLater();
                    return;
                }
                written++;
            }
        } catch (RuntimeException e) {
            allocator.abandon(a.claims().subList(written, a.claims().size()));
            throw e;
        }
        LOG.info("pod {}/{}: {} claim(s) allocated on node {}", pod.getMetadata().getNamespace(), pod.getMetadata().getName(),
                a.claims().size(), a.node());
        event(pod, "Normal", REASON_ALLOCATED, "qgpu allocated " + a.claims().stream().map(c -> c.claim().getMetadata().getName())
                .toList() + " on node " + a.node());
        reported.remove(pod.getMetadata().getUid());
        ungate(pod);
    }

    /**
     * Deallocates what was allocated for nothing: a claim this allocator allocated ({@value #ALLOCATED_FOR}) whose
     * pod is gone (deleted, or replaced by a pod of another uid) before kube-scheduler reserved the claim for it
     * ({@code reservedFor} empty). The resourceclaim controller deallocates a claim only when its {@code reservedFor}
     * empties, which never happens to a claim never reserved; so the allocator undoes its own allocation: the
     * allocation cleared through the status subresource, then its finalizer removed, each with the claim's
     * {@code resourceVersion} (a conflict leaves it to the next pass).
     */
    void sweep() {
        java.util.Set<String> livePods = new java.util.HashSet<>();
        for (Pod p : pods.getStore().list()) {
            livePods.add(p.getMetadata().getUid());
        }
        for (ResourceClaim rc : claims.getStore().list()) {
            Map<String, String> notes = rc.getMetadata().getAnnotations();
            String forPod = notes == null ? null : notes.get(ALLOCATED_FOR);
            if (forPod == null || livePods.contains(forPod) || rc.getStatus() == null || rc.getStatus().getAllocation() == null
                    || (rc.getStatus().getReservedFor() != null && !rc.getStatus().getReservedFor().isEmpty())) {
                continue;
            }
            String ns = rc.getMetadata().getNamespace();
            String name = rc.getMetadata().getName();
            try {
                ResourceClaim cleared = client.resources(ResourceClaim.class).inNamespace(ns).resource(new ResourceClaimBuilder(rc)
                        .editStatus().withAllocation(null).endStatus().build()).updateStatus();
                ResourceClaimBuilder b = new ResourceClaimBuilder(cleared).editMetadata().removeFromAnnotations(ALLOCATED_FOR).endMetadata();
                if (cleared.getMetadata().getFinalizers() != null) {
                    b.editMetadata().withFinalizers(cleared.getMetadata().getFinalizers().stream()
                            .filter(f -> !DraNames.ALLOCATION_FINALIZER.equals(f)).toList()).endMetadata();
                }
                client.resources(ResourceClaim.class).inNamespace(ns).resource(b.build()).update();
                LOG.info("claim {}/{}: deallocated, its pod {} is gone and never reserved it", ns, name, forPod);
            } catch (KubernetesClientException e) {
                LOG.info("claim {}/{} not deallocated now ({}): next pass", ns, name, e.getCode());
            }
        }
    }

    /** The pod's claims, or empty when one is not there yet (its informer event brings the next pass). */
    private Optional<List<ResourceClaim>> claimsOf(Pod pod) {
        String ns = pod.getMetadata().getNamespace();
        List<ResourceClaim> out = new ArrayList<>();
        List<PodResourceClaim> refs = pod.getSpec().getResourceClaims() == null ? List.of() : pod.getSpec().getResourceClaims();
        for (PodResourceClaim ref : refs) {
            String name = ref.getResourceClaimName();
            if (name == null && ref.getResourceClaimTemplateName() != null) {
                name = generatedName(pod, ref.getName());
                if (name == null) {
                    return Optional.empty();
                }
            }
            if (name == null) {
                continue;
            }
            ResourceClaim rc = claims.getStore().getByKey(ns + "/" + name);
            if (rc == null) {
                return Optional.empty();
            }
            out.add(rc);
        }
        return Optional.of(out);
    }

    private static String generatedName(Pod pod, String podClaimName) {
        List<PodResourceClaimStatus> st = pod.getStatus() == null ? null : pod.getStatus().getResourceClaimStatuses();
        if (st == null) {
            return null;
        }
        return st.stream().filter(s -> podClaimName.equals(s.getName())).map(PodResourceClaimStatus::getResourceClaimName)
                .findFirst().orElse(null);
    }

    /**
     * Writes one claim's allocation: the finalizer, then the status. False when the claim changed meanwhile (409,
     * or allocated by someone else): the caller gives the decision back and decides again.
     */
    private boolean write(DraAllocator.ClaimAllocation c, Pod pod) {
        ResourceClaim decided = c.claim();
        String ns = decided.getMetadata().getNamespace();
        String name = decided.getMetadata().getName();
        try {
            // the claim as the API server has it now (the informer's copy may be behind): written with its
            // resourceVersion, so that a change after this read is a 409, never overwritten
            ResourceClaim rc = client.resources(ResourceClaim.class).inNamespace(ns).withName(name).get();
            if (rc == null || !decided.getMetadata().getUid().equals(rc.getMetadata().getUid())) {
                LOG.info("claim {}/{} was deleted (or replaced) while it was allocated: decided again", ns, name);
                return false;
            }
            if (rc.getStatus() != null && rc.getStatus().getAllocation() != null) {
                LOG.info("claim {}/{} was allocated meanwhile by someone else: taken as it is", ns, name);
                return false;
            }
            ResourceClaim current = rc;
            List<String> fin = rc.getMetadata().getFinalizers() == null ? List.of() : rc.getMetadata().getFinalizers();
            String podUid = pod.getMetadata().getUid();
            Map<String, String> notes = rc.getMetadata().getAnnotations() == null ? Map.of() : rc.getMetadata().getAnnotations();
            if (!fin.contains(DraNames.ALLOCATION_FINALIZER) || !podUid.equals(notes.get(ALLOCATED_FOR))) {
                ResourceClaimBuilder b = new ResourceClaimBuilder(rc);
                if (!fin.contains(DraNames.ALLOCATION_FINALIZER)) {
                    b.editMetadata().addToFinalizers(DraNames.ALLOCATION_FINALIZER).endMetadata();
                }
                b.editMetadata().addToAnnotations(ALLOCATED_FOR, podUid).endMetadata();
                current = client.resources(ResourceClaim.class).inNamespace(ns).resource(b.build()).update();
            }
            if (current.getStatus() != null && current.getStatus().getAllocation() != null) {
                LOG.info("claim {}/{} was allocated meanwhile by someone else: taken as it is", ns, name);
                return false;
            }
            ResourceClaim allocatedClaim = new ResourceClaimBuilder(current).editOrNewStatus()
                    .withAllocation(c.allocation()).endStatus().build();
            client.resources(ResourceClaim.class).inNamespace(ns).resource(allocatedClaim).updateStatus();
            return true;
        } catch (KubernetesClientException e) {
            if (e.getCode() == 409 || e.getCode() == 404) {
                LOG.info("claim {}/{} changed while it was allocated ({}): decided again", ns, name, e.getCode());
                return false;
            }
            throw e;
        }
    }

    private void ungate(Pod pod) {
        client.pods().inNamespace(pod.getMetadata().getNamespace()).withName(pod.getMetadata().getName()).edit(p -> {
            if (p.getSpec().getSchedulingGates() == null) {
                return p;
            }
            return new PodBuilder(p).editSpec().withSchedulingGates(p.getSpec().getSchedulingGates().stream()
                    .filter(g -> !DraNames.SCHEDULING_GATE.equals(g.getName())).toList()).endSpec().build();
        });
    }

    private void report(Pod pod, String reason) {
        String uid = pod.getMetadata().getUid();
        if (reason.equals(reported.get(uid))) {
            return;
        }
        reported.put(uid, reason);
        LOG.info("pod {}/{} stays gated: {}", pod.getMetadata().getNamespace(), pod.getMetadata().getName(), reason);
        event(pod, "Warning", REASON_UNSCHEDULABLE, reason);
    }

    private void event(Pod pod, String type, String reason, String message) {
        String ns = pod.getMetadata().getNamespace();
        String now = Instant.now().toString();
        try {
            client.v1().events().inNamespace(ns).resource(new EventBuilder()
                    .withNewMetadata().withGenerateName(pod.getMetadata().getName() + ".").withNamespace(ns).endMetadata()
                    .withInvolvedObject(new ObjectReferenceBuilder().withKind("Pod").withApiVersion("v1").withNamespace(ns)
                            .withName(pod.getMetadata().getName()).withUid(pod.getMetadata().getUid()).build())
                    .withType(type).withReason(reason).withMessage(truncate(message))
                    .withFirstTimestamp(now).withLastTimestamp(now).withCount(1)
                    .withNewSource().withComponent("qgpu-dra-allocator").endSource()
                    .build()).create();
        } catch (KubernetesClientException e) {
            LOG.warn("event {} on pod {}/{} not written: {}", reason, ns, pod.getMetadata().getName(), e.getMessage());
        }
    }

    /** An Event's message is at most 1 KiB on the API server; longer reasons are cut there with a mark. */
    static String truncate(String m) {
        return m.length() <= 1024 ? m : m.substring(0, 1000) + " ... (" + (m.length() - 1000) + " more characters)";
    }

    /**
     * Stops the worker (the pod being written is finished, for up to {@link #CLOSE_WAIT}; the pass stops after it)
     * and the informers; a second call does nothing. The worker is not interrupted inside a request to the API
     * server, which would break the client's connection under it.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        worker.shutdown();
        try {
            if (!worker.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.warn("the allocation pass did not finish within {}: interrupted", CLOSE_WAIT);
                worker.shutdownNow();
            }
        } catch (InterruptedException e) {
            worker.shutdownNow();
            Thread.currentThread().interrupt();
        }
        informers.forEach(SharedIndexInformer::close);
    }
}
