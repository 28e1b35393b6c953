package io.qgpu.testkit.contract;
import io.qgpu.api.Claim;
import io.qgpu.api.GpuLink;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Node;
import io.qgpu.api.Placement;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Selectors;
import io.qgpu.json.Inventory;
import io.qgpu.testkit.invariants.CheckedScheduler;
import io.qgpu.testkit.invariants.SchedulerFactory;
import io.qgpu.testkit.invariants.SchedulerUnderTest;
import io.qgpu.testkit.property.ClaimOptions;
import io.qgpu.testkit.property.Describe;
import io.qgpu.testkit.property.Gen;
import io.qgpu.testkit.property.InventoryOptions;
import io.qgpu.testkit.property.QgpuGens;
import io.qgpu.testkit.property.PropertyScenario;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;

/**
 * The hooks a {@link SchedulerContractSuite} implementation fills in, and the helpers its rules share.
 * Not part of the API on its own: extend {@link SchedulerContractSuite}.
 */
abstract class ContractSupport {

    /**
     * A fresh, empty scheduler over these rules and nodes (GPU health as the nodes say). Called at
     * least once per rule and once per property case; each call must return an independent instance.
     */
    protected abstract SchedulerUnderTest createScheduler(GranularityRules rules, List<Node> nodes);

    /** What the scheduler does; the default claims everything. Rules needing anything else are skipped. */
    protected Set<Capability> capabilities() {
        return EnumSet.allOf(Capability.class);
    }

    /** Cases per property rule (default 100). */
    protected int propertyTries() {
        return 100;
    }

    /** Most operations per generated scenario (default 30). */
    protected int maxOperations() {
        return 30;
    }

    // ====================================================================== helpers

    /** {@code Class#method} of the concrete test for a rule method, for failure messages. */
    protected final String ruleName(String method) {
        return getClass().getName() + "#" + method;
    }

    /** The factory the property rules use: {@link #createScheduler}, checked for null. */
    protected final SchedulerFactory factory() {
        return (rules, nodes) -> {
            SchedulerUnderTest s = createScheduler(rules, nodes);
            if (s == null) {
                throw new AssertionError(getClass().getName() + ".createScheduler returned null");
            }
            return s;
        };
    }

    /** Claim options matching {@link #capabilities()}. */
    protected ClaimOptions claimOptions() {
        Set<Capability> caps = capabilities();
        return ClaimOptions.defaults()
                .withMaxGpus(caps.contains(Capability.MULTI_GPU) ? 4 : 1)
                .withPriorities(caps.contains(Capability.PRIORITY_CLASSES)
                        ? List.of(PriorityClass.OFFLINE, PriorityClass.ONLINE) : List.of(PriorityClass.OFFLINE))
                .withLocality(caps.contains(Capability.LOCALITY_LABELS))
                .withHost(caps.contains(Capability.HOST_RESOURCES));
    }

    /** Inventory options matching {@link #capabilities()}. */
    protected InventoryOptions inventoryOptions() {
        return InventoryOptions.defaults().withReservedFor(capabilities().contains(Capability.PRIORITY_CLASSES))
                .withHost(capabilities().contains(Capability.HOST_RESOURCES));
    }

    Gen<PropertyScenario> scenarios() {
        return QgpuGens.scenarios(inventoryOptions(), claimOptions(), maxOperations());
    }

    CheckedScheduler start(Inventory inv) {
        return CheckedScheduler.create(factory(), inv);
    }

    void requires(Capability c, String rule) {
        Assumptions.assumeTrue(capabilities().contains(c), () -> "rule " + rule + " skipped: "
                + getClass().getSimpleName() + " does not declare capability " + c
                + " (add it to capabilities() if the scheduler supports it)");
    }

    static void check(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }

    static Claim gib(String id, int gib) {
        return Claim.builder(id).memoryGiB(gib).build();
    }

    static Claim exclusive(String id, int gpus) {
        return Claim.builder(id).gpus(gpus).exclusive().build();
    }

    /** A whole-GPU claim pinned by UUID to GPU {@code index} of {@code node}. */
    static Claim pinned(String id, Inventory inv, String node, int index) {
        String uuid = inv.nodes().stream().filter(n -> n.name().equals(node)).findFirst().orElseThrow()
                .gpus().get(index).uuid();
        return Claim.builder(id).exclusive().selectors(Selectors.builder().includeUuid(uuid).build()).build();
    }

    /** On a fresh scheduler over the one-node inventory, a k-GPU claim's weakest link is the best possible. */
    void expectBestLinked(Inventory inv, int k) {
        CheckedScheduler s = start(inv);
        Node node = inv.nodes().get(0);
        Placement p = s.placed(Claim.builder("k" + k).gpus(k).memoryGiB(1).build());
        List<Integer> positions = new ArrayList<>();
        for (String u : p.gpuUuids()) {
            positions.add(node.positionOf(u));
        }
        List<Integer> healthy = new ArrayList<>();
        for (int i = 0; i < node.gpus().size(); i++) {
            if (node.gpus().get(i).healthy()) {
                healthy.add(i);
            }
        }
        int best = bestWeakestLink(node, healthy, k, 0, new ArrayList<>());
        int got = weakestLink(node, positions);
        check(got == best, "on an empty " + Describe.node(node) + " a " + k + "-GPU claim got GPUs " + positions
                + " whose weakest link is " + label(node, positions) + "; a set with a stronger weakest link exists"
                + " (link quality " + got + " < " + best + ")");
    }

    void checkAllNvLinked(CheckedScheduler s, Placement p) {
        Node node = s.node(p.nodeName());
        List<Integer> positions = p.gpuUuids().stream().map(node::positionOf).toList();
        for (int i = 0; i < positions.size(); i++) {
            for (int j = i + 1; j < positions.size(); j++) {
                if (!(node.topology().link(positions.get(i), positions.get(j)) instanceof io.qgpu.api.GpuLink.NvLink)) {
                    throw new AssertionError(p.tenantId() + " got GPUs " + positions + " of " + node.name()
                            + ", but GPUs " + positions.get(i) + " and " + positions.get(j) + " are linked by "
                            + node.topology().link(positions.get(i), positions.get(j)).label()
                            + "; a 4-GPU claim fits inside an NVLink quad (0-3 or 4-7)");
                }
            }
        }
    }

    static int bestWeakestLink(Node node, List<Integer> usable, int k, int from, List<Integer> chosen) {
        if (chosen.size() == k) {
            return weakestLink(node, chosen);
        }
        int best = Integer.MIN_VALUE;
        for (int i = from; i < usable.size(); i++) {
            chosen.add(usable.get(i));
            best = Math.max(best, bestWeakestLink(node, usable, k, i + 1, chosen));
            chosen.remove(chosen.size() - 1);
        }
        return best;
    }

    static int weakestLink(Node node, List<Integer> positions) {
        int min = Integer.MAX_VALUE;
        for (int i = 0; i < positions.size(); i++) {
            for (int j = i + 1; j < positions.size(); j++) {
                min = Math.min(min, node.topology().link(positions.get(i), positions.get(j)).quality());
            }
        }
        return min;
    }

    static String label(Node node, List<Integer> positions) {
        String worst = "";
        int min = Integer.MAX_VALUE;
        for (int i = 0; i < positions.size(); i++) {
            for (int j = i + 1; j < positions.size(); j++) {
                int q = node.topology().link(positions.get(i), positions.get(j)).quality();
                if (q < min) {
                    min = q;
                    worst = node.topology().link(positions.get(i), positions.get(j)).label();
                }
            }
        }
        return worst;
    }
}
