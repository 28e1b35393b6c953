package io.qgpu.core.ledger;

import io.qgpu.api.ClusterView;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Validate;
import io.qgpu.core.internal.LedgerFeeds;
import io.qgpu.core.internal.NodeFeed;
import io.qgpu.core.ledger.internal.BatchCommit;
import io.qgpu.core.ledger.internal.HealthMarking;
import io.qgpu.core.ledger.internal.Reconciler;
import io.qgpu.core.ledger.internal.Reservations;
import io.qgpu.core.ledger.internal.SnapshotReplay;
import io.qgpu.core.ledger.internal.Structure;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.StampedLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The record of what is reserved on every GPU of every node. It never oversubscribes memory,
 * guaranteed compute (per priority class, each up to 100%) or tenants per GPU, nor the CPU and host
 * memory a node declares ({@link io.qgpu.api.HostCapacity}; a resource it does not declare is not
 * tracked there), and a reservation is all or nothing: every slice and its host resources.
 *
 * <pre>{@code
 * Ledger ledger = Ledger.create(GranularityRules.ofDefaults(), List.of(node));
 * Claim claim = Claim.builder("job-1").memoryGiB(4).compute(20, 50).build();
 * Placement p = new Placement(claim, node.name(), List.of(new Slice("GPU-a0", 4L << 30, 20, 50)));
 * if (ledger.reserve(p) instanceof ReserveResult.Reserved r) {
 *     r.placement().environment();           // NVIDIA_VISIBLE_DEVICES=GPU-a0, ...
 * }
 * ledger.release("job-1");                   // idempotent
 * }</pre>
 *
 * <h2>Rules</h2>
 * A reservation is admitted when {@link AdmissionRules} accept every slice, the tenant id is not
 * already held, the node is known, and, for an affinity label, the tenants already carrying that
 * label hold exactly the same GPUs. A GPU turning unhealthy takes no new tenants; its tenants stay
 * reserved and are reported by {@link #displaced()} until released.
 *
 * <h2>Thread safety</h2>
 * Thread-safe. Each node's state is one immutable {@link NodeState}, replaced by compare-and-set
 * after the admission rules re-validated the change against that very state, retried on a lost
 * race; a concurrent reader always sees a whole, valid node. Reservations on different nodes do not
 * wait for each other. A tenant id is claimed in a concurrent table before its node is changed,
 * which refuses duplicates atomically; a reservation or a release takes effect at the node's
 * compare-and-set, and per-tenant reads ({@link #placement}, {@link #release}, a duplicate check)
 * wait for an in-flight change of that tenant to settle. A release that answers empty (because a
 * concurrent release of the same tenant won) returns only after the winner has taken the slices off
 * the node. So {@link #reserve}, {@link #release}, {@link #placement} and {@link #node} are
 * linearizable: checked by a Lincheck stress test and a two-thread release race test, not proved.
 * An exception thrown inside {@link #reserve} leaves no half-made entry behind.
 * Bulk reads ({@link #placements()}, {@link #size()}, {@link #displaced()}) are weakly consistent,
 * like a concurrent map's iteration, and {@link #nodes()} reads each node atomically but not all
 * nodes at one instant. Structural changes ({@link #addNode}, {@link #removeNode},
 * {@link #restore}, {@link #reconcile}), {@link #snapshot} and {@link #commit} (a batch of releases
 * and reservations) take an exclusive lock, so they see and produce a consistent cut of the whole
 * ledger; reservations, releases and health changes hold that lock shared.
 *
 * <h2>Change feed</h2>
 * The placement engine's index reads the ledger through a change feed that is not part of the
 * exported API: the nodes by position and a record of which positions changed, so that it refreshes
 * only those instead of reading every node. docs/ledger.md describes it.
 */
public final class Ledger implements ClusterView {

    private static final Logger LOG = LoggerFactory.getLogger(Ledger.class);

    static {
        LedgerFeeds.install(view -> ((Ledger) view).current);   // only a ledger is passed (LedgerFeeds.of)
    }

    private final StampedLock lock = new StampedLock();
    /** The current structure, wrapped in the feed that readers of it share. */
    private volatile NodeFeed current;

    private Ledger(Structure structure) {
        this.current = new NodeFeed(structure);
    }

    /**
     * An empty ledger with these rules and nodes.
     *
     * @throws LedgerStateException if two nodes have one name or one GPU UUID is on two nodes
     */
    public static Ledger create(GranularityRules rules, Collection<Node> nodes) {
        return new Ledger(SnapshotReplay.build(rules, nodes, List.of()).orThrow("cannot create the ledger"));
    }

    /**
     * An empty ledger with qGPU's default rules.
     *
     * @throws LedgerStateException if two nodes have one name or one GPU UUID is on two nodes
     */
    public static Ledger create(Collection<Node> nodes) {
        return create(GranularityRules.ofDefaults(), nodes);
    }

    /** A ledger restored from a snapshot; refuses an inconsistent one with {@link LedgerStateException}. */
    public static Ledger of(LedgerSnapshot snapshot) {
        Validate.notNull("snapshot", snapshot);
        return new Ledger(replay(snapshot).orThrow("snapshot is inconsistent"));
    }

    private Structure structure() {
        return current.structure();
    }

    private void publish(Structure next) {
        current = new NodeFeed(next);
    }

    @Override
    public GranularityRules rules() {
        return structure().rules();
    }

    /**
     * Reserves every slice of the placement, or nothing. Never throws for a capacity problem: the
     * answer is {@link ReserveResult.Refused} with a reason per problem.
     */
    public ReserveResult reserve(Placement placement) {
        Validate.notNull("placement", placement);
        long stamp = lock.readLock();
        try {
            return Reservations.reserve(structure(), placement);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /**
     * Releases the tenant's reservation. Idempotent: releasing an unknown or already released tenant
     * returns empty and changes nothing. When it returns empty, the tenant is gone: its slices are
     * off the node and {@link #placement} answers empty, also when a concurrent release of the same
     * tenant won.
     *
     * @return what was released
     */
    public Optional<Placement> release(String tenantId) {
        Validate.notNull("tenantId", tenantId);
        long stamp = lock.readLock();
        try {
            return Reservations.release(structure(), tenantId);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /**
     * Releases {@code releases} and reserves {@code reserves} as one step, or changes nothing: the
     * commit of a group placed all or nothing and of a preemption plan. Validated as a whole first
     * (every release is a tenant's current reservation, exactly as reserved; every reservation passes the admission rules on its node
     * after the releases and the batch's earlier reservations), then applied.
     *
     * <p>Atomic with respect to every other change: it holds the exclusive lock, so reservations,
     * releases and health changes wait for it and are judged against the ledger either before the
     * whole batch or after it (a concurrent reservation can never take room a release of the batch
     * frees for a reservation of the batch). Per-tenant reads ({@link #placement}) of a tenant of the
     * batch wait while it is applied, so once they see one reservation of a batch they see all of
     * them, and never see one of a refused batch. Lock-free reads of node states ({@link #nodes},
     * {@link #node}, the change feed) may see some of the batch's nodes changed before others while it
     * is applied, and weakly consistent bulk reads ({@link #placements}, {@link #size}) may list some
     * of its tenants before the others.
     *
     * @param releases reservations to release, each equal to its tenant's current one (a tenant released
     *                 and reserved again since is refused with {@code CONFLICT}, never released by mistake)
     * @param reserves placements to reserve, with ids neither reserved nor released in this batch
     * @return {@link BatchResult.Committed}, or {@link BatchResult.Refused} with the reasons per tenant
     */
    public BatchResult commit(Collection<Placement> releases, Collection<Placement> reserves) {
        List<Placement> r = Validate.list("releases", releases);
        List<Placement> p = Validate.list("reserves", reserves);
        long stamp = lock.writeLock();
        try {
            return BatchCommit.commit(structure(), r, p);
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /**
     * Sets a GPU's health. An unhealthy GPU takes no new tenants; its current tenants stay reserved
     * and are returned (and reported by {@link #displaced()}) so that the caller can move them.
     *
     * @return the tenants on the GPU when it is now unhealthy, else empty
     * @throws InvalidValueException if the GPU is unknown
     */
    public List<Placement> setHealth(String gpuUuid, Health health) {
        Validate.notNull("gpuUuid", gpuUuid);
        Validate.notNull("health", health);
        long stamp = lock.readLock();
        try {
            return HealthMarking.set(structure(), gpuUuid, health);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Tenants holding a slice on an unhealthy GPU, in tenant-id order. */
    public List<Placement> displaced() {
        return HealthMarking.displaced(structure());
    }

    /**
     * Adds a node. Refuses a duplicate node name or a GPU UUID already in the ledger.
     *
     * @throws LedgerStateException if the node or one of its GPUs is already known
     */
    public void addNode(Node node) {
        Validate.notNull("node", node);
        long stamp = lock.writeLock();
        try {
            publish(structure().withNode(node));
        } finally {
            lock.unlockWrite(stamp);
        }
        LOG.info("node {} added with {} GPU(s)", node.name(), node.gpus().size());
    }

    /**
     * Removes a node and releases every reservation on it.
     *
     * @return the released (displaced) reservations, in tenant-id order; empty if the node was unknown
     */
    public List<Placement> removeNode(String name) {
        Validate.notNull("name", name);
        long stamp = lock.writeLock();
        try {
            Structure s = structure();
            Structure.Removal r = s.withoutNode(name);
            if (r.next() != s) {
                publish(r.next());
                LOG.info("node {} removed; {} tenant(s) displaced", name, r.displaced().size());
            }
            return r.displaced();
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    @Override
    public List<NodeState> nodes() {
        return Collections.unmodifiableList(structure().nodeStates());
    }

    @Override
    public Optional<NodeState> node(String name) {
        var slot = structure().slot(name);
        return slot == null ? Optional.empty() : Optional.of(slot.get());
    }

    @Override
    public Optional<Placement> placement(String tenantId) {
        return structure().tenants().committed(tenantId);
    }

    /** Every reservation, in tenant-id order. */
    public List<Placement> placements() {
        return List.copyOf(structure().tenants().committed().values());
    }

    /** Number of reservations. */
    public int size() {
        return structure().tenants().committed().size();
    }

    /** The current structure's epoch; it grows with every structural change (adding or removing a node, restore, reconcile). */
    public long structureEpoch() {
        return structure().epoch();
    }

    /** A consistent copy of the whole ledger. */
    public LedgerSnapshot snapshot() {
        long stamp = lock.writeLock();
        try {
            Structure s = structure();
            return new LedgerSnapshot(s.rules(), s.nodes(), List.copyOf(s.tenants().committed().values()));
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /**
     * A new, independent ledger holding what this one holds now: {@code Ledger.of(snapshot())}, so
     * the same consistent cut and the same replay as a snapshot and its restore. Every reservation
     * is copied whole (its slices, its CPU and host memory, host-only tenants included), so are the
     * nodes with their GPU health and host capacities, and so every affinity label stays bound
     * where it is. Changes to either ledger are not seen by the other. Gangs
     * ({@code GangPlacer}) and preemption plans ({@code PreemptionPlanner}) try their moves on
     * such a copy before they commit to the real ledger.
     *
     * <p>Cost: like {@link #snapshot()} and {@link #of(LedgerSnapshot)} together, linear in the
     * number of nodes and reservations; the cut holds the exclusive lock as {@link #snapshot()} does.
     */
    public Ledger copy() {
        return of(snapshot());
    }

    /**
     * Replaces the whole ledger with a snapshot, or refuses it and changes nothing.
     *
     * @throws LedgerStateException if the snapshot is inconsistent (oversubscribed, unknown GPU,
     *                              duplicate tenant, node or GPU)
     */
    public void restore(LedgerSnapshot snapshot) {
        Validate.notNull("snapshot", snapshot);
        Structure next = replay(snapshot).orThrow("snapshot refused, ledger unchanged");
        long stamp = lock.writeLock();
        try {
            publish(next);
        } finally {
            lock.unlockWrite(stamp);
        }
        LOG.info("ledger restored: {} node(s), {} reservation(s)", snapshot.nodes().size(), snapshot.placements().size());
    }

    private static SnapshotReplay.Result replay(LedgerSnapshot snapshot) {
        return SnapshotReplay.build(snapshot.rules(), snapshot.nodes(), SnapshotReplay.byTenant(snapshot.placements()));
    }

    /**
     * Rebuilds the reservations from an authoritative list of bound allocations (as a scheduler reads
     * them back from pod annotations after a restart), keeping nodes, health and rules. Entries the
     * ledger cannot hold are left out and reported as {@link ReconcileReport.Kind#REFUSED}.
     */
    public ReconcileReport reconcile(Collection<Placement> authoritative) {
        Validate.list("authoritative", authoritative);
        long stamp = lock.writeLock();
        try {
            Reconciler.Outcome o = Reconciler.reconcile(structure(), authoritative);
            publish(o.next());
            LOG.info("ledger reconciled: {} difference(s)", o.report().differences().size());
            return o.report();
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    @Override
    public String toString() {
        Structure s = structure();
        return "Ledger[" + s.size() + " nodes, " + s.tenants().size() + " reservations, rules " + s.rules().name() + "]";
    }
}
