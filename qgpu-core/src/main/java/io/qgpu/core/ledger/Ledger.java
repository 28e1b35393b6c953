package io.qgpu.core.ledger;

import io.qgpu.api.ClusterView;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.Holding;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Validate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.StampedLock;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The record of what is reserved on every GPU of every node. It never oversubscribes memory,
 * guaranteed compute (per priority class, each up to 100%) or tenants per GPU, and a multi-GPU
 * reservation is all or nothing.
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
 * A reservation is admitted when {@link Admission} accepts every slice, the tenant id is not already
 * held, the node is known, and, for an affinity label, the tenants already carrying that label hold
 * exactly the same GPUs. A GPU turning unhealthy takes no new tenants; its tenants stay reserved and
 * are reported by {@link #displaced()} until released.
 *
 * <h2>Thread safety</h2>
 * Thread-safe and lock-free for reservations on different nodes. Each node's state is one immutable
 * {@link NodeState} in an {@link AtomicReference}; {@link #reserve} and {@link #release} compute the
 * next state with the pure {@link Admission} functions and install it with compare-and-set, retrying
 * on a lost race, so a concurrent reader always sees a whole, valid node. Tenant ids are claimed in a
 * concurrent map before the node is changed, which refuses duplicates atomically; a reservation or a
 * release takes effect at the node's compare-and-set, and per-tenant reads ({@link #placement},
 * {@link #release}, a duplicate check) wait for an in-flight change of that tenant to settle, so
 * reserve, release, {@link #placement} and {@link #node} are linearizable (checked with Lincheck).
 * Bulk reads ({@link #placements()}, {@link #size()}, {@link #displaced()}) are weakly consistent,
 * like a concurrent map's iteration. Structural changes
 * ({@link #addNode}, {@link #removeNode}, {@link #restore}, {@link #reconcile}) and {@link #snapshot}
 * take an exclusive lock, so they see and produce a consistent cut of the whole ledger; reservations
 * hold that lock shared. {@link #nodes()} reads each node atomically but not all nodes at one instant.
 *
 * <h2>Change feed</h2>
 * {@link #feed()} gives incremental readers (the placement engine's index) the nodes by position
 * and a record of which positions changed, so that they refresh only those instead of reading every
 * node: see {@link NodeFeed}.
 */
public final class Ledger implements ClusterView {

    private static final Logger LOG = LoggerFactory.getLogger(Ledger.class);

    private final StampedLock lock = new StampedLock();
    private volatile State state;

    private Ledger(State state) {
        this.state = state;
    }

    /** An empty ledger with these rules and nodes. */
    public static Ledger create(GranularityRules rules, Collection<Node> nodes) {
        return new Ledger(State.build(rules, nodes, List.of(), false).state());
    }

    /** An empty ledger with qGPU's default rules. */
    public static Ledger create(Collection<Node> nodes) {
        return create(GranularityRules.ofDefaults(), nodes);
    }

    /** A ledger restored from a snapshot; refuses an inconsistent one with {@link LedgerStateException}. */
    public static Ledger of(LedgerSnapshot snapshot) {
        Build b = State.build(snapshot.rules(), snapshot.nodes(), byTenant(snapshot.placements()), false);
        b.throwIfRefused("snapshot is inconsistent");
        return new Ledger(b.state());
    }

    @Override
    public GranularityRules rules() {
        return state.rules;
    }

    // ------------------------------------------------------------------ reservations

    /**
     * Reserves every slice of the placement, or nothing. Never throws for a capacity problem: the
     * answer is {@link ReserveResult.Refused} with a reason per problem.
     */
    public ReserveResult reserve(Placement placement) {
        Validate.notNull("placement", placement);
        long stamp = lock.readLock();
        try {
            State s = state;
            String id = placement.tenantId();
            Slot slot = s.byName.get(placement.nodeName());
            if (slot == null) {
                return refused(id, Reason.of(ReasonCode.UNKNOWN_TARGET, placement.nodeName(), "no such node"));
            }
            Entry entry = new Entry(placement);
            while (true) {
                Entry held = s.tenants.putIfAbsent(id, entry);
                if (held == null) {
                    break;
                }
                if (held.await()) {
                    return refused(id, Reason.of(ReasonCode.DUPLICATE_TENANT, id,
                            "already reserved on " + held.placement.nodeName()));
                }
                // the other reservation of this id was refused: try again
            }
            ReserveResult result;
            Optional<String> label = placement.claim().locality().affinity();
            if (label.isPresent()) {
                ReserveResult[] out = new ReserveResult[1];
                s.affinity.compute(label.get(), (k, group) -> {
                    if (group != null && !group.matches(placement)) {
                        out[0] = refused(id, Reason.of(ReasonCode.AFFINITY, placement.nodeName(),
                                "label " + k + " is bound to " + group.node() + " " + group.gpus()));
                        return group;
                    }
                    out[0] = commit(s, slot, placement);
                    if (!out[0].reserved()) {
                        return group;
                    }
                    return group == null ? AffinityGroup.of(placement) : group.plus(1);
                });
                result = out[0];
            } else {
                result = commit(s, slot, placement);
            }
            if (result.reserved()) {
                entry.resolve(true);
            } else {
                s.tenants.remove(id, entry);
                entry.resolve(false);
            }
            return result;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    private ReserveResult commit(State s, Slot slot, Placement placement) {
        while (true) {
            NodeState current = slot.ref.get();
            Admission.Result r = Admission.reserve(current, placement, s.rules);
            if (r instanceof Admission.Rejected rejected) {
                return new ReserveResult.Refused(placement.tenantId(), rejected.reasons());
            }
            if (slot.ref.compareAndSet(current, ((Admission.Admitted) r).next())) {
                s.feed.changed(slot.position);
                return new ReserveResult.Reserved(placement);
            }
        }
    }

    private static void undo(State s, Slot slot, Placement placement) {
        Optional<String> label = placement.claim().locality().affinity();
        if (label.isPresent()) {
            s.affinity.computeIfPresent(label.get(), (k, g) -> {
                removeFromNode(s, slot, placement.tenantId());
                return g.members() <= 1 ? null : g.plus(-1);
            });
        } else {
            removeFromNode(s, slot, placement.tenantId());
        }
    }

    private static void removeFromNode(State s, Slot slot, String tenantId) {
        slot.ref.updateAndGet(n -> Admission.release(n, tenantId));
        s.feed.changed(slot.position);
    }

    /**
     * Releases the tenant's reservation. Idempotent: releasing an unknown or already released tenant
     * returns empty and changes nothing.
     *
     * @return what was released
     */
    public Optional<Placement> release(String tenantId) {
        Validate.notNull("tenantId", tenantId);
        long stamp = lock.readLock();
        try {
            State s = state;
            Entry e = s.tenants.get(tenantId);
            if (e == null || !e.startRelease()) {
                return Optional.empty();
            }
            Placement p = e.placement;
            Slot slot = s.byName.get(p.nodeName());
            if (slot != null) {
                undo(s, slot, p);
            }
            s.tenants.remove(tenantId, e);
            e.released();
            return Optional.of(p);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    // ------------------------------------------------------------------ health

    /**
     * Sets a GPU's health. An unhealthy GPU takes no new tenants; its current tenants stay reserved
     * and are returned (and reported by {@link #displaced()}) so that the caller can move them.
     *
     * @return the tenants on the GPU when it is now unhealthy, else empty
     * @throws io.qgpu.api.InvalidValueException if the GPU is unknown
     */
    public List<Placement> setHealth(String gpuUuid, Health health) {
        Validate.notNull("gpuUuid", gpuUuid);
        Validate.notNull("health", health);
        long stamp = lock.readLock();
        try {
            State s = state;
            Slot slot = s.byGpu.get(gpuUuid);
            if (slot == null) {
                throw new io.qgpu.api.InvalidValueException("gpuUuid", gpuUuid, "no such GPU in the ledger");
            }
            NodeState next = slot.ref.updateAndGet(n -> withHealth(n, gpuUuid, health));
            s.feed.changed(slot.position);
            if (health == Health.HEALTHY) {
                LOG.info("GPU {} on {} is healthy", gpuUuid, slot.name);
                return List.of();
            }
            GpuState g = next.gpu(next.node().positionOf(gpuUuid));
            List<Placement> displaced = new ArrayList<>();
            for (Holding h : g.holdings()) {
                Entry e = s.tenants.get(h.tenantId());
                if (e != null && e.await()) {
                    displaced.add(e.placement);
                }
            }
            LOG.warn("GPU {} on {} is unhealthy; {} tenant(s) displaced", gpuUuid, slot.name, displaced.size());
            return displaced;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    private static NodeState withHealth(NodeState n, String uuid, Health health) {
        int pos = n.node().positionOf(uuid);
        GpuState g = n.gpu(pos);
        if (g.device().health() == health) {
            return n;
        }
        Node node = n.node().withGpuHealth(uuid, health);
        List<GpuState> gpus = new ArrayList<>(n.gpus());
        gpus.set(pos, g.withDevice(node.gpus().get(pos)));
        return new NodeState(node, gpus);
    }

    /** Tenants holding a slice on an unhealthy GPU, in tenant-id order. */
    public List<Placement> displaced() {
        State s = state;
        Map<String, Placement> out = new TreeMap<>();
        for (Slot slot : s.slots) {
            for (GpuState g : slot.ref.get().gpus()) {
                if (!g.device().healthy()) {
                    for (Holding h : g.holdings()) {
                        Entry e = s.tenants.get(h.tenantId());
                        if (e != null && e.await()) {
                            out.put(h.tenantId(), e.placement);
                        }
                    }
                }
            }
        }
        return List.copyOf(out.values());
    }

    // ------------------------------------------------------------------ structure

    /**
     * Adds a node. Refuses a duplicate node name or a GPU UUID already in the ledger.
     *
     * @throws LedgerStateException if the node or one of its GPUs is already known
     */
    public void addNode(Node node) {
        Validate.notNull("node", node);
        long stamp = lock.writeLock();
        try {
            State s = state;
            List<Reason> reasons = new ArrayList<>();
            if (s.byName.containsKey(node.name())) {
                reasons.add(Reason.of(ReasonCode.UNKNOWN_TARGET, node.name(), "node already in the ledger"));
            }
            for (GpuDevice g : node.gpus()) {
                if (s.byGpu.containsKey(g.uuid())) {
                    reasons.add(Reason.of(ReasonCode.UNKNOWN_TARGET, g.uuid(), "GPU already in the ledger on "
                            + s.byGpu.get(g.uuid()).name));
                }
            }
            if (!reasons.isEmpty()) {
                throw new LedgerStateException("cannot add node " + node.name(), reasons);
            }
            List<Slot> slots = new ArrayList<>(List.of(s.slots));
            slots.add(new Slot(node.name(), NodeState.empty(node)));
            state = s.withSlots(slots);
            LOG.info("node {} added with {} GPU(s)", node.name(), node.gpus().size());
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /**
     * Removes a node and releases every reservation on it.
     *
     * @return the released (displaced) reservations; empty if the node was unknown
     */
    public List<Placement> removeNode(String name) {
        Validate.notNull("name", name);
        long stamp = lock.writeLock();
        try {
            State s = state;
            Slot slot = s.byName.get(name);
            if (slot == null) {
                return List.of();
            }
            List<Placement> displaced = new ArrayList<>();
            for (Placement p : s.committed().values()) {
                if (p.nodeName().equals(name)) {
                    s.tenants.remove(p.tenantId());
                    p.claim().locality().affinity().ifPresent(l -> s.affinity.computeIfPresent(l,
                            (k, g) -> g.members() <= 1 ? null : g.plus(-1)));
                    displaced.add(p);
                }
            }
            List<Slot> slots = new ArrayList<>(List.of(s.slots));
            slots.remove(slot);
            state = s.withSlots(slots);
            displaced.sort((a, b) -> a.tenantId().compareTo(b.tenantId()));
            LOG.info("node {} removed; {} tenant(s) displaced", name, displaced.size());
            return displaced;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    // ------------------------------------------------------------------ views

    @Override
    public List<NodeState> nodes() {
        Slot[] slots = state.slots;
        List<NodeState> out = new ArrayList<>(slots.length);
        for (Slot s : slots) {
            out.add(s.ref.get());
        }
        return Collections.unmodifiableList(out);
    }

    /**
     * The current structure's change feed: the nodes by position and which positions changed. A
     * structural change ({@link #addNode}, {@link #removeNode}, {@link #restore}, {@link #reconcile})
     * replaces it with a new feed of a higher {@link NodeFeed#epoch()}.
     */
    public NodeFeed feed() {
        return state.feed;
    }

    /** The current structure's epoch; it grows with every structural change. Same as {@code feed().epoch()}. */
    public long structureEpoch() {
        return state.feed.epoch;
    }

    /**
     * The nodes of one ledger structure by position, and a bounded record of the positions whose state
     * changed, for readers that keep a derived copy of every node (an index) and want to refresh only
     * what changed.
     *
     * <pre>{@code
     * Ledger.NodeFeed feed = ledger.feed();
     * long seen = feed.changeSequence();              // read BEFORE copying
     * for (int i = 0; i < feed.size(); i++) copy(i, feed.nodeAt(i));
     * // later:
     * if (ledger.feed() != feed) { ... structure changed: start over with the new feed ... }
     * long next = feed.drainChanges(seen, i -> copy(i, feed.nodeAt(i)));
     * if (next < 0) { next = feed.changeSequence(); ... copy every node again ... }
     * seen = next;
     * }</pre>
     *
     * <p>Every successful change of a node's state (a reservation, a release or its undo, a health
     * change) takes the next number of a sequence and writes a stamp (sequence, position) into a ring
     * of {@link #CAPACITY} stamps, <em>after</em> the node's compare-and-set. So a reader that has
     * read {@link #changeSequence()} as {@code q} and then reads a node sees every change numbered
     * below {@code q}; a change whose compare-and-set is done but whose number is not taken yet is
     * delivered by a later drain. In that short window a reader may use a stale copy of the node:
     * the ledger re-validates every reservation atomically, so correctness must never depend on such
     * a copy. A reader never misses a change permanently: a drain that cannot prove it delivered every
     * stamp (a stamp overwritten by a writer that lapped the ring) answers {@code -1}, which asks for
     * a full re-read.
     *
     * <p>Thread safety: thread-safe and lock-free; any number of threads may drain concurrently (each
     * gets the positions; a position may be delivered more than once). Publishing costs a writer one
     * {@code getAndIncrement} and one array store.
     */
    public static final class NodeFeed {
        /** How many stamps the ring keeps; a reader further behind than this must re-read everything. */
        public static final int CAPACITY = 1 << 13;
        private static final int POS_BITS = 24;
        private static final long POS_MASK = (1L << POS_BITS) - 1;
        private static final long TAG_MASK = (1L << (64 - POS_BITS)) - 1;
        private static final AtomicLong EPOCHS = new AtomicLong();

        private final long epoch = EPOCHS.incrementAndGet();
        private final Slot[] slots;
        private final GranularityRules rules;
        private final AtomicLong sequence = new AtomicLong();
        private final AtomicLongArray ring;

        private NodeFeed(Slot[] slots, GranularityRules rules) {
            this.slots = slots;
            this.rules = rules;
            // positions beyond 24 bits cannot be stamped: such a feed always asks for a full re-read
            this.ring = slots.length <= POS_MASK ? new AtomicLongArray(CAPACITY) : null;
        }

        /** Identifies this structure; a later structure of the ledger has a higher epoch. */
        public long epoch() {
            return epoch;
        }

        /** The rules of this structure. */
        public GranularityRules rules() {
            return rules;
        }

        /** Number of nodes; positions are {@code 0 .. size() - 1}, in {@link Ledger#nodes()} order. */
        public int size() {
            return slots.length;
        }

        /**
         * The current state of the node at {@code position} (for a feed that is no longer the
         * ledger's, the state it had when the structure was replaced).
         *
         * @throws io.qgpu.api.InvalidValueException if {@code position} is out of range
         */
        public NodeState nodeAt(int position) {
            if (position < 0 || position >= slots.length) {
                throw new io.qgpu.api.InvalidValueException("position", position,
                        "must be in 0.." + (slots.length - 1));
            }
            return slots[position].ref.get();
        }

        /** How many changes were numbered so far: the next change gets this number. */
        public long changeSequence() {
            return sequence.get();
        }

        /**
         * Hands {@code positions} the position of every change numbered from {@code fromSequence} on,
         * in sequence order, possibly with repeats.
         *
         * @return the sequence number to drain from next time (every change below it was delivered),
         *         or {@code -1} when the ring no longer holds every stamp since {@code fromSequence}
         *         (the reader was more than {@link #CAPACITY} changes behind, or {@code fromSequence}
         *         does not belong to this feed): then the reader must re-read every node
         */
        public long drainChanges(long fromSequence, IntConsumer positions) {
            Validate.notNull("positions", positions);
            long head = sequence.get();
            if (ring == null || fromSequence < 0 || fromSequence > head || head - fromSequence > CAPACITY) {
                return -1;
            }
            for (long q = fromSequence; q < head; q++) {
                long stamp = ring.getAcquire((int) (q & (CAPACITY - 1)));
                if (stamp >>> POS_BITS != tag(q)) {
                    if (sequence.get() - q > CAPACITY) {
                        return -1; // overwritten by a writer that lapped the ring
                    }
                    return q; // numbered but not written yet: the next drain resumes here
                }
                positions.accept((int) (stamp & POS_MASK));
            }
            return head;
        }

        /** Publishes a change of the node at {@code position}; called after its compare-and-set. */
        void changed(int position) {
            long q = sequence.getAndIncrement();
            if (ring != null) {
                ring.setRelease((int) (q & (CAPACITY - 1)), (tag(q) << POS_BITS) | position);
            }
        }

        /** Never 0 for a sequence below 2^40 - 1, so an unwritten ring entry never matches. */
        private static long tag(long q) {
            return (q + 1) & TAG_MASK;
        }

        @Override
        public String toString() {
            return "NodeFeed[epoch " + epoch + ", " + slots.length + " nodes, sequence " + sequence.get() + "]";
        }
    }

    @Override
    public Optional<NodeState> node(String name) {
        Slot s = state.byName.get(name);
        return s == null ? Optional.empty() : Optional.of(s.ref.get());
    }

    @Override
    public Optional<Placement> placement(String tenantId) {
        Entry e = state.tenants.get(tenantId);
        return e != null && e.await() ? Optional.of(e.placement) : Optional.empty();
    }

    /** Every reservation, in tenant-id order. */
    public List<Placement> placements() {
        return List.copyOf(state.committed().values());
    }

    /** Number of reservations. */
    public int size() {
        return state.committed().size();
    }

    /** A consistent copy of the whole ledger. */
    public LedgerSnapshot snapshot() {
        long stamp = lock.writeLock();
        try {
            State s = state;
            List<Node> nodes = s.nodes();
            return new LedgerSnapshot(s.rules, nodes, List.copyOf(s.committed().values()));
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /**
     * Replaces the whole ledger with a snapshot, or refuses it and changes nothing.
     *
     * @throws LedgerStateException if the snapshot is inconsistent (oversubscribed, unknown GPU,
     *                              duplicate tenant, node or GPU)
     */
    public void restore(LedgerSnapshot snapshot) {
        Validate.notNull("snapshot", snapshot);
        Build b = State.build(snapshot.rules(), snapshot.nodes(), byTenant(snapshot.placements()), false);
        b.throwIfRefused("snapshot refused, ledger unchanged");
        long stamp = lock.writeLock();
        try {
            state = b.state();
        } finally {
            lock.unlockWrite(stamp);
        }
        LOG.info("ledger restored: {} node(s), {} reservation(s)", snapshot.nodes().size(), snapshot.placements().size());
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
            State s = state;
            List<Node> nodes = s.nodes();
            // what the ledger already holds unchanged goes first, so that a newcomer that does not fit
            // is the one refused, never a reservation that was already admitted
            Map<String, Placement> current = s.committed();
            List<Placement> ordered = new ArrayList<>(byTenant(authoritative));
            ordered.sort((x, y) -> Boolean.compare(!x.equals(current.get(x.tenantId())), !y.equals(current.get(y.tenantId()))));
            Build b = State.build(s.rules, nodes, ordered, true);
            State next = b.state();
            List<ReconcileReport.Difference> diffs = new ArrayList<>();
            Map<String, Placement> before = current;
            Map<String, Placement> after = next.committed();
            Set<String> all = new java.util.TreeSet<>(before.keySet());
            all.addAll(after.keySet());
            all.addAll(b.refused().keySet());
            for (String t : all) {
                Placement was = before.get(t);
                Placement now = after.get(t);
                List<Reason> why = b.refused().getOrDefault(t, List.of());
                if (!why.isEmpty()) {
                    diffs.add(new ReconcileReport.Difference(ReconcileReport.Kind.REFUSED, t, Optional.ofNullable(was),
                            Optional.ofNullable(now), why));
                    if (was != null && now == null) {
                        continue;
                    }
                }
                if (was == null && now != null) {
                    diffs.add(new ReconcileReport.Difference(ReconcileReport.Kind.ADDED, t, Optional.empty(),
                            Optional.of(now), List.of()));
                } else if (was != null && now == null && why.isEmpty()) {
                    diffs.add(new ReconcileReport.Difference(ReconcileReport.Kind.REMOVED, t, Optional.of(was),
                            Optional.empty(), List.of()));
                } else if (was != null && now != null && !was.equals(now)) {
                    diffs.add(new ReconcileReport.Difference(ReconcileReport.Kind.CHANGED, t, Optional.of(was),
                            Optional.of(now), List.of()));
                }
            }
            state = next;
            LOG.info("ledger reconciled: {} difference(s)", diffs.size());
            return new ReconcileReport(diffs);
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    private static List<Placement> byTenant(Collection<Placement> placements) {
        List<Placement> ordered = new ArrayList<>(placements);
        ordered.sort((a, b) -> a.tenantId().compareTo(b.tenantId()));
        return ordered;
    }

    private static ReserveResult refused(String tenantId, Reason reason) {
        return new ReserveResult.Refused(tenantId, List.of(reason));
    }

    // ------------------------------------------------------------------ internals

    /** One node's current state. */
    private static final class Slot {
        final String name;
        final AtomicReference<NodeState> ref;
        /** Index in its structure's slot array (a new structure makes new slots). */
        final int position;

        Slot(String name, NodeState initial) {
            this(name, initial, -1);
        }

        Slot(String name, NodeState initial, int position) {
            this.name = name;
            this.ref = new AtomicReference<>(initial);
            this.position = position;
        }
    }

    /**
     * A tenant's reservation and where it is in its life: claimed (pending) before its slices are
     * installed on the node, committed right after, releasing while its slices are taken off, gone
     * after. A reader that meets a pending or releasing entry waits the few instructions until it is
     * settled, so that the node state and the tenant map never disagree to an observer: a reservation
     * and a release take effect at the node's compare-and-set. (Lincheck found both windows.)
     */
    private static final class Entry {
        private static final int PENDING = 0;
        private static final int COMMITTED = 1;
        private static final int GONE = 2;
        private static final int RELEASING = 3;
        private static final AtomicIntegerFieldUpdater<Entry> STATUS =
                AtomicIntegerFieldUpdater.newUpdater(Entry.class, "status");

        final Placement placement;
        private volatile int status;

        Entry(Placement placement) {
            this.placement = placement;
        }

        void resolve(boolean ok) {
            status = ok ? COMMITTED : GONE;
        }

        /** Whether committed now, without waiting (bulk reads skip unsettled entries). */
        boolean isCommitted() {
            return status == COMMITTED;
        }

        /**
         * Claims the right to release; exactly one caller wins, and only for a committed entry. A
         * loser waits until the winner's release is done, so that "nothing held" is only answered
         * once the slices are off the node.
         */
        boolean startRelease() {
            while (true) {
                if (!await()) {
                    return false;
                }
                if (STATUS.compareAndSet(this, COMMITTED, RELEASING)) {
                    return true;
                }
            }
        }

        void released() {
            status = GONE;
        }

        /** Waits until settled; whether the reservation is committed. */
        boolean await() {
            int st;
            while ((st = status) == PENDING || st == RELEASING) {
                Thread.onSpinWait();
            }
            return st == COMMITTED;
        }
    }

    /** The GPUs the tenants with one affinity label share, and how many they are. */
    private record AffinityGroup(String node, Set<String> gpus, int members) {
        static AffinityGroup of(Placement p) {
            return new AffinityGroup(p.nodeName(), Set.copyOf(p.gpuUuids()), 1);
        }

        boolean matches(Placement p) {
            return node.equals(p.nodeName()) && gpus.equals(Set.copyOf(p.gpuUuids()));
        }

        AffinityGroup plus(int delta) {
            return new AffinityGroup(node, gpus, members + delta);
        }
    }

    private record Build(State state, Map<String, List<Reason>> refused) {
        void throwIfRefused(String message) {
            if (!refused.isEmpty()) {
                List<Reason> all = new ArrayList<>();
                refused.values().forEach(all::addAll);
                throw new LedgerStateException(message, all);
            }
        }
    }

    /** The structure of the ledger; replaced as a whole by structural changes. */
    private static final class State {
        final GranularityRules rules;
        final Slot[] slots;
        final Map<String, Slot> byName;
        final Map<String, Slot> byGpu;
        final ConcurrentHashMap<String, Entry> tenants;
        final ConcurrentHashMap<String, AffinityGroup> affinity;
        final NodeFeed feed;

        /**
         * Copies the slots' current states into new slots numbered by position; called only while no
         * change can run on the given slots (under the write lock, or before they are published).
         */
        private State(GranularityRules rules, List<Slot> slots, ConcurrentHashMap<String, Entry> tenants,
                      ConcurrentHashMap<String, AffinityGroup> affinity) {
            this.rules = rules;
            this.slots = new Slot[slots.size()];
            for (int i = 0; i < this.slots.length; i++) {
                Slot old = slots.get(i);
                this.slots[i] = new Slot(old.name, old.ref.get(), i);
            }
            this.feed = new NodeFeed(this.slots, rules);
            Map<String, Slot> names = new HashMap<>();
            Map<String, Slot> gpus = new HashMap<>();
            for (Slot s : this.slots) {
                names.put(s.name, s);
                for (GpuDevice g : s.ref.get().node().gpus()) {
                    gpus.put(g.uuid(), s);
                }
            }
            this.byName = names;
            this.byGpu = gpus;
            this.tenants = tenants;
            this.affinity = affinity;
        }

        State withSlots(List<Slot> newSlots) {
            return new State(rules, newSlots, tenants, affinity);
        }

        /** The nodes as they are now (with their GPUs' health), in ledger order. */
        List<Node> nodes() {
            List<Node> nodes = new ArrayList<>(slots.length);
            for (Slot slot : slots) {
                nodes.add(slot.ref.get().node());
            }
            return nodes;
        }

        /** Committed reservations by tenant id, sorted. */
        TreeMap<String, Placement> committed() {
            TreeMap<String, Placement> out = new TreeMap<>();
            tenants.forEach((id, e) -> {
                if (e.isCommitted()) {
                    out.put(id, e.placement);
                }
            });
            return out;
        }

        /**
         * Builds a state by replaying placements, in the order given, onto the nodes with every GPU healthy, then applying
         * the nodes' real health (so tenants displaced by a failure survive a restore). Refused
         * placements are collected; when {@code lenient} they are left out, otherwise the caller throws.
         */
        static Build build(GranularityRules rules, Collection<Node> nodes, Collection<Placement> placements,
                           boolean lenient) {
            Validate.notNull("rules", rules);
            Validate.list("nodes", nodes);
            Validate.list("placements", placements);
            Map<String, List<Reason>> refused = new LinkedHashMap<>();
            Map<String, Slot> byName = new LinkedHashMap<>();
            Map<String, String> gpuOwner = new HashMap<>();
            for (Node n : nodes) {
                if (byName.containsKey(n.name())) {
                    refused.computeIfAbsent("node:" + n.name(), k -> new ArrayList<>())
                            .add(Reason.of(ReasonCode.UNKNOWN_TARGET, n.name(), "duplicate node"));
                    continue;
                }
                for (GpuDevice g : n.gpus()) {
                    String other = gpuOwner.putIfAbsent(g.uuid(), n.name());
                    if (other != null) {
                        refused.computeIfAbsent("gpu:" + g.uuid(), k -> new ArrayList<>())
                                .add(Reason.of(ReasonCode.UNKNOWN_TARGET, g.uuid(), "GPU on both " + other + " and " + n.name()));
                    }
                }
                Node healthy = n;
                for (GpuDevice g : n.gpus()) {
                    if (!g.healthy()) {
                        healthy = healthy.withGpuHealth(g.uuid(), Health.HEALTHY);
                    }
                }
                byName.put(n.name(), new Slot(n.name(), NodeState.empty(healthy)));
            }
            State st = new State(rules, new ArrayList<>(byName.values()), new ConcurrentHashMap<>(), new ConcurrentHashMap<>());
            for (Placement p : placements) {
                Slot slot = st.byName.get(p.nodeName());
                List<Reason> why = new ArrayList<>();
                if (slot == null) {
                    why.add(Reason.of(ReasonCode.UNKNOWN_TARGET, p.nodeName(), "no such node"));
                } else if (st.tenants.containsKey(p.tenantId())) {
                    why.add(Reason.of(ReasonCode.DUPLICATE_TENANT, p.tenantId(), "listed twice"));
                } else {
                    Optional<String> label = p.claim().locality().affinity();
                    AffinityGroup g = label.map(st.affinity::get).orElse(null);
                    if (g != null && !g.matches(p)) {
                        why.add(Reason.of(ReasonCode.AFFINITY, p.nodeName(), "label " + label.get() + " is bound to "
                                + g.node() + " " + g.gpus()));
                    } else {
                        Admission.Result r = Admission.reserve(slot.ref.get(), p, rules);
                        if (r instanceof Admission.Rejected rej) {
                            why.addAll(rej.reasons());
                        } else {
                            slot.ref.set(((Admission.Admitted) r).next());
                            Entry e = new Entry(p);
                            e.resolve(true);
                            st.tenants.put(p.tenantId(), e);
                            label.ifPresent(l -> st.affinity.put(l, g == null ? AffinityGroup.of(p) : g.plus(1)));
                        }
                    }
                }
                if (!why.isEmpty()) {
                    refused.computeIfAbsent(p.tenantId(), k -> new ArrayList<>()).addAll(why);
                }
            }
            for (Node n : nodes) {
                Slot slot = st.byName.get(n.name());
                if (slot == null) {
                    continue;
                }
                for (GpuDevice g : n.gpus()) {
                    if (!g.healthy()) {
                        slot.ref.set(withHealth(slot.ref.get(), g.uuid(), g.health()));
                    }
                }
            }
            if (!lenient) {
                return new Build(st, refused);
            }
            Map<String, List<Reason>> tenantRefusals = new LinkedHashMap<>();
            refused.forEach((k, v) -> {
                if (!k.startsWith("node:") && !k.startsWith("gpu:")) {
                    tenantRefusals.put(k, v);
                }
            });
            return new Build(st, tenantRefusals);
        }
    }

    @Override
    public String toString() {
        State s = state;
        return "Ledger[" + s.slots.length + " nodes, " + s.tenants.size() + " reservations, rules " + s.rules.name() + "]";
    }
}
