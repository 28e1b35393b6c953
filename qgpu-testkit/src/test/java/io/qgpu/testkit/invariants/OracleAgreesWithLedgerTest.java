package io.qgpu.testkit.invariants;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.qgpu.api.Claim;
import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.Slice;
import io.qgpu.json.Inventory;
import io.qgpu.core.ledger.Ledger;
import io.qgpu.core.ledger.ReserveResult;
import io.qgpu.testkit.property.ClaimOptions;
import io.qgpu.testkit.property.InventoryOptions;
import io.qgpu.testkit.property.Op;
import io.qgpu.testkit.property.Property;
import io.qgpu.testkit.property.QgpuGens;
import io.qgpu.testkit.property.PropertyScenario;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Differential test of two independent implementations of the same rules: the testkit's oracle and
 * qgpu's ledger. Along random scenarios, every candidate placement (several GPU sets on every node)
 * is offered to both; the ledger must accept it exactly when the oracle finds no violation in the
 * live set plus the candidate. A disagreement is a bug in one of them, printed with the shrunk case.
 */
class OracleAgreesWithLedgerTest {

    private static final int SETS_PER_NODE = 12;

    @Test
    void theLedgerAcceptsExactlyWhatTheOracleFindsValid() {
        Property.forAll(QgpuGens.scenarios(InventoryOptions.defaults().withReservedFor(true), ClaimOptions.defaults(), 25))
                .tries(150)
                .verify(OracleAgreesWithLedgerTest::agree);
    }

    /**
     * The same with host resources: nodes declare CPU and host memory (or leave them untracked), claims
     * ask for them and some take no GPU. The ledger without its host rule is refused here: the oracle
     * finds the CPU or host memory it oversubscribes ({@link Invariant#HOST}).
     */
    @Test
    void theyAgreeOnHostResources() {
        Property.forAll(QgpuGens.scenarios(InventoryOptions.defaults().withHost(true), ClaimOptions.defaults().withHost(true), 25))
                .tries(80)
                .verify(OracleAgreesWithLedgerTest::agree);
    }

    /**
     * The same on nodes whose devices are all MIG instances (each UUID {@code GPU-...} renamed {@code MIG-...}),
     * under the default rules (one tenant per instance) and with {@code shareMigInstances}. The ledger
     * without its MIG rule is refused here: the oracle finds the shared instance it accepts.
     */
    @Test
    void theyAgreeWhenTheDevicesAreMigInstances() {
        for (GranularityRules rules : List.of(GranularityRules.ofDefaults(), GranularityRules.ofDefaults().toBuilder().shareMigInstances(true).build())) {
            Property.forAll(QgpuGens.scenarios(InventoryOptions.defaults().withRules(rules), ClaimOptions.defaults(), 25)
                            .map(OracleAgreesWithLedgerTest::asMigInstances))
                    .tries(40)
                    .verify(OracleAgreesWithLedgerTest::agree);
        }
    }

    private static PropertyScenario asMigInstances(PropertyScenario s) {
        List<Node> nodes = new ArrayList<>();
        for (Node n : s.inventory().nodes()) {
            List<GpuDevice> gpus = new ArrayList<>();
            for (GpuDevice g : n.gpus()) {
                gpus.add(new GpuDevice("MIG-" + g.uuid().substring("GPU-".length()), g.index(), g.model(), g.memoryBytes(),
                        g.health(), g.numaNode(), g.isolationPolicy(), g.reservedFor()));
            }
            nodes.add(new Node(n.name(), n.labels(), gpus, n.topology()));
        }
        return new PropertyScenario(new Inventory(s.inventory().rules(), nodes), s.ops());
    }

    private static void agree(PropertyScenario s) {
        Inventory inv = s.inventory();
        Ledger ledger = Ledger.create(inv.rules(), inv.nodes());
        Map<String, Placement> live = new LinkedHashMap<>();
        for (Op op : s.ops()) {
            if (op instanceof Op.Release r) {
                ledger.release(r.tenantId());
                live.remove(r.tenantId());
                continue;
            }
            Claim c = ((Op.Place) op).claim();
            Placement keep = null;
            for (Placement candidate : candidates(inv, c)) {
                List<Placement> with = new ArrayList<>(live.values());
                with.add(candidate);
                List<Violation> oracle = PlacementInvariants.check(inv, with);
                ReserveResult ledgerSays = ledger.reserve(candidate);
                boolean accepted = ledgerSays.reserved();
                if (accepted) {
                    ledger.release(c.tenantId());
                }
                boolean valid = oracle.isEmpty();
                assertTrue(valid == accepted, () -> "disagreement on " + candidate.tenantId() + " -> " + candidate.nodeName()
                        + " " + candidate.gpuUuids() + ": oracle " + (valid ? "finds it valid" : "finds " + oracle)
                        + ", ledger " + (accepted ? "accepts it" : "refuses it: " + ((ReserveResult.Refused) ledgerSays).summary()));
                if (valid && keep == null) {
                    keep = candidate;
                }
            }
            if (keep != null) {
                assertTrue(ledger.reserve(keep).reserved());
                live.put(keep.tenantId(), keep);
            }
        }
    }

    /** Up to {@link #SETS_PER_NODE} GPU sets of the claim's size on every node, in lexicographic order. */
    private static List<Placement> candidates(Inventory inv, Claim c) {
        List<Placement> out = new ArrayList<>();
        for (Node n : inv.nodes()) {
            List<List<Integer>> sets = new ArrayList<>();
            subsets(n.gpus().size(), c.gpuCount(), 0, new ArrayList<>(), sets);
            for (List<Integer> set : sets) {
                List<Slice> slices = new ArrayList<>();
                for (int p : set) {
                    GpuDevice g = n.gpus().get(p);
                    slices.add(new Slice(g.uuid(), c.exclusive() ? g.memoryBytes() : c.memoryPerGpuBytes(),
                            c.computeRequest(), c.computeLimit()));
                }
                out.add(new Placement(c, n.name(), slices));
            }
        }
        return out;
    }

    private static void subsets(int n, int k, int from, List<Integer> acc, List<List<Integer>> out) {
        if (out.size() >= SETS_PER_NODE) {
            return;
        }
        if (acc.size() == k) {
            out.add(List.copyOf(acc));
            return;
        }
        for (int i = from; i < n; i++) {
            acc.add(i);
            subsets(n, k, i + 1, acc, out);
            acc.remove(acc.size() - 1);
        }
    }
}
