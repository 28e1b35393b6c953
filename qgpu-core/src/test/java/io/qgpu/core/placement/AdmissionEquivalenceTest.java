package io.qgpu.core.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GpuState;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Holding;
import io.qgpu.api.Locality;
import io.qgpu.api.Node;
import io.qgpu.api.NodeState;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Reason;
import io.qgpu.api.ReasonCode;
import io.qgpu.core.ledger.internal.Admission;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The engine's fast admission predicate must agree with the ledger's {@link Admission#checkGpu} on
 * every GPU state and claim, so that what the engine proposes is exactly what the ledger accepts and
 * what it refuses is refused for a reason the ledger would give.
 */
class AdmissionEquivalenceTest {

    private static final long SEED = Long.getLong("qgpu.seed", 20240917L);

    @Test
    void fastPredicateEqualsAdmissionOnRandomStates() {
        SplittableRandom rnd = new SplittableRandom(SEED);
        GranularityRules[] rules = {GranularityRules.ofDefaults(), GranularityRules.hami(),
                GranularityRules.ofDefaults().toBuilder().admitZeroRequestOnBookedGpu(true).build(),
                GranularityRules.ofDefaults().toBuilder().shareMigInstances(true).build()};
        int admitted = 0;
        int refused = 0;
        int migAdmitted = 0;
        int migRefused = 0;
        for (int round = 0; round < 1500; round++) {
            // every third node's devices are MIG instances (UUIDs MIG-n<round>-g<i>); a summary that ignores the
            // MIG rule (maxTenants taken with shareMigInstances on) fails this test at the first MIG node with a tenant
            Node node = Gen.node(rnd, (round % 3 == 0 ? "MIG-n" : "n") + round);
            List<GpuState> states = new ArrayList<>();
            for (GpuDevice d : node.gpus()) {
                states.add(GpuState.of(d, holdings(rnd, d)));
            }
            NodeState ns = new NodeState(node, states);
            GranularityRules r = rules[rnd.nextInt(rules.length)];
            NodeSummary s = NodeSummary.of(ns, null, r);
            for (int c = 0; c < 4; c++) {
                Claim claim = Gen.claim(rnd, "t" + c, List.of(node));
                ClaimShape shape = new ClaimShape(claim, PlacementConfig.defaults(), r);
                int admits = 0;
                for (int i = 0; i < states.size(); i++) {
                    GpuState g = states.get(i);
                    long mem = claim.exclusive() ? g.device().memoryBytes() : claim.memoryPerGpuBytes();
                    boolean expected = Admission.checkGpu(g, claim, mem, r).isEmpty();
                    assertEquals(expected, s.admits(i, shape), () -> "seed " + SEED + " " + g + " " + claim);
                    // the code a refused GPU is counted under is the first reason the ledger gives
                    List<Reason> why = Admission.checkGpu(g, claim, mem, r);
                    assertEquals(expected ? null : why.get(0).code(), s.failure(i, shape),
                            () -> "seed " + SEED + " " + g + " " + claim + " " + why);
                    admits += expected ? 1 : 0;
                    if (expected) {
                        admitted++;
                    } else {
                        refused++;
                    }
                    if (g.device().migInstance()) {
                        migAdmitted += expected ? 1 : 0;
                        migRefused += expected ? 0 : 1;
                    }
                }
                // the node prefilters are conservative: a node with k admissible GPUs always passes both
                if (admits >= claim.gpuCount()) {
                    assertTrue(s.precheck(shape), () -> "precheck rejected a feasible node, seed " + SEED + " " + ns);
                    assertTrue(NodeIndex.fits(s.key(shape.online), shape), () -> "key rejected a feasible node, seed " + SEED);
                    assertEquals(null, NodeIndex.cause(s, shape), () -> "a tier or level key rejected a feasible node, seed " + SEED);
                }
                // a key's cause (the first key, then the tier and level keys) is the summary's cause: a refusal
                // counts a node the same either way
                ReasonCode keyCause = NodeIndex.cause(s, shape);
                if (keyCause != null) {
                    assertEquals(keyCause, s.precheckCause(shape), () -> "seed " + SEED + " " + ns + " " + claim);
                }
                if (s.precheck(shape)) {
                    assertTrue(NodeIndex.fits(s.key(shape.online), shape), "key must accept whatever the precheck accepts");
                }
            }
        }
        assertTrue(admitted > 500 && refused > 500, "both outcomes exercised: " + admitted + "/" + refused);
        assertTrue(migAdmitted > 50 && migRefused > 50, "both outcomes on MIG instances: " + migAdmitted + "/" + migRefused);
    }

    /** Random holdings, not capacity-checked: the predicate must agree even on odd states. */
    private static List<Holding> holdings(SplittableRandom rnd, GpuDevice d) {
        List<Holding> out = new ArrayList<>();
        int n = rnd.nextInt(5);
        String exclusion = rnd.nextInt(3) == 0 ? "team-" + Gen.LABELS[rnd.nextInt(3)] : null;
        for (int i = 0; i < n; i++) {
            boolean exclusive = n == 1 && rnd.nextInt(6) == 0;
            long mem = exclusive ? d.memoryBytes() : (1 + rnd.nextInt(8)) * GpuDevice.GIB;
            int req = exclusive ? 100 : 5 * rnd.nextInt(9);
            Locality l = Locality.of(rnd.nextInt(5) == 0 ? "aff-" + Gen.LABELS[rnd.nextInt(3)] : null,
                    rnd.nextInt(3) == 0 ? "anti-" + Gen.LABELS[rnd.nextInt(3)] : null, exclusion);
            out.add(new Holding(d.uuid() + "-h" + i, rnd.nextBoolean() ? PriorityClass.ONLINE : PriorityClass.OFFLINE, mem,
                    req, exclusive ? 100 : Math.max(req, 50), exclusive, l));
        }
        return out;
    }
}
