package io.qgpu.kubernetes.extender;

import io.qgpu.api.Claim;
import io.qgpu.api.PlacementPolicy;
import io.qgpu.api.Validate;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.NodeVersions;
import io.qgpu.api.Reason;
import io.qgpu.core.placement.PlacementConfig;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * A memo of the engine's per-node check ({@link NodeChecks}): the answer for one node depends only on
 * the claim's shape (every field but the tenant id) and on that node's state, so it is kept per shape
 * and node, and given again while the node's version ({@link NodeVersions}, one array read per node)
 * is the one the answer was computed under. Every change of a node (a reservation, a release, a health
 * change) gives it a new version, so a changed node is always checked again by the engine. kube-scheduler
 * asks {@code filter} and then {@code prioritize} for the same pod over the same nodes, and pods of one
 * workload share a shape: most nodes of a request have not changed since the last pod of that shape
 * asked about them. With a refusal the memo also keeps what the check it stands for said about it
 * ({@link Checked#resolvable}: whether the node could take the shape empty), so that filter does not
 * check a refused node GPU by GPU again while it is unchanged, and the reason's message, written once
 * (filter sends it for every refused node it is asked about).
 *
 * <p>Names that come with their positions in this memo's own name table ({@link CandidateNames}, as
 * the request reader makes them) are not looked up again.
 *
 * <p>Not memoised (the engine answers every time): claims with an affinity label (the answer depends
 * on where the label's other tenants are, on any node) and claims under the fragmentation policy (the
 * answer depends on the sample of recent requests, which every placement changes). A node name the
 * ledger does not know is left to the engine.
 *
 * <p>Bounded: at most {@code maxShapes} shapes are kept (the least recently asked dropped first), each
 * with one entry per node of the ledger. A structural change of the ledger (a node added or removed)
 * drops everything.
 *
 * <p>Consistency: each node's answer reflects every change of that node whose ledger call returned
 * before this check began ({@link NodeVersions#refresh}); a change still under way may or may not be
 * reflected. The node's version is read before the engine checks it, so an answer computed from a
 * newer state than it was filed under is filed under a version that is no longer current, and is
 * never given again.
 *
 * <p>Thread safety: thread-safe. A shape's entries are read and written under the shape's lock
 * (held for one pass over the request's names, never while the engine works); the shape table is
 * guarded by its own lock, held only to find a shape.
 */
final class FitCache implements NodeChecks {
    /**
     * Default bound on the entries of all shapes together (each shape has one per node): about 30 bytes
     * each, plus the message of a refused node's reason (about 100 bytes) where there is one.
     */
    static final int DEFAULT_MAX_ENTRIES = 1 << 21;
    private static final String KEY_TENANT = "-";

    private final Ledger ledger;
    private final PlacementConfig config;
    private final NodeChecks engine;
    private final int maxEntries;
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private volatile Nodes nodes;
    private final LinkedHashMap<Claim, Shape> shapes = new LinkedHashMap<>(64, 0.75f, true);

    FitCache(Ledger ledger, PlacementConfig config, NodeChecks engine, int maxEntries) {
        this.ledger = Validate.notNull("ledger", ledger);
        this.config = Validate.notNull("config", config);
        this.engine = Validate.notNull("engine", engine);
        this.maxEntries = Validate.between("maxEntries", maxEntries, 1, Integer.MAX_VALUE);
    }

    /** One ledger structure: positions by name, and the ledger's version of each position's state. */
    private static final class Nodes {
        final NodeVersions versions;
        final NodeNameTable positions;

        Nodes(NodeVersions versions) {
            this.versions = versions;
            this.positions = NodeNameTable.of(versions.names());
        }

        int size() {
            return versions.size();
        }
    }

    /**
     * The entries of one shape, by node position: the version of the node's state the answer was
     * computed for (0: none yet), the total ({@code NaN} when refused), the reason (when refused) and
     * whether a refused node could take the shape empty ({@link Checked#resolvable}).
     * Guarded by the shape's lock.
     */
    private static final class Shape {
        /**
         * By position {@code p}: the version at {@code [2p]} and the total's bits at {@code [2p + 1]},
         * side by side, so that a node the memo settles costs one place read (a fitting node's
         * reason is never read: a refused node's total is {@code NaN}, {@link Checked}).
         */
        final long[] entry;
        final Reason[] reason;
        /** The reason's {@link Reason#message()}, written once per answer (filter sends it for every refused node). */
        final String[] message;
        final boolean[] resolvable;

        Shape(int size) {
            this.entry = new long[2 * size];
            this.reason = new Reason[size];
            this.message = new String[size];
            this.resolvable = new boolean[size];
        }
    }

    /**
     * One thread's working arrays for {@link #check} (positions, versions, the indices the memo
     * missed), kept between calls instead of made for each request's 500 names; grown as needed.
     */
    private static final class Scratch {
        int[] position = new int[0];
        long[] version = new long[0];
        int[] missAt = new int[0];

        Scratch ensure(int size) {
            if (position.length < size) {
                int n = Math.max(size, 2 * position.length);
                position = new int[n];
                version = new long[n];
                missAt = new int[n];
            }
            return this;
        }
    }

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    @Override
    public Checked check(Claim claim, List<String> nodeNames) {
        Validate.notNull("claim", claim);
        Validate.notNull("nodeNames", nodeNames);
        if (!memoisable(claim)) {
            return engine.check(claim, nodeNames);
        }
        Nodes n = nodes();
        Shape shape = shape(claim, n);
        int size = nodeNames.size();
        double[] totals = new double[size];
        Reason[] reasons = new Reason[size];
        String[] messages = new String[size];
        boolean[] resolvable = new boolean[size];
        Scratch scratch = SCRATCH.get().ensure(size);   // the engine does not call back into the memo on this thread
        int[] position = scratch.position;
        long[] version = scratch.version;
        // the request reader's names come with their positions in the table they were read against:
        // taken as they are when that is this structure's table, else looked up
        CandidateNames read = nodeNames instanceof CandidateNames c && c.table() == n.positions ? c : null;
        n.versions.refresh();   // every change whose ledger call returned before this check is seen
        for (int j = 0; j < size; j++) {
            int p = read != null ? read.position(j) : n.positions.indexOf(Validate.notNull("nodeNames[]", nodeNames.get(j)));
            position[j] = p;
            version[j] = p < 0 ? 0 : n.versions.version(p);   // read before the engine looks at the node
        }
        int[] missAt = scratch.missAt;
        int m = 0;
        synchronized (shape) {
            for (int j = 0; j < size; j++) {
                int p = position[j];
                if (p >= 0 && shape.entry[2 * p] == version[j]) {
                    double total = Double.longBitsToDouble(shape.entry[2 * p + 1]);
                    totals[j] = total;
                    if (Double.isNaN(total)) {
                        reasons[j] = shape.reason[p];
                        messages[j] = shape.message[p];
                        resolvable[j] = shape.resolvable[p];
                    }
                } else {
                    missAt[m++] = j;
                }
            }
        }
        hits.add(size - m);
        misses.add(m);
        if (m > 0) {
            List<String> missNames = new ArrayList<>(m);
            for (int k = 0; k < m; k++) {
                missNames.add(nodeNames.get(missAt[k]));
            }
            Checked fresh = engine.check(claim, missNames);
            synchronized (shape) {
                for (int k = 0; k < m; k++) {
                    int j = missAt[k];
                    totals[j] = fresh.total(k);
                    reasons[j] = fresh.reason(k);
                    messages[j] = reasons[j] == null ? null : fresh.message(k);
                    resolvable[j] = fresh.resolvable(k);
                    int p = position[j];
                    if (p >= 0 && version[j] >= shape.entry[2 * p]) {   // never over an answer for a newer state
                        shape.entry[2 * p] = version[j];
                        shape.entry[2 * p + 1] = Double.doubleToRawLongBits(totals[j]);
                        shape.reason[p] = reasons[j];
                        shape.message[p] = messages[j];
                        shape.resolvable[p] = resolvable[j];
                    }
                }
            }
        }
        return new Checked(nodeNames, totals, reasons, resolvable, messages);
    }

    /** The names of the ledger's current structure, by position. */
    NodeNameTable names() {
        return nodes().positions;
    }

    /** Answers given from the memo, and answers the engine computed, since this cache was made. */
    long[] counts() {
        return new long[] {hits.sum(), misses.sum()};
    }

    private boolean memoisable(Claim claim) {
        return claim.locality().affinity().isEmpty()
                && config.nodePolicyFor(claim) != PlacementPolicy.FRAGMENTATION
                && config.gpuPolicyFor(claim) != PlacementPolicy.FRAGMENTATION;
    }

    /** The current structure's table, rebuilt (and every shape dropped) when the structure changed. */
    private Nodes nodes() {
        Nodes n = nodes;
        if (n == null || !n.versions.isCurrent()) {
            synchronized (shapes) {
                n = nodes;
                if (n == null || !n.versions.isCurrent()) {
                    n = new Nodes(NodeVersions.of(ledger));
                    shapes.clear();
                    nodes = n;
                }
            }
        }
        return n;
    }

    /**
     * The shape's entries (made if new, the least recently asked dropped past the bound). For a
     * structure that is no longer current, a throw-away table nobody else sees.
     */
    private Shape shape(Claim claim, Nodes n) {
        Claim key = claim.toBuilder().tenantId(KEY_TENANT).build();
        int perShape = Math.max(1, n.size());
        int maxShapes = Math.max(1, maxEntries / perShape);
        synchronized (shapes) {
            if (nodes != n) {
                return new Shape(n.size());
            }
            Shape s = shapes.get(key);
            if (s == null) {
                s = new Shape(n.size());
                shapes.put(key, s);
                while (shapes.size() > maxShapes) {
                    var eldest = shapes.keySet().iterator();
                    eldest.next();
                    eldest.remove();
                }
            }
            return s;
        }
    }
}
