package io.qgpu.api;

import org.jspecify.annotations.Nullable;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A machine with GPUs: its name, labels, GPUs and the link between every pair of them.
 * The topology is addressed by position in {@link #gpus()}.
 *
 * <pre>{@code
 * Node node = Node.builder("node-a")
 *         .label("pool", "inference")
 *         .gpu(GpuDevice.builder("GPU-a0").index(0).model("Tesla T4").memoryGiB(16).build())
 *         .gpu(GpuDevice.builder("GPU-a1").index(1).model("Tesla T4").memoryGiB(16).build())
 *         .defaultLink(new GpuLink.Pcie(TopologyLevel.HOSTBRIDGE))
 *         .cpuMillis(32_000).hostMemoryGiB(128)          // host resources; leave out to not track them
 *         .build();
 * Node cpuOnly = Node.builder("node-c").cpuMillis(16_000).hostMemoryGiB(64).build();   // no GPUs
 * }</pre>
 *
 * <p><b>Host resources.</b> A node may declare its CPU (millicores) and host memory (bytes); the
 * ledger then never reserves more of either than declared. A resource a node does not declare is
 * <em>not tracked</em> there (not zero): claims' requests for it are recorded but never refused on
 * that node. See {@link HostCapacity}. A node may have no GPUs at all and take host-only claims.
 *
 * @param name     unique node name
 * @param labels   node labels, matched by node selectors
 * @param gpus     the GPUs; UUIDs and indices unique; may be empty
 * @param topology links between every pair, same size as {@code gpus}
 * @param host     CPU and host memory capacity, {@link HostCapacity#untracked()} by default
 *
 * <p>Thread safety: immutable.
 */
public record Node(String name, Map<String, String> labels, List<GpuDevice> gpus, Topology topology,
                   HostCapacity host) {

    public Node {
        Validate.name("node.name", name, Validate.MAX_NAME_LENGTH);
        labels = Validate.labels("node[" + name + "].labels", labels);
        gpus = Validate.list("node[" + name + "].gpus", gpus);
        Validate.notNull("node[" + name + "].topology", topology);
        Validate.notNull("node[" + name + "].host", host);
        if (topology.size() != gpus.size()) {
            throw new InvalidValueException("node[" + name + "].topology.size", topology.size(),
                    "must equal the number of GPUs (" + gpus.size() + ")");
        }
        Set<String> uuids = new HashSet<>();
        Set<Integer> indices = new HashSet<>();
        for (GpuDevice g : gpus) {
            if (!uuids.add(g.uuid())) {
                throw new InvalidValueException("node[" + name + "].gpus.uuid", g.uuid(), "is duplicated");
            }
            if (!indices.add(g.index())) {
                throw new InvalidValueException("node[" + name + "].gpus[" + g.uuid() + "].index", g.index(),
                        "is duplicated");
            }
        }
    }

    /** A node whose host resources are not tracked ({@link HostCapacity#untracked()}). */
    public Node(String name, Map<String, String> labels, List<GpuDevice> gpus, Topology topology) {
        this(name, labels, gpus, topology, HostCapacity.untracked());
    }

    /** Position of the GPU with this UUID in {@link #gpus()}, or -1. */
    public int positionOf(String uuid) {
        for (int i = 0; i < gpus.size(); i++) {
            if (gpus.get(i).uuid().equals(uuid)) {
                return i;
            }
        }
        return -1;
    }

    public Optional<GpuDevice> gpu(String uuid) {
        int p = positionOf(uuid);
        return p < 0 ? Optional.empty() : Optional.of(gpus.get(p));
    }

    /** A copy in which one GPU has another health. */
    public Node withGpuHealth(String uuid, Health health) {
        int p = positionOf(uuid);
        if (p < 0) {
            throw new InvalidValueException("node[" + name + "].gpu", uuid, "no such GPU on this node");
        }
        List<GpuDevice> copy = new ArrayList<>(gpus);
        copy.set(p, gpus.get(p).withHealth(health));
        return new Node(name, labels, copy, topology, host);
    }

    public static Builder builder(String name) {
        return new Builder(name);
    }

    /** Fail-fast builder; links are set by GPU position, pairs left unset take the default link. */
    public static final class Builder {
        private final String name;
        private final Map<String, String> labels = new LinkedHashMap<>();
        private final List<GpuDevice> gpus = new ArrayList<>();
        private final Map<List<Integer>, GpuLink> links = new LinkedHashMap<>();
        private @Nullable GpuLink defaultLink;
        private HostCapacity host = HostCapacity.untracked();

        private Builder(String name) {
            this.name = name;
        }

        public Builder label(String key, String value) {
            labels.put(key, value);
            return this;
        }

        public Builder labels(Map<String, String> all) {
            labels.putAll(all);
            return this;
        }

        public Builder gpu(GpuDevice gpu) {
            gpus.add(gpu);
            return this;
        }

        public Builder gpus(List<GpuDevice> all) {
            gpus.addAll(all);
            return this;
        }

        public Builder link(int a, int b, GpuLink link) {
            links.put(List.of(a, b), link);
            return this;
        }

        public Builder defaultLink(GpuLink link) {
            this.defaultLink = link;
            return this;
        }

        /** Host capacity, both resources at once. */
        public Builder host(HostCapacity capacity) {
            this.host = Validate.notNull("node[" + name + "].host", capacity);
            return this;
        }

        /** CPU capacity in millicores (1000 = one CPU); declares CPU tracked on this node. */
        public Builder cpuMillis(long millis) {
            this.host = host.withCpuMillis(Validate.atLeast("node[" + name + "].host.cpuMillis", millis, 0));
            return this;
        }

        /** Host memory capacity in bytes; declares host memory tracked on this node. */
        public Builder hostMemoryBytes(long bytes) {
            this.host = host.withMemoryBytes(Validate.atLeast("node[" + name + "].host.memoryBytes", bytes, 0));
            return this;
        }

        /** Host memory capacity in GiB. */
        public Builder hostMemoryGiB(long gib) {
            if (gib < 0 || gib > Long.MAX_VALUE / GpuDevice.GIB) {
                throw new InvalidValueException("node[" + name + "].host.memoryGiB", gib, "must be between 0 and 8589934591");
            }
            return hostMemoryBytes(gib * GpuDevice.GIB);
        }

        public Node build() {
            Topology.Builder t = Topology.builder(gpus.size());
            if (defaultLink != null) {
                t.defaultLink(defaultLink);
            }
            links.forEach((pair, link) -> t.link(pair.get(0), pair.get(1), link));
            return new Node(name, labels, gpus, t.build(), host);
        }
    }
}
