package io.qgpu.kubernetes.dra;

import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import io.qgpu.kubernetes.node.CdiSpecs;
import io.qgpu.kubernetes.node.ContainerEdits;
import io.qgpu.kubernetes.node.PlacementEdits;
import io.qgpu.kubernetes.node.mps.MpsNode;
import io.qgpu.kubernetes.node.reconcile.NodeReconciler;
import io.qgpu.kubernetes.node.reconcile.NodeResource;
import io.qgpu.kubernetes.node.reconcile.NodeTransaction;
import io.qgpu.kubernetes.node.reconcile.OwnedDirectories;
import io.qgpu.kubernetes.node.sharing.SharingBackend;
import io.qgpu.kubernetes.node.sharing.SharingEdits;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver's desired state, the prepared claims: each claim's placement reserved in qgpu's {@link Ledger} and
 * the whole set kept in the {@link ClaimStore}; and the node resources that follow from it, which the driver's
 * {@link NodeReconciler} keeps in line: each claim's CDI spec ({@link #cdiSpecs()}), with
 * {@code --sharing hami-core} its HAMi-core cache directory under the cache root ({@link #cacheDirectories()}) and
 * the node's shared HAMi-core paths ({@link #sharedPaths()}: the lock directory and the {@code ld.so.preload} file).
 *
 * <p>{@link #prepare} is one {@link NodeTransaction}: compute the container edits, reserve, record and save,
 * create the claim's fresh directories, with {@code --sharing mps} ({@link #attachMps}) make its GPUs' MPS side
 * hold (a shared claim's GPUs: compute mode, a running daemon, the daemon's limits with the claim counted; an
 * exclusive claim's GPUs: sharing stopped, their compute mode restored), and write its spec (all through the
 * reconciler, so the answer comes only once they hold), answer. Anything that fails undoes all of it: no reservation, saved claim, directory or spec
 * outlives a failed answer. A prepare of a claim already prepared answers the same devices and reserves nothing
 * more. A prepare may carry an {@link Admission}, checked under this object's lock against the claims prepared
 * then, before anything is reserved ({@link ClaimContainers}: a container gets one claim of this driver). {@link #unprepare} releases and saves, then removes the claim's spec and directory (what cannot be
 * removed now is removed by a later pass). {@link #restore()} rebuilds the reservations after a restart;
 * writing back missing specs and removing those of claims the store does not hold (left by a crash between
 * writing and saving, or by claims from before a reboot) is the reconciler's first pass.
 *
 * <pre>{@code
 * PreparedClaims claims = new PreparedClaims(ledger, new DriverStateFile(file, node), new CdiSpecs(cdiRoot), edits, Optional.empty());
 * claims.restore();
 * NodeReconciler r = new NodeReconciler("qgpu-dra-driver", claims.resources(), settings, ticker);
 * claims.attach(r);
 * PreparedClaim done = claims.prepare(plan);       // devices with their CDI ids
 * claims.unprepare(plan.uid());
 * }</pre>
 *
 * <p>Thread safety: thread-safe. Every method holds this object's lock, so that the reservation, the saved set
 * and the side effects change together: without it two prepares could each save a set missing the other's
 * claim, and after a restart the ledger would forget a reservation and admit more than the GPU holds
 * ({@code ConcurrentPrepareTest} fails that way with the lock removed). The reconciler's own passes read the
 * desired state from an immutable snapshot taken at each change, without that lock (the lock order is always
 * this object, then the reconciler).
 */
final class PreparedClaims {
    private static final Logger LOG = LoggerFactory.getLogger(PreparedClaims.class);
    /** The kind of {@link #sharedPaths()} in the reconciler's reports. */
    static final String SHARED_PATHS = "shared-path";

    private final Ledger ledger;
    private final ClaimStore store;
    private final CdiSpecs cdi;
    private final PlacementEdits edits;
    private final Map<String, PreparedClaim> byUid = new LinkedHashMap<>();
    /**
     * {@link #byUid} as of its last change, read by the reconciler's passes without this object's lock: the lock
     * order is always this object, then the reconciler (a prepare holds this and ensures through the reconciler).
     */
    private volatile Map<String, PreparedClaim> snapshot = Map.of();
    private final NodeResource<String> cdiSpecs;
    private final Optional<OwnedDirectories> cacheDirectories;
    private final NodeResource<SharingEdits.HostPath> sharedPaths;
    private NodeReconciler reconciler;
    private MpsNode mps;

    /**
     * @param cacheRoot with {@code --sharing hami-core}: the root of the per-claim cache directories, which this
     *                  driver owns (a directory there that no claim wants is removed)
     */
    PreparedClaims(Ledger ledger, ClaimStore store, CdiSpecs cdi, PlacementEdits edits, Optional<Path> cacheRoot) {
        this.ledger = ledger;
        this.store = store;
        this.cdi = cdi;
        this.edits = edits;
        this.cdiSpecs = NodeResource.of("cdi-spec", this::uids, cdi::transientIds, this::ensureSpec, cdi::delete);
        this.cacheDirectories = cacheRoot.map(root -> new OwnedDirectories("hami-core-cache", root, this::freshDirectories,
                SharingEdits.HostDirectory.ANY_UID));
        this.sharedPaths = NodeResource.of(SHARED_PATHS, this::sharedPathsWanted, Set::of, SharingEdits.HostPath::create, p -> { });
    }

    /** Without a sharing back end's directories. */
    PreparedClaims(Ledger ledger, ClaimStore store, CdiSpecs cdi, PlacementEdits edits) {
        this(ledger, store, cdi, edits, Optional.empty());
    }

    /** Why a claim was not prepared, in words for the kubelet's per-claim error. */
    static final class RefusedException extends Exception {
        private static final long serialVersionUID = 1L;

        RefusedException(String message) {
            super(message);
        }
    }

    /**
     * A rule that may refuse a claim given the claims prepared on the node, checked by {@link #prepare(PreparedClaim,
     * Admission)} under this object's lock, before anything of the claim is reserved: two prepares at once see each
     * other (ClaimContainers: a container gets one claim of this driver).
     */
    @FunctionalInterface
    interface Admission {
        /** Admits every claim. */
        Admission ANY = prepared -> { };

        /**
         * @param prepared the claims prepared now, by uid (read-only)
         * @throws RefusedException saying why the claim is refused
         */
        void admit(Map<String, PreparedClaim> prepared) throws RefusedException;
    }

    /** The node's sharing back end ({@code --sharing}). */
    SharingBackend sharingBackend() {
        return edits.sharing().backend();
    }

    /** The node resources that follow from the prepared claims, in the order the reconciler ensures them. */
    List<NodeResource<?>> resources() {
        List<NodeResource<?>> out = new ArrayList<>();
        out.add(sharedPaths);
        cacheDirectories.ifPresent(out::add);
        out.add(cdiSpecs);
        return List.copyOf(out);
    }

    /** The CDI specs, one per prepared claim. */
    NodeResource<String> cdiSpecs() {
        return cdiSpecs;
    }

    /** With {@code --sharing hami-core}: the claims' cache directories. */
    Optional<OwnedDirectories> cacheDirectories() {
        return cacheDirectories;
    }

    /**
     * The host paths the sharing back end shares between claims (HAMi-core's lock directory and its
     * {@code ld.so.preload} file): ensured at each prepare before the spec is written, and on every pass (a file or
     * directory removed from the node comes back); never removed.
     */
    NodeResource<SharingEdits.HostPath> sharedPaths() {
        return sharedPaths;
    }

    /** Uses this reconciler (the agent's) for the side effects; without one a private one is made on first use. */
    synchronized void attach(NodeReconciler r) {
        this.reconciler = r;
    }

    /** With {@code --sharing mps}: the node's MPS side, which each prepare makes hold for the claim's GPUs. */
    synchronized void attachMps(MpsNode node) {
        this.mps = node;
    }

    private NodeReconciler reconciler() {
        if (reconciler == null) {
            reconciler = new NodeReconciler("prepared-claims", resources(), NodeReconciler.Settings.defaults(), System::nanoTime);
        }
        return reconciler;
    }

    /**
     * Rebuilds the reservations of the saved claims; call once before serving, then let the reconciler run a
     * pass. Claims saved before the node last booted are dropped (their containers are gone; the kubelet
     * prepares again what it restarts), and the state file is saved without them.
     */
    synchronized void restore() {
        Optional<ClaimStore.Saved> loaded = store.load();
        if (loaded.isEmpty()) {
            LOG.info("no state file yet: no prepared claim to restore");
            return;
        }
        ClaimStore.Saved saved = loaded.get();
        if (saved.anotherBoot().isPresent()) {
            LOG.warn("the state file was written before the node booted ({}): its {} claim(s) are not restored: {}",
                    saved.anotherBoot().get(), saved.claims().size(), saved.claims().stream().map(PreparedClaim::key).toList());
            store.save(List.of());
            return;
        }
        for (PreparedClaim c : saved.claims()) {
            ReserveResult r = ledger.reserve(c.placement());
            if (r instanceof ReserveResult.Refused f) {
                // kept, so that its unprepare still finds it; its GPUs are no longer what they were
                LOG.error("prepared claim {} ({}) cannot be reserved again: {}", c.key(), c.uid(), f.summary());
            }
            byUid.put(c.uid(), c);
        }
        published();
        LOG.info("{} prepared claim(s) restored", byUid.size());
    }

    /** The tenants the ledger holds (each a claim's uid); the chaos test checks them against the claims. */
    synchronized List<String> ledgerTenants() {
        return ledger.placements().stream().map(io.qgpu.api.Placement::tenantId).toList();
    }

    /** The prepared claim with this uid. */
    synchronized Optional<PreparedClaim> get(String uid) {
        return Optional.ofNullable(byUid.get(uid));
    }

    /** Every prepared claim, oldest first. */
    synchronized List<PreparedClaim> all() {
        return List.copyOf(byUid.values());
    }

    /**
     * Prepares a claim: the same answer again if it is prepared already.
     *
     * @param plan the claim with its placement and devices (CDI ids not yet set)
     * @return the claim as prepared, its devices with their CDI ids
     * @throws RefusedException when the ledger refuses the placement
     * @throws io.qgpu.api.InvalidValueException when the sharing back end refuses it
     * @throws Exception        when a side effect cannot be made to hold (nothing is left of the claim)
     */
    synchronized PreparedClaim prepare(PreparedClaim plan) throws Exception {
        return prepare(plan, Admission.ANY);
    }

    /**
     * As {@link #prepare(PreparedClaim)}, once {@code admission} admits the claim (it is not asked for a claim
     * prepared already: that one gets the same answer again).
     *
     * @param plan      the claim with its placement and devices (CDI ids not yet set)
     * @param admission checked under this object's lock against the claims prepared now, before anything is reserved
     * @throws RefusedException when the admission or the ledger refuses the claim (nothing of it is kept)
     * @throws Exception        as {@link #prepare(PreparedClaim)}
     */
    synchronized PreparedClaim prepare(PreparedClaim plan, Admission admission) throws Exception {
        PreparedClaim done = byUid.get(plan.uid());
        if (done != null) {
            return done;
        }
        admission.admit(Collections.unmodifiableMap(byUid));
        String uid = plan.uid();
        try (NodeTransaction tx = NodeTransaction.begin("prepare claim " + plan.key() + " (" + uid + ")")) {
            PlacementEdits.Edits e = edits.edits(plan.placement(), uid);
            if (ledger.reserve(plan.placement()) instanceof ReserveResult.Refused f) {
                throw new RefusedException("does not fit: " + f.summary());
            }
            tx.undo("release the reservation", () -> ledger.release(uid));
            PreparedClaim prepared = withCdiIds(plan);
            byUid.put(uid, prepared);
            published();
            tx.undo("forget the claim", () -> {
                byUid.remove(uid);
                published();
            });
            store.save(List.copyOf(byUid.values()));
            tx.undo("save the claims without it", () -> {
                byUid.remove(uid);
                published();
                store.save(List.copyOf(byUid.values()));
            });
            NodeReconciler r = reconciler();
            List<Path> fresh = fresh(e);
            if (cacheDirectories.isPresent()) {
                tx.undo("remove its directories", () -> r.removeNow(cacheDirectories.get(), fresh));
                r.removeNow(cacheDirectories.get(), fresh);   // a directory of the claim's starts empty
                r.ensureNow(cacheDirectories.get(), fresh);
            }
            r.ensureNow(sharedPaths, sharedOf(e));
            if (mps != null) {
                prepareMps(plan, r, tx);
            }
            tx.undo("remove its CDI spec", () -> r.removeNow(cdiSpecs, List.of(uid)));
            r.ensureNow(cdiSpecs, List.of(uid));
            tx.commit();
            return prepared;
        }
    }

    /**
     * Unprepares a claim: releases its share and saves; then removes its CDI spec and directories (what cannot be
     * removed now is left to the reconciler's next passes).
     *
     * @return whether it was prepared
     */
    synchronized boolean unprepare(String uid) {
        PreparedClaim c = byUid.get(uid);
        if (c == null) {
            return false;
        }
        try (NodeTransaction tx = NodeTransaction.begin("unprepare claim " + c.key() + " (" + uid + ")")) {
            byUid.remove(uid);
            published();
            tx.undo("keep the claim", () -> {
                byUid.put(uid, c);
                published();
            });
            ledger.release(uid);
            tx.undo("reserve it again", () -> ledger.reserve(c.placement()));
            store.save(List.copyOf(byUid.values()));
            tx.commit();
        }
        NodeReconciler r = reconciler();
        r.removeNow(cdiSpecs, List.of(uid));
        cacheDirectories.ifPresent(d -> r.removeNow(d, freshOf(c)));
        r.trigger();
        return true;
    }

    /**
     * The claim's GPUs under MPS, before it is answered: an exclusive claim stops sharing on its GPUs (their daemons
     * are given up, their compute mode restored: it may run several processes); a shared claim's GPUs get their
     * compute mode, a running daemon and the daemon's limits with this claim counted. A step that does not hold
     * refuses the claim (a client whose daemon does not run would run without MPS, unlimited); the undo asks for a
     * pass, which brings the GPUs back in line without the claim.
     */
    private void prepareMps(PreparedClaim plan, NodeReconciler r, NodeTransaction tx) throws Exception {
        tx.undo("bring its GPUs' MPS side back in line", r::trigger);
        List<String> exclusive = List.copyOf(MpsNode.exclusiveGpus(List.of(plan.placement())));
        if (!exclusive.isEmpty() && !mps.removeNow(r, exclusive)) {
            throw new IllegalStateException("MPS could not be stopped on GPU(s) " + exclusive + " for the exclusive claim: "
                    + r.failures().stream().filter(f -> exclusive.contains(f.key())).map(f -> f.kind() + " " + f.key() + ": " + f.error())
                    .toList());
        }
        List<String> shared = MpsNode.sharedGpusOf(plan.placement());
        if (!shared.isEmpty()) {
            mps.ensureNow(r, shared);
        }
    }

    // ------------------------------------------------------------------------------- what the reconciler reads

    private void published() {
        snapshot = Map.copyOf(byUid);
    }

    private Set<String> uids() {
        return new LinkedHashSet<>(snapshot.keySet());
    }

    private Set<Path> freshDirectories() {
        Set<Path> out = new LinkedHashSet<>();
        for (PreparedClaim c : snapshot.values()) {
            out.addAll(freshOf(c));
        }
        return out;
    }

    private Set<SharingEdits.HostPath> sharedPathsWanted() {
        Set<SharingEdits.HostPath> out = new LinkedHashSet<>();
        for (PreparedClaim c : snapshot.values()) {
            out.addAll(sharedOf(editsOf(c)));
        }
        return out;
    }

    private static List<SharingEdits.HostPath> sharedOf(PlacementEdits.Edits e) {
        return e.hostPaths().stream().filter(d -> !d.fresh()).toList();
    }

    private List<Path> freshOf(PreparedClaim c) {
        return fresh(editsOf(c));
    }

    private static List<Path> fresh(PlacementEdits.Edits e) {
        return e.hostPaths().stream().filter(SharingEdits.HostPath::fresh).map(d -> Path.of(d.path())).toList();
    }

    private PlacementEdits.Edits editsOf(PreparedClaim c) {
        return edits.edits(c.placement(), c.uid());
    }

    /** The reconciler's step: the claim's spec as it must be, written when missing or different. */
    private void ensureSpec(String uid) throws IOException {
        PreparedClaim c = snapshot.get(uid);
        if (c == null) {
            return;   // unprepared meanwhile: the next pass removes the spec
        }
        PlacementEdits.Edits e = editsOf(c);
        if (cdi.ensure(uid, e.common(), specDevices(c, e))) {
            LOG.info("CDI spec of claim {} ({}) written", c.key(), uid);
        }
    }

    /**
     * The spec's devices: each device's GPU edits, named for the claim and device.
     */
    private static List<CdiSpecs.Device> specDevices(PreparedClaim c, PlacementEdits.Edits e) {
        List<CdiSpecs.Device> out = new ArrayList<>();
        for (PreparedClaim.Device d : c.devices()) {
            ContainerEdits own = e.perGpu().getOrDefault(d.gpuUuid(), ContainerEdits.EMPTY);
            out.add(new CdiSpecs.Device(DriverNames.cdiDeviceName(c.uid(), d.device()), own));
        }
        return out;
    }

    private PreparedClaim withCdiIds(PreparedClaim c) {
        List<PreparedClaim.Device> withIds = new ArrayList<>();
        for (PreparedClaim.Device d : c.devices()) {
            withIds.add(d.withCdiIds(List.of(CdiSpecs.qualifiedName(DriverNames.cdiDeviceName(c.uid(), d.device())))));
        }
        return c.withDevices(withIds);
    }
}
