package io.qgpu.testkit.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.CauseCount;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuState;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.Placement;
import io.qgpu.api.PlacementResult;
import io.qgpu.api.ReasonCode;
import io.qgpu.json.Inventory;
import io.qgpu.core.ledger.AdmissionRules;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.placement.NodeFit;
import io.qgpu.core.placement.PlacementEngine;
import io.qgpu.core.placement.PlacementExplanation;
import io.qgpu.testkit.property.ClaimOptions;
import io.qgpu.testkit.property.InventoryOptions;
import io.qgpu.testkit.property.Op;
import io.qgpu.testkit.property.Property;
import io.qgpu.testkit.property.PropertyResult;
import io.qgpu.testkit.property.QgpuGens;
import io.qgpu.testkit.property.PropertyScenario;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Same answers: the engine's fast refusals (the key and summary scan, the bounded detail) and its
 * per-node {@code check} agree with the full evaluation ({@code explain}, which evaluates every node
 * on its own state and builds every reason), on seeded scenarios of the testkit's generators: 1 to 5
 * fake machines (T4 PCIe, V100 NVLink cube mesh, DGX H100 NVSwitch...), pool labels, unhealthy GPUs,
 * GPUs kept for a class; claims of 1 to 4 GPUs, shared or whole, both classes, affinity,
 * anti-affinity and exclusion labels, model, UUID and node-label selectors; places and releases.
 *
 * <p>For every placed claim of a scenario:
 * <ol>
 *   <li>{@code place} refuses exactly when {@code explain} finds no candidate, and when it places, it
 *       places on explain's chosen node and GPUs (placements unchanged);</li>
 *   <li>{@code check} over every node refuses exactly the nodes explain rejects, and gives a fitting
 *       node explain's GPU set;</li>
 *   <li>a refusal counts every node once, and its counts are the codes of {@code check}'s reasons
 *       (the same summaries); each detailed node's reasons are explain's; with every node's detail
 *       asked for, the detail is explain's rejected map exactly;</li>
 *   <li>independently of the summaries (which explain shares): no node of a refusal has {@code k}
 *       GPUs that {@link AdmissionRules#checkGpu} admits (claims without set-wide constraints).</li>
 * </ol>
 * {@link #theHarnessCatchesABrokenFastPath} runs the same property against a deliberately broken
 * fast path (a summary that confuses "admissible GPUs" with "empty GPUs" for multi-GPU claims) and
 * requires it to be falsified. Separately, two mutants of the real engine were falsified by this
 * property at its fixed seed and are not kept in the sources: the key check off by one
 * ({@code open <= k} instead of {@code open < k} in {@code NodeIndex.cause}): case 1 of 150; the
 * summary's tenant-slot check off by one ({@code <= k} in {@code NodeSummary.precheckCause}, which
 * explain shares, caught by item 4): case 4 of 150. With host resources
 * ({@link #fastRefusalsAndChecksAgreeWithHostResources}): the summary's CPU check removed is falsified
 * at case 1 of 150; this property found that {@code check} built an empty GPU set for a host-only claim
 * and that the affinity-group path skipped the host rule (both fixed);
 * {@link #theHarnessCatchesMiscountedHostCauses} rejects counts that put CPU-short nodes under another cause.
 */
class FastRefusalAgreementTest {

    private static final long SEED = 18_181_818L;
    private static final int CASES = 150;

    /** What the property drives: the engine, or a broken stand-in. */
    interface Engines {
        PlacementResult place(Claim claim);

        /** The same, with every node's detail. */
        PlacementResult placeWithFullDetail(Claim claim);

        List<NodeFit> check(Claim claim, List<String> nodes);

        PlacementExplanation explain(Claim claim);

        void release(String tenant);
    }

    static Engines real(Ledger ledger) {
        PlacementEngine bounded = PlacementEngine.create(ledger);
        PlacementEngine full = PlacementEngine.builder(ledger).refusalDetail(PlacementEngine.ALL_NODES).build();
        return new Engines() {
            public PlacementResult place(Claim claim) { return bounded.place(claim); }
            public PlacementResult placeWithFullDetail(Claim claim) { return full.place(claim); }
            public List<NodeFit> check(Claim claim, List<String> nodes) { return bounded.check(claim, nodes); }
            public PlacementExplanation explain(Claim claim) { return full.explain(claim); }
            public void release(String tenant) { ledger.release(tenant); }
        };
    }

    /** The scenarios of the property; with {@code host}, nodes declare CPU and host memory and claims ask for them (some host-only). */
    static io.qgpu.testkit.property.Gen<PropertyScenario> scenarios(boolean host) {
        return QgpuGens.scenarios(InventoryOptions.defaults().withNodes(1, 5).withReservedFor(true).withHost(host),
                ClaimOptions.defaults().withHost(host), 40);
    }

    static PropertyResult<PropertyScenario> run(Function<Ledger, Engines> factory) {
        return run(factory, false);
    }

    static PropertyResult<PropertyScenario> run(Function<Ledger, Engines> factory, boolean host) {
        return Property.forAll(scenarios(host)).seed(SEED).tries(CASES).maxShrinks(200)
                .runVerify(s -> verify(s, factory));
    }

    @Test
    void fastRefusalsAndChecksAgreeWithTheFullEvaluation() {
        run(FastRefusalAgreementTest::real).orThrow();
    }

    /**
     * The same property where nodes declare CPU and host memory and claims ask for them (host-only
     * claims included): the host checks of the summaries ({@code INSUFFICIENT_CPU},
     * {@code INSUFFICIENT_HOST_MEMORY}) agree with explain's, and refused nodes are counted once.
     */
    @Test
    void fastRefusalsAndChecksAgreeWithHostResources() {
        run(FastRefusalAgreementTest::real, true).orThrow();
    }

    /**
     * Every claim shape on nearly full mixed clusters: 2 to 5 nodes of DGX-1V (NVLink, two NUMA nodes),
     * DGX H100 and DGX A100 (NVSwitch), GPUs kept for a class; claims of 1 to 8 GPUs, shared and whole,
     * both classes, 80 operations per scenario so that nodes fill up. The tier keys and summaries
     * (the 2nd, 4th and 8th largest free memory and compute, which refuse multi-GPU shared claims
     * without a GPU walk) agree with explain, and no refused node has k GPUs the ledger admits.
     * A tier off by one (the 8th largest taken for claims of 4 GPUs) was falsified by this property
     * (checked by hand, not kept in the sources).
     */
    @Test
    void fastRefusalsAgreeForEveryShapeOnMixedNvLinkAndNvSwitchNodes() {
        Property.forAll(QgpuGens.scenarios(InventoryOptions.defaults().withNodes(2, 5).withReservedFor(true)
                                .withMachines(List.of(io.qgpu.testkit.machines.Machines.DGX_1V,
                                        io.qgpu.testkit.machines.Machines.DGX_H100, io.qgpu.testkit.machines.Machines.DGX_A100)),
                        ClaimOptions.defaults().withMaxGpus(8), 80))
                .seed(SEED).tries(CASES).maxShrinks(200)
                .runVerify(s -> verify(s, FastRefusalAgreementTest::real)).orThrow();
    }

    /**
     * Issue 29's shapes on nearly full mixed clusters, capacity only: 2 to 5 DGX-1V (NVLink, two NUMA
     * nodes), DGX H100 and DGX A100 (NVSwitch) nodes, GPUs kept for a class; claims of 1 to 8 GPUs,
     * shared and whole, both classes, no labels or selectors (so that nothing but memory, compute,
     * slots and whole GPUs decides), 120 operations per scenario. Shared claims are refused here by
     * the refusal levels ({@code RefusalTiers}: the memory and the compute on the same GPUs) as well
     * as by the first key, the tiers and the GPU walk; place, check and explain agree, and no refused
     * node has k GPUs the ledger admits. The property must reach the levels: it counts the nodes
     * {@code check} refuses by a level (their words name the level) and requires some.
     *
     * <p>A broken level key is caught (a mutation run by hand, not kept in the sources): with the
     * claim's level chosen one step too high in {@code ClaimShape} ({@code LEVELS[j + 1] <=
     * minComputeFree + 5}, so a 15% claim is held to the GPUs with 20% free), this property is
     * falsified at case 98 of 150 and the mixed-shapes one above at case 1 of 150, both by item 4 (a
     * refused node has k GPUs the ledger's rules admit), which does not share the summaries.
     */
    @Test
    void fastRefusalsAgreeForEveryShapeOnNearlyFullCapacityOnlyClusters() {
        int[] levelRefusals = new int[1];
        Property.forAll(QgpuGens.scenarios(InventoryOptions.defaults().withNodes(2, 5).withReservedFor(true)
                                .withMachines(List.of(io.qgpu.testkit.machines.Machines.DGX_1V,
                                        io.qgpu.testkit.machines.Machines.DGX_H100, io.qgpu.testkit.machines.Machines.DGX_A100)),
                        ClaimOptions.defaults().withMaxGpus(8).withLocality(false).withSelectors(false), 120))
                .seed(SEED).tries(CASES).maxShrinks(200)
                .runVerify(s -> verify(s, ledger -> countingLevels(real(ledger), levelRefusals))).orThrow();
        assertTrue(levelRefusals[0] > 100, "node refusals by a level: " + levelRefusals[0]);
    }

    /**
     * Nearly full mixed clusters under one rules preset: 2 to 5 DGX-1V, DGX H100 and DGX A100 nodes,
     * GPUs kept for a class; claims of every shape (1 to 8 GPUs, shared and whole, both classes) on the
     * preset's grid (MiB for hami, 256 MiB for gpu-manager, GiB for qgpu; 1% or 5% compute), capacity
     * only, 120 operations per scenario so that nodes fill up.
     */
    static io.qgpu.testkit.property.Gen<PropertyScenario> nearlyFull(String preset) {
        return QgpuGens.scenarios(InventoryOptions.defaults().withRules(io.qgpu.api.GranularityRules.preset(preset))
                        .withNodes(2, 5).withReservedFor(true)
                        .withMachines(List.of(io.qgpu.testkit.machines.Machines.DGX_1V,
                                io.qgpu.testkit.machines.Machines.DGX_H100, io.qgpu.testkit.machines.Machines.DGX_A100)),
                ClaimOptions.defaults().withMaxGpus(8).withLocality(false).withSelectors(false), 120);
    }

    /**
     * Every shape, every rules preset, nearly full clusters: the fast refusals (the key scan, the
     * tier and level keys read only for the nodes a placement would read in full, a refusal counted
     * from the index by free room when its largest keys refuse the claim at the first test) and
     * {@code check} agree with explain, and no refused node has k GPUs the ledger admits. The
     * property must reach refusals of every shape: it counts the refused claims per shape (shared or
     * whole, 1, 2, 4 or 8 GPUs and the others) and requires some of each kind.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"qgpu", "hami", "gpu-manager"})
    void fastRefusalsAgreeForEveryShapeAndEveryRulesPresetOnNearlyFullClusters(String preset) {
        Map<String, Integer> refused = new java.util.TreeMap<>();
        Property.forAll(nearlyFull(preset)).seed(SEED).tries(CASES).maxShrinks(200)
                .runVerify(s -> verify(s, ledger -> countingRefusals(real(ledger), refused))).orThrow();
        for (String kind : List.of("shared-1", "shared-2", "shared-4+", "whole-1", "whole-2", "whole-4+")) {
            assertTrue(refused.getOrDefault(kind, 0) > 0, () -> preset + ": no refused claim of kind " + kind + ": " + refused);
        }
    }

    /**
     * The same property under every preset rejects a refusal that counts every node under its most
     * frequent cause (what a refusal counted from the largest keys would give if it took the code
     * they refuse with for every node's, where that holds only at the first test).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"qgpu", "hami", "gpu-manager"})
    void theHarnessCatchesARefusalCountedUnderOneCauseUnderEveryPreset(String preset) {
        PropertyResult<PropertyScenario> r = Property.forAll(nearlyFull(preset)).seed(SEED).tries(CASES).maxShrinks(200)
                .runVerify(s -> verify(s, ledger -> new OneCauseForAll(real(ledger))));
        PropertyResult.Falsified<PropertyScenario> f = assertInstanceOf(PropertyResult.Falsified.class, r, preset);
        assertTrue(f.failure().getMessage().contains("counts are not check's codes"), f.failure().getMessage());
    }

    /** The engine, counting its refused claims by kind ({@code shared-1}, {@code whole-4+}, ...). */
    static Engines countingRefusals(Engines real, Map<String, Integer> count) {
        return new Engines() {
            public PlacementResult place(Claim claim) {
                PlacementResult r = real.place(claim);
                if (r instanceof PlacementResult.Unschedulable u && u.general().isEmpty()) {
                    int k = claim.gpuCount();
                    String kind = (claim.exclusive() ? "whole-" : "shared-") + (k >= 4 ? "4+" : String.valueOf(k));
                    count.merge(kind, 1, Integer::sum);
                }
                return r;
            }
            public PlacementResult placeWithFullDetail(Claim claim) { return real.placeWithFullDetail(claim); }
            public List<NodeFit> check(Claim claim, List<String> nodes) { return real.check(claim, nodes); }
            public PlacementExplanation explain(Claim claim) { return real.explain(claim); }
            public void release(String tenant) { real.release(tenant); }
        };
    }

    /** The engine, counting the nodes {@code check} refuses by a refusal level (words: "... and at least N% free ..." or "below N%"). */
    static Engines countingLevels(Engines real, int[] count) {
        return new Engines() {
            public PlacementResult place(Claim claim) { return real.place(claim); }
            public PlacementResult placeWithFullDetail(Claim claim) { return real.placeWithFullDetail(claim); }
            public List<NodeFit> check(Claim claim, List<String> nodes) {
                List<NodeFit> out = real.check(claim, nodes);
                for (NodeFit f : out) {
                    if (f instanceof NodeFit.Refused r && r.reason().message().matches(".*(and at least|, below) [0-9]+%.*")) {
                        count[0]++;
                    }
                }
                return out;
            }
            public PlacementExplanation explain(Claim claim) { return real.explain(claim); }
            public void release(String tenant) { real.release(tenant); }
        };
    }

    @Test
    void theHarnessCatchesABrokenFastPath() {
        PropertyResult<PropertyScenario> r = run(ledger -> new EmptyGpusOnly(ledger, real(ledger)));
        PropertyResult.Falsified<PropertyScenario> f = assertInstanceOf(PropertyResult.Falsified.class, r);
        assertTrue(f.failure().getMessage().contains("place refused what explain places")
                || f.failure().getMessage().contains("check on"), f.failure().getMessage());
    }

    /** A refusal that counts CPU-short nodes under another cause is falsified by the host scenarios. */
    @Test
    void theHarnessCatchesMiscountedHostCauses() {
        PropertyResult<PropertyScenario> r = run(ledger -> new CpuCountedAsGpus(real(ledger)), true);
        PropertyResult.Falsified<PropertyScenario> f = assertInstanceOf(PropertyResult.Falsified.class, r);
        assertTrue(f.failure().getMessage().contains("counts are not check's codes"), f.failure().getMessage());
    }

    // ------------------------------------------------------------------ the property

    private static void verify(PropertyScenario s, Function<Ledger, Engines> factory) {
        Inventory inv = s.inventory();
        Ledger ledger = Ledger.create(inv.rules(), inv.nodes());
        Engines e = factory.apply(ledger);
        List<String> names = inv.nodes().stream().map(Node::name).toList();
        int step = 0;
        for (Op op : s.ops()) {
            step++;
            if (op instanceof Op.Release rel) {
                e.release(rel.tenantId());
                continue;
            }
            Claim claim = ((Op.Place) op).claim();
            String where = "step " + step + " " + claim + ": ";
            PlacementExplanation ex = e.explain(claim);
            List<NodeFit> fits = e.check(claim, names);
            PlacementResult r = e.place(claim);
            if (!ex.general().isEmpty()) {
                assertInstanceOf(PlacementResult.Unschedulable.class, r, where);
                continue;
            }
            Set<String> candidates = ex.candidates().stream().map(PlacementExplanation.Candidate::node).collect(Collectors.toSet());
            for (NodeFit f : fits) {
                assertEquals(candidates.contains(f.node()), f instanceof NodeFit.Fits,
                        () -> where + "check on " + f.node() + " says " + f + ", explain " + ex.table());
                if (f instanceof NodeFit.Fits ok) {
                    PlacementExplanation.Candidate cd = ex.candidates().stream().filter(c -> c.node().equals(ok.node()))
                            .findFirst().orElseThrow();
                    assertEquals(cd.gpus(), ok.gpus(), () -> where + "check's set on " + ok.node());
                }
            }
            if (ex.chosen().isPresent()) {
                Placement p = assertInstanceOf(PlacementResult.Placed.class, r,
                        () -> where + "place refused what explain places: " + r).placement();
                assertEquals(ex.chosen().get().node(), p.nodeName(), where);
                assertEquals(ex.chosen().get().gpuUuids(), p.gpuUuids(), where);
                continue;
            }
            PlacementResult.Unschedulable u = assertInstanceOf(PlacementResult.Unschedulable.class, r,
                    () -> where + "place placed what explain refuses: " + r);
            // independent of the summaries: no refused node has k GPUs the ledger's own rules admit
            // (for claims without set-wide constraints: affinity, must-include GPUs, numa: required)
            if (claim.locality().affinity().isEmpty() && claim.selectors().mustIncludeCount() == 0
                    && claim.numa() != io.qgpu.api.NumaPolicy.REQUIRED && !claim.hostOnly()) {
                for (NodeState ns : ledger.nodes()) {
                    assertTrue(!admitted(ns, claim, inv), () -> where + "refused node " + ns.name()
                            + ", which has enough GPUs the ledger's rules admit");
                }
            }
            assertEquals(names.size(), u.nodeCount(), where);
            assertEquals(tally(fits), u.causes(), () -> where + "counts are not check's codes");
            u.nodes().forEach((node, why) -> assertEquals(ex.rejected().get(node), why, where + node));
            assertEquals(Math.min(names.size(), PlacementEngine.DEFAULT_REFUSAL_DETAIL), u.nodes().size(), where);
            PlacementResult.Unschedulable all = assertInstanceOf(PlacementResult.Unschedulable.class,
                    e.placeWithFullDetail(claim), where);
            assertEquals(ex.rejected(), all.nodes(), where + "full detail");
            assertEquals(u.causes(), all.causes(), where);
        }
    }

    /** Whether the node's labels match and at least {@code k} of its GPUs pass {@link AdmissionRules#checkGpu}. */
    private static boolean admitted(NodeState ns, Claim claim, Inventory inv) {
        if (!AdmissionRules.checkNode(ns.node(), claim).isEmpty() || !AdmissionRules.checkHost(ns, claim).isEmpty()) {
            return false;
        }
        int ok = 0;
        for (GpuState g : ns.gpus()) {
            long mem = claim.exclusive() ? g.device().memoryBytes() : claim.memoryPerGpuBytes();
            ok += AdmissionRules.checkGpu(g, claim, mem, inv.rules()).isEmpty() ? 1 : 0;
        }
        return ok >= claim.gpuCount();
    }

    private static List<CauseCount> tally(List<NodeFit> fits) {
        Map<ReasonCode, Integer> m = new EnumMap<>(ReasonCode.class);
        for (NodeFit f : fits) {
            if (f instanceof NodeFit.Refused no) {
                m.merge(no.reason().code(), 1, Integer::sum);
            }
        }
        return CauseCount.ordered(m);
    }

    // ------------------------------------------------------------------ a broken fast path

    /** A stand-in that answers as {@code real} does except where a subclass breaks it on purpose. */
    abstract static class Forwarding implements Engines {
        final Engines real;

        Forwarding(Engines real) {
            this.real = real;
        }

        @Override
        public PlacementResult place(Claim claim) {
            return real.place(claim);
        }

        @Override
        public PlacementResult placeWithFullDetail(Claim claim) {
            return real.placeWithFullDetail(claim);
        }

        @Override
        public List<NodeFit> check(Claim claim, List<String> nodes) {
            return real.check(claim, nodes);
        }

        @Override
        public PlacementExplanation explain(Claim claim) {
            return real.explain(claim);
        }

        @Override
        public void release(String tenant) {
            real.release(tenant);
        }
    }

    /**
     * A fast path with a summary bug: for a multi-GPU claim it counts only empty GPUs (as if every
     * multi-GPU claim took whole GPUs), so it refuses a shared 2-GPU claim that fits on GPUs that
     * already have tenants; otherwise it answers as the engine does.
     */
    static final class EmptyGpusOnly extends Forwarding {
        private final Ledger ledger;

        EmptyGpusOnly(Ledger ledger, Engines real) {
            super(real);
            this.ledger = ledger;
        }

        private boolean refusesByEmptyGpus(Claim claim, NodeState ns) {
            if (claim.gpuCount() < 2) {
                return false;
            }
            int empty = 0;
            for (GpuState g : ns.gpus()) {
                empty += g.isEmpty() && g.device().healthy() ? 1 : 0;
            }
            return empty < claim.gpuCount();
        }

        @Override
        public PlacementResult place(Claim claim) {
            List<NodeState> nodes = ledger.nodes();
            if (nodes.stream().allMatch(ns -> refusesByEmptyGpus(claim, ns)) && real.explain(claim).schedulable()) {
                // the bug shows only where the engine would place: elsewhere this answers as the engine does
                return new PlacementResult.Unschedulable(claim.tenantId(), Map.of(), List.of(),
                        List.of(new CauseCount(ReasonCode.EXCLUSIVE, nodes.size())), nodes.size());
            }
            return real.place(claim);
        }

        @Override
        public List<NodeFit> check(Claim claim, List<String> nodes) {
            List<NodeFit> out = new ArrayList<>();
            for (NodeFit f : real.check(claim, nodes)) {
                boolean broken = refusesByEmptyGpus(claim, ledger.node(f.node()).orElseThrow());
                out.add(broken && f instanceof NodeFit.Fits ? new NodeFit.Refused(f.node(),
                        io.qgpu.api.Reason.of(ReasonCode.EXCLUSIVE, f.node(), "no free whole GPUs")) : f);
            }
            return out;
        }
    }

    /**
     * Broken on purpose: a refusal that counts every node under the cause most nodes have (as if the
     * code the largest keys refuse a claim with were every node's); otherwise the engine.
     */
    static final class OneCauseForAll extends Forwarding {
        OneCauseForAll(Engines real) {
            super(real);
        }

        @Override
        public PlacementResult place(Claim claim) {
            PlacementResult r = real.place(claim);
            if (!(r instanceof PlacementResult.Unschedulable u) || u.causes().size() < 2) {
                return r;
            }
            return new PlacementResult.Unschedulable(u.tenantId(), u.nodes(), u.general(),
                    List.of(new CauseCount(u.causes().get(0).code(), u.nodeCount())), u.nodeCount());
        }
    }

    /** A refusal whose counts put nodes short of CPU under {@code NOT_ENOUGH_GPUS}; otherwise the engine. */
    static final class CpuCountedAsGpus extends Forwarding {
        CpuCountedAsGpus(Engines real) {
            super(real);
        }

        @Override
        public PlacementResult place(Claim claim) {
            PlacementResult r = real.place(claim);
            if (!(r instanceof PlacementResult.Unschedulable u)) {
                return r;
            }
            Map<ReasonCode, Integer> m = new EnumMap<>(ReasonCode.class);
            for (CauseCount c : u.causes()) {
                ReasonCode code = c.code() == ReasonCode.INSUFFICIENT_CPU ? ReasonCode.NOT_ENOUGH_GPUS : c.code();
                m.merge(code, c.nodes(), Integer::sum);
            }
            return new PlacementResult.Unschedulable(u.tenantId(), u.nodes(), u.general(), CauseCount.ordered(m), u.nodeCount());
        }
    }
}
