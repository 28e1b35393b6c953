package io.qgpu.testkit.machines;

import io.qgpu.api.GpuDevice;
import io.qgpu.api.GranularityRules;
import io.qgpu.api.Health;
import io.qgpu.api.InvalidValueException;
import io.qgpu.api.IsolationPolicy;
import io.qgpu.api.Node;
import io.qgpu.api.PriorityClass;
import io.qgpu.api.Validate;
import io.qgpu.json.Inventory;
import io.qgpu.core.ledger.Ledger;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Builds a cluster of fake machines: N nodes of a type, with labels, an isolation policy, GPUs
 * kept for a priority class and GPUs marked unhealthy. The result is an {@link Inventory} (rules
 * and nodes), which {@link io.qgpu.json.QgpuJson} writes and reads, and which any scheduler
 * under test can be created from.
 *
 * <pre>{@code
 * Inventory inv = FakeCluster.builder()
 *         .rules(GranularityRules.ofDefaults())
 *         .nodes(Machines.DGX_H100, 2, g -> g.prefix("train").label("pool", "train"))
 *         .nodes(Machines.GN7_20XLARGE320, 3, g -> g.isolation(IsolationPolicy.BURST_SHARE))
 *         .unhealthy("train-1", 5)                  // node name, NVML index
 *         .build();
 * inv.nodes().get(0).name();                        // "train-0"
 * inv.nodes().get(2).name();                        // "gn7-4xt4-0"
 * }</pre>
 *
 * <p>Node names are {@code prefix-i}, counted per prefix across calls; GPU UUIDs come from
 * {@link FakeUuids}, so the same builder calls always give equal inventories.
 *
 * <p>Thread safety: a builder is not thread-safe; its result is immutable.
 */
public final class FakeCluster {

    private FakeCluster() {
    }

    public static Builder builder() {
        return new Builder();
    }

    /** One node of each given type, named by its type's name with {@code -0}, with qGPU's default rules. */
    public static Inventory of(MachineType... types) {
        Builder b = builder();
        for (MachineType t : types) {
            b.nodes(t, 1);
        }
        return b.build();
    }

    /** Settings of a group of nodes of one type; see {@link Builder#nodes(MachineType, int, Consumer)}. */
    public static final class Group {
        private final MachineType type;
        private String prefix;
        private final Map<String, String> labels = new LinkedHashMap<>();
        private IsolationPolicy policy = IsolationPolicy.BEST_EFFORT;
        private @Nullable PriorityClass reservedFor;
        private final Set<Integer> unhealthy = new LinkedHashSet<>();
        private io.qgpu.api.HostCapacity host = io.qgpu.api.HostCapacity.untracked();

        private Group(MachineType type) {
            this.type = type;
            this.prefix = type.name();
        }

        /** Node names are {@code prefix-i}; default the type's name. */
        public Group prefix(String p) {
            this.prefix = Validate.notBlank("group.prefix", p);
            return this;
        }

        public Group label(String key, String value) {
            Validate.notBlank("group.label key", key);
            labels.put(key, Validate.notNull("group.label[" + key + "]", value));
            return this;
        }

        public Group labels(Map<String, String> all) {
            Validate.labels("group.labels", all).forEach(this::label);
            return this;
        }

        /** The isolation policy of every GPU in the group (also set as the qGPU policy label). */
        public Group isolation(IsolationPolicy p) {
            this.policy = Validate.notNull("group.isolation", p);
            return this;
        }

        /** Keep every GPU of the group for one priority class. */
        public Group reservedFor(PriorityClass p) {
            this.reservedFor = Validate.notNull("group.reservedFor", p);
            return this;
        }

        /** CPU and host memory of every node of the group; not tracked by default. */
        public Group host(io.qgpu.api.HostCapacity capacity) {
            this.host = Validate.notNull("group.host", capacity);
            return this;
        }

        /** Mark the GPUs with these NVML indices unhealthy on every node of the group. */
        public Group unhealthyGpus(int... indices) {
            for (int i : indices) {
                Validate.between("group[" + prefix + "].unhealthyGpus[]", i, 0, type.gpuCount() - 1);
                unhealthy.add(i);
            }
            return this;
        }
    }

    /** Fail-fast builder: unknown node names, duplicate names and bad indices are refused by name. */
    public static final class Builder {
        private GranularityRules rules = GranularityRules.ofDefaults();
        private final List<Node> nodes = new ArrayList<>();
        private final Map<String, Integer> counters = new HashMap<>();
        private final Map<String, Set<Integer>> unhealthy = new LinkedHashMap<>();

        private Builder() {
        }

        /** Granularity rules of the inventory; default {@link GranularityRules#ofDefaults()}. */
        public Builder rules(GranularityRules r) {
            this.rules = Validate.notNull("cluster.rules", r);
            return this;
        }

        /** {@code count} nodes of {@code type} with default settings. */
        public Builder nodes(MachineType type, int count) {
            return nodes(type, count, g -> { });
        }

        /** {@code count} nodes of {@code type}, configured by {@code settings}. */
        public Builder nodes(MachineType type, int count, Consumer<Group> settings) {
            Validate.notNull("cluster.type", type);
            Validate.between("cluster.nodes[" + type.name() + "].count", count, 0, 100_000);
            Group g = new Group(type);
            Validate.notNull("cluster.settings", settings).accept(g);
            for (int n = 0; n < count; n++) {
                int i = counters.merge(g.prefix, 1, Integer::sum) - 1;
                Node node = type.node(g.prefix + "-" + i, g.policy, g.labels);
                PriorityClass reservedFor = g.reservedFor;
                if (reservedFor != null || !g.unhealthy.isEmpty()) {
                    List<GpuDevice> gpus = new ArrayList<>();
                    for (GpuDevice d : node.gpus()) {
                        GpuDevice.Builder b = GpuDevice.builder(d.uuid()).index(d.index()).model(d.model())
                                .memoryBytes(d.memoryBytes()).numaNode(d.numaNode())
                                .isolationPolicy(d.isolationPolicy())
                                .health(g.unhealthy.contains(d.index()) ? Health.UNHEALTHY : Health.HEALTHY);
                        if (reservedFor != null) {
                            b.reservedFor(reservedFor);
                        }
                        gpus.add(b.build());
                    }
                    node = new Node(node.name(), node.labels(), gpus, node.topology(), node.host());
                }
                if (!g.host.isUntracked()) {
                    node = new Node(node.name(), node.labels(), node.gpus(), node.topology(), g.host);
                }
                node(node);
            }
            return this;
        }

        /** Adds a node built elsewhere (for example from JSON). */
        public Builder node(Node node) {
            Validate.notNull("cluster.node", node);
            for (Node n : nodes) {
                if (n.name().equals(node.name())) {
                    throw new InvalidValueException("cluster.nodes.name", node.name(), "is duplicated");
                }
            }
            nodes.add(node);
            return this;
        }

        /** Marks the GPU with NVML index {@code gpuIndex} on node {@code nodeName} unhealthy. */
        public Builder unhealthy(String nodeName, int gpuIndex) {
            Validate.notBlank("cluster.unhealthy.node", nodeName);
            Validate.atLeast("cluster.unhealthy[" + nodeName + "].gpuIndex", gpuIndex, 0);
            unhealthy.computeIfAbsent(nodeName, k -> new LinkedHashSet<>()).add(gpuIndex);
            return this;
        }

        public Inventory build() {
            List<Node> out = new ArrayList<>(nodes.size());
            Map<String, Set<Integer>> pending = new LinkedHashMap<>(unhealthy);
            for (Node original : nodes) {
                Node n = original;
                Set<Integer> bad = pending.remove(n.name());
                if (bad != null) {
                    for (int index : bad) {
                        GpuDevice gpu = original.gpus().stream().filter(d -> d.index() == index).findFirst()
                                .orElseThrow(() -> new InvalidValueException(
                                        "cluster.unhealthy[" + original.name() + "].gpuIndex", index,
                                        "no GPU with this index on the node (it has " + original.gpus().size() + ")"));
                        n = n.withGpuHealth(gpu.uuid(), Health.UNHEALTHY);
                    }
                }
                out.add(n);
            }
            if (!pending.isEmpty()) {
                throw new InvalidValueException("cluster.unhealthy.node", pending.keySet().iterator().next(),
                        "no such node in the cluster");
            }
            return new Inventory(rules, out);
        }

        /** {@link #build()}, then an empty {@link Ledger} over it. */
        public Ledger buildLedger() {
            Inventory inv = build();
            return Ledger.create(inv.rules(), inv.nodes());
        }
    }
}
