package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.api.Slice;
import io.qgpu.core.ledger.internal.Admission;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

/**
 * Seeded property: on many random inventories and claim/release sequences, every {@code Placed}
 * result (1) is admitted again by a fresh ledger replaying the live placements in order, (2) never
 * oversubscribes anything, checked independently of the ledger's code, and (3) an
 * {@code Unschedulable} answer is given only when no node could really take the claim. Deliberately
 * broken placers in this file show that the property catches over-commitment and missed placements.
 */
class PlacementPropertyTest {

    private static final long SEED = Long.getLong("qgpu.seed", 7_700_001L);
    private static final GranularityRules RULES = GranularityRules.ofDefaults();

    /** What the property drives: the engine, or a broken stand-in. */
    interface Placer {
        PlacementResult place(Claim claim);

        Optional<Placement> release(String tenantId);

        /** What explain says place will choose, when the placer can explain. */
        default Optional<PlacementExplanation> explain(Claim claim) {
            return Optional.empty();
        }
    }

    static Placer engine(List<Node> nodes, GranularityRules rules) {
        PlacementEngine e = PlacementEngine.create(Ledger.create(rules, nodes));
        return new Placer() {
            public PlacementResult place(Claim claim) { return e.place(claim); }
            public Optional<Placement> release(String id) { return e.release(id); }
            public Optional<PlacementExplanation> explain(Claim claim) { return Optional.of(e.explain(claim)); }
        };
    }

    @Test
    void everyPlacementIsAdmittedByAFreshReplayAndNothingIsMissed() {
        List<String> v = run(PlacementPropertyTest::engine, SEED, 250);
        assertTrue(v.isEmpty(), () -> v.size() + " violation(s), first: " + v.get(0));
    }

    @Test
    void propertyRejectsAPlacerThatOvercommits() {
        List<String> v = run((nodes, rules) -> new FirstFitIgnoringCompute(nodes), SEED, 250);
        assertFalse(v.isEmpty(), "the broken placer must be caught");
        assertTrue(v.get(0).contains("fresh replay refused") || v.get(0).contains("oversubscribed")
                || v.get(0).contains("mixes") || v.get(0).contains("anti-affinity") || v.get(0).contains("kept for")
                || v.get(0).contains("unhealthy") || v.get(0).contains("selectors"), v.get(0));
    }

    @Test
    void propertyRejectsAnEngineWithLooserRules() {
        GranularityRules loose = RULES.toBuilder().maxTenantsPerGpu(64).memoryPerTenantSlotBytes(0).build();
        List<String> v = run((nodes, rules) -> engine(nodes, loose), SEED, 250);
        assertTrue(v.stream().anyMatch(s -> s.contains("tenants")), () -> v.isEmpty() ? "none" : v.get(0));
    }

    @Test
    void propertyRejectsAPlacerThatGivesUpTooEarly() {
        List<String> v = run((nodes, rules) -> new GivesUpOnMultiGpu(engine(nodes, rules)), SEED, 250);
        assertTrue(v.stream().anyMatch(s -> s.contains("missed")), () -> v.isEmpty() ? "none" : v.get(0));
    }

    // ------------------------------------------------------------------ the property

    static List<String> run(BiFunction<List<Node>, GranularityRules, Placer> factory, long seed, int cases) {
        List<String> violations = new ArrayList<>();
        for (int c = 0; c < cases && violations.isEmpty(); c++) {
            long caseSeed = seed + c;
            SplittableRandom rnd = new SplittableRandom(caseSeed);
            List<Node> nodes = Gen.cluster(rnd, 5);
            Placer placer = factory.apply(nodes, RULES);
            LinkedHashMap<String, Placement> live = new LinkedHashMap<>();
            for (int step = 0; step < 40 && violations.isEmpty(); step++) {
                String where = "seed " + caseSeed + " step " + step + ": ";
                if (!live.isEmpty() && rnd.nextInt(4) == 0) {
                    String id = new ArrayList<>(live.keySet()).get(rnd.nextInt(live.size()));
                    placer.release(id);
                    live.remove(id);
                    continue;
                }
                String id = !live.isEmpty() && rnd.nextInt(15) == 0 ? live.keySet().iterator().next() : "t" + step;
                Claim claim = Gen.claim(rnd, id, nodes);
                Ledger reference = replay(nodes, live.values(), violations, where);
                boolean feasible = !live.containsKey(id) && feasible(reference, claim);
                Optional<PlacementExplanation> ex = placer.explain(claim);
                PlacementResult r = placer.place(claim);
                if (ex.isPresent() && ex.get().chosen().isPresent() != r instanceof PlacementResult.Placed) {
                    violations.add(where + "explain and place disagree on schedulability: " + ex.get().table() + r);
                }
                if (ex.isPresent() && ex.get().chosen().isPresent() && r instanceof PlacementResult.Placed p
                        && !(ex.get().chosen().get().node().equals(p.placement().nodeName())
                        && new HashSet<>(ex.get().chosen().get().gpuUuids()).equals(new HashSet<>(p.placement().gpuUuids())))) {
                    violations.add(where + "explain chose " + ex.get().chosen().get().node() + ex.get().chosen().get().gpuUuids()
                            + " but place committed " + p.placement().nodeName() + p.placement().gpuUuids());
                }
                if (r instanceof PlacementResult.Placed p) {
                    if (live.containsKey(id)) {
                        violations.add(where + "placed duplicate tenant " + id);
                    }
                    if (!p.placement().claim().equals(claim)) {
                        violations.add(where + "placement is for another claim");
                    }
                    live.put(id, p.placement());
                    check(nodes, live, violations, where);
                    replay(nodes, live.values(), violations, where);
                } else {
                    PlacementResult.Unschedulable u = (PlacementResult.Unschedulable) r;
                    boolean conflict = u.general().stream().anyMatch(x -> x.code() == ReasonCode.CONFLICT);
                    if (feasible && !conflict) {
                        violations.add(where + "missed a feasible placement for " + claim + ": " + u.summary());
                    }
                    // every node is counted under a cause; the full detail is bounded (every node's
                    // detail, on request, is checked against explain in the testkit's FastRefusalAgreementTest)
                    int counted = u.causes().stream().mapToInt(io.qgpu.api.CauseCount::nodes).sum();
                    if (!live.containsKey(id) && !feasible && (u.nodeCount() != nodes.size() || counted != nodes.size()
                            || u.nodes().size() != Math.min(nodes.size(), PlacementEngine.DEFAULT_REFUSAL_DETAIL))) {
                        violations.add(where + "unschedulable must count every node and detail a bounded number: "
                                + u.nodeCount() + " " + u.causes() + " " + u.nodes().keySet());
                    }
                }
            }
        }
        return violations;
    }

    /** A fresh ledger with the live placements reserved in order; a refusal is a violation. */
    static Ledger replay(List<Node> nodes, Iterable<Placement> live, List<String> violations, String where) {
        Ledger fresh = Ledger.create(RULES, nodes);
        for (Placement p : live) {
            ReserveResult r = fresh.reserve(p);
            if (r instanceof ReserveResult.Refused f) {
                violations.add(where + "fresh replay refused " + p.tenantId() + ": " + f.summary());
            }
        }
        return fresh;
    }

    /** Whether any node could take the claim in the reference state, by the ledger's admission rules. */
    static boolean feasible(Ledger ref, Claim claim) {
        try {
            RULES.validate(claim);
        } catch (RuntimeException e) {
            return false;
        }
        Optional<String> aff = claim.locality().affinity();
        for (NodeState ns : ref.nodes()) {
            if (aff.isPresent()) {
                List<Integer> group = new ArrayList<>();
                for (int i = 0; i < ns.gpus().size(); i++) {
                    if (ns.gpu(i).hasAffinity(aff.get())) {
                        group.add(i);
                    }
                }
                if (!group.isEmpty()) {
                    if (group.size() != claim.gpuCount() || !Admission.checkNode(ns.node(), claim).isEmpty()) {
                        return false;
                    }
                    for (int i : group) {
                        if (!admits(ns.gpu(i), claim)) {
                            return false;
                        }
                    }
                    return true;
                }
            }
        }
        for (NodeState ns : ref.nodes()) {
            if (!Admission.checkNode(ns.node(), claim).isEmpty()) {
                continue;
            }
            int usable = 0;
            for (GpuState g : ns.gpus()) {
                usable += admits(g, claim) ? 1 : 0;
            }
            if (usable >= claim.gpuCount()) {
                return true;
            }
        }
        return false;
    }

    private static boolean admits(GpuState g, Claim claim) {
        long mem = claim.exclusive() ? g.device().memoryBytes() : claim.memoryPerGpuBytes();
        return Admission.checkGpu(g, claim, mem, RULES).isEmpty();
    }

    /** Independent of the ledger's code: sums, labels and selectors per GPU over the live placements. */
    static void check(List<Node> nodes, Map<String, Placement> live, List<String> violations, String where) {
        Map<String, Node> nodeOf = new HashMap<>();
        Map<String, GpuDevice> gpu = new HashMap<>();
        for (Node n : nodes) {
            for (GpuDevice g : n.gpus()) {
                nodeOf.put(g.uuid(), n);
                gpu.put(g.uuid(), g);
            }
        }
        Map<String, List<Placement>> onGpu = new HashMap<>();
        Map<String, String> affinity = new HashMap<>();
        for (Placement p : live.values()) {
            Claim c = p.claim();
            Node node = nodes.stream().filter(n -> n.name().equals(p.nodeName())).findFirst().orElse(null);
            if (node == null) {
                violations.add(where + p.tenantId() + " on unknown node " + p.nodeName());
                continue;
            }
            if (!c.selectors().matchesNode(node)) {
                violations.add(where + p.tenantId() + " on node " + node.name() + " whose labels do not match");
            }
            Set<String> set = new HashSet<>(p.gpuUuids());
            if (set.size() != c.gpuCount()) {
                violations.add(where + p.tenantId() + " has " + set.size() + " distinct GPUs, wanted " + c.gpuCount());
            }
            c.locality().affinity().ifPresent(l -> {
                String key = p.nodeName() + new java.util.TreeSet<>(set);
                String prev = affinity.putIfAbsent(l, key);
                if (prev != null && !prev.equals(key)) {
                    violations.add(where + "affinity " + l + " split over " + prev + " and " + key);
                }
            });
            for (Slice s : p.slices()) {
                GpuDevice d = gpu.get(s.gpuUuid());
                if (d == null || nodeOf.get(s.gpuUuid()) != node) {
                    violations.add(where + p.tenantId() + " slice on GPU " + s.gpuUuid() + " not on " + node.name());
                    continue;
                }
                if (!d.healthy()) {
                    violations.add(where + p.tenantId() + " on unhealthy GPU " + d.uuid());
                }
                if (d.reservedFor().isPresent() && d.reservedFor().get() != c.priority()) {
                    violations.add(where + p.tenantId() + " on GPU " + d.uuid() + " kept for the other class");
                }
                if (!c.selectors().allowsModel(d) || !c.selectors().allowsUuid(d)) {
                    violations.add(where + p.tenantId() + " on GPU " + d.uuid() + " its selectors exclude");
                }
                long want = c.exclusive() ? d.memoryBytes() : c.memoryPerGpuBytes();
                if (s.memoryBytes() != want) {
                    violations.add(where + p.tenantId() + " slice memory " + s.memoryBytes() + " != " + want);
                }
                onGpu.computeIfAbsent(d.uuid(), k -> new ArrayList<>()).add(p);
            }
        }
        for (Map.Entry<String, List<Placement>> e : onGpu.entrySet()) {
            GpuDevice d = gpu.get(e.getKey());
            List<Placement> ps = e.getValue();
            long mem = 0;
            int on = 0;
            int off = 0;
            Set<String> anti = new HashSet<>();
            Set<Optional<String>> exclusion = new HashSet<>();
            boolean exclusive = false;
            for (Placement p : ps) {
                Claim c = p.claim();
                mem += c.exclusive() ? d.memoryBytes() : c.memoryPerGpuBytes();
                if (c.priority() == PriorityClass.ONLINE) {
                    on += c.computeRequest();
                } else {
                    off += c.computeRequest();
                }
                exclusive |= c.exclusive();
                exclusion.add(c.locality().exclusion());
                c.locality().antiAffinity().ifPresent(l -> {
                    if (!anti.add(l)) {
                        violations.add(where + "GPU " + d.uuid() + " holds two tenants with anti-affinity " + l);
                    }
                });
            }
            if (mem > d.memoryBytes()) {
                violations.add(where + "GPU " + d.uuid() + " memory oversubscribed: " + mem + " > " + d.memoryBytes());
            }
            if (on > 100 || off > 100) {
                violations.add(where + "GPU " + d.uuid() + " guaranteed compute oversubscribed: online " + on + " offline " + off);
            }
            if (ps.size() > RULES.maxTenants(d)) {
                violations.add(where + "GPU " + d.uuid() + " holds " + ps.size() + " tenants, at most " + RULES.maxTenants(d));
            }
            if (exclusive && ps.size() > 1) {
                violations.add(where + "GPU " + d.uuid() + " held exclusively shares with " + (ps.size() - 1));
            }
            if (exclusion.size() > 1) {
                violations.add(where + "GPU " + d.uuid() + " mixes exclusion labels " + exclusion);
            }
        }
    }

    @Test
    void checkerItselfFlagsEachKindOfOvercommit() {
        Node n = Nodes.t4("a", 1);
        List<String> v = new ArrayList<>();
        Map<String, Placement> live = new LinkedHashMap<>();
        live.put("x", Nodes.on(Nodes.claim("x", 10, 60, 100), n, 0));
        live.put("y", Nodes.on(Nodes.claim("y", 10, 60, 100), n, 0));
        check(List.of(n), live, v, "");
        assertEquals(2, v.size(), v.toString());
        assertTrue(v.get(0).contains("memory oversubscribed") && v.get(1).contains("compute oversubscribed"), v.toString());
    }

    // ------------------------------------------------------------------ deliberately broken placers

    /** Fits memory and tenant counts but ignores compute, classes, labels, health and selectors. */
    static final class FirstFitIgnoringCompute implements Placer {
        private final List<Node> nodes;
        private final Map<String, Long> memUsed = new HashMap<>();
        private final Map<String, Integer> tenants = new HashMap<>();
        private final Map<String, Placement> held = new HashMap<>();

        FirstFitIgnoringCompute(List<Node> nodes) {
            this.nodes = nodes;
        }

        @Override
        public PlacementResult place(Claim claim) {
            if (held.containsKey(claim.tenantId())) {
                return new PlacementResult.Unschedulable(claim.tenantId(), Map.of(),
                        List.of(Reason.of(ReasonCode.DUPLICATE_TENANT, claim.tenantId(), "")));
            }
            for (Node n : nodes) {
                List<Slice> slices = new ArrayList<>();
                for (GpuDevice g : n.gpus()) {
                    long mem = claim.exclusive() ? g.memoryBytes() : claim.memoryPerGpuBytes();
                    if (slices.size() < claim.gpuCount() && memUsed.getOrDefault(g.uuid(), 0L) + mem <= g.memoryBytes()
                            && tenants.getOrDefault(g.uuid(), 0) < RULES.maxTenants(g)) {
                        slices.add(new Slice(g.uuid(), mem, claim.computeRequest(), claim.computeLimit()));
                    }
                }
                if (slices.size() == claim.gpuCount()) {
                    for (Slice s : slices) {
                        memUsed.merge(s.gpuUuid(), s.memoryBytes(), Long::sum);
                        tenants.merge(s.gpuUuid(), 1, Integer::sum);
                    }
                    Placement p = new Placement(claim, n.name(), slices);
                    held.put(claim.tenantId(), p);
                    return new PlacementResult.Placed(p);
                }
            }
            return new PlacementResult.Unschedulable(claim.tenantId(), Map.of(), List.of());
        }

        @Override
        public Optional<Placement> release(String tenantId) {
            Placement p = held.remove(tenantId);
            if (p != null) {
                for (Slice s : p.slices()) {
                    memUsed.merge(s.gpuUuid(), -s.memoryBytes(), Long::sum);
                    tenants.merge(s.gpuUuid(), -1, Integer::sum);
                }
            }
            return Optional.ofNullable(p);
        }
    }

    /** The real engine, except that it wrongly reports every multi-GPU claim unschedulable. */
    record GivesUpOnMultiGpu(Placer inner) implements Placer {
        @Override
        public PlacementResult place(Claim claim) {
            if (claim.gpuCount() > 1) {
                return new PlacementResult.Unschedulable(claim.tenantId(), Map.of(), List.of());
            }
            return inner.place(claim);
        }

        @Override
        public Optional<Placement> release(String tenantId) {
            return inner.release(tenantId);
        }
    }
}
